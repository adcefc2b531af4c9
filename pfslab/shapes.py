"""Shape references: what a source says about a curve's course, checked over a sweep.

"keeps increasing as the number of threads grows", "scales almost linearly", "peaks at
256 threads and then starts decreasing": claims about how a figure moves across the
points of a sweep, not about one value. A references file lists them under ``shapes``,
each with its source and the thread range it speaks of (``over``):

- ``increasing``: no point falls more than ``tolerance`` below the one before it;
- ``linear``: each point reaches ``min_efficiency`` x (its threads / the first point's)
  x the first point's value;
- ``peak``: no point exceeds the value at ``at`` by more than ``tolerance``, and the
  points up to ``at`` are increasing; with ``then: decreasing``, every point after
  ``at`` is below it and none rises more than ``tolerance`` over the one before.

A claim about 1 to 1024 threads cannot be judged on a sweep that did not reach both
ends (quick mode): that is NO VERDICT, with the points that ran, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from pfslab import reference_file

SHAPES: tuple[str, ...] = ("increasing", "linear", "peak")
_KEYS = {"workload", "operation", "shape", "over", "at", "then", "tolerance", "min_efficiency", "mode", "source"}
#: What judge() answers.
PASS, FAIL, NO_VERDICT = "pass", "fail", "no verdict"


@dataclass(frozen=True)
class Shape:
    workload: str
    operation: str
    shape: str
    over: tuple[int, int]  # the threads (ranks) the claim speaks of, both ends included
    tolerance: float  # the relative wobble a point may show against the claim
    source: dict[str, Any]
    at: int | None = None  # peak: where
    then_decreasing: bool = False  # peak: "and then starts decreasing"
    min_efficiency: float | None = None  # linear
    mode: str | None = None

    def claim(self) -> str:
        """The claim in a few words, for verdict rows."""
        span = f"{self.over[0]} to {self.over[1]} threads"
        if self.shape == "linear":
            return f"linear over {span} (efficiency >= {self.min_efficiency:g})"
        if self.shape == "peak":
            return f"peak at {self.at} threads{', then decreasing' if self.then_decreasing else ''} ({span})"
        return f"increasing over {span}"


@lru_cache(maxsize=1)
def default_tolerance() -> float:
    """policy.yaml ``shape.tolerance``: the one place the margin of a shape is written."""
    value = float(yaml.safe_load(reference_file.POLICY_PATH.read_text())["shape"]["tolerance"])
    if not 0 <= value < 1:
        raise reference_file.ReferenceError(
            f"{reference_file.POLICY_PATH.name}: shape.tolerance {value} is not in [0, 1)")
    return value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def entry(raw: Any, where: str) -> Shape:
    """One ``shapes`` entry, validated; a bad one raises a one-line ReferenceError."""
    err = reference_file.ReferenceError
    if not isinstance(raw, dict):
        raise err(f"{where}: a shape is a mapping with workload, operation, shape, over and source")
    extra = sorted(set(raw) - _KEYS)
    if extra:
        raise err(f"{where}: unknown field {extra[0]!r}; allowed: {', '.join(sorted(_KEYS))}")
    for key in ("workload", "operation", "shape", "over", "source"):
        if key not in raw:
            raise err(f"{where}: missing {key!r}")
    named = f"{where} ({raw['workload']} {raw['operation']})"
    if raw["shape"] not in SHAPES:
        raise err(f"{named}: shape {raw['shape']!r} is not allowed; allowed: {', '.join(SHAPES)}")
    if not reference_file.has_source(raw["source"]):
        raise err(f"{named}: a shape needs a source with a document and where/quote")
    over = raw["over"]
    ends = [_int(x) for x in over] if isinstance(over, list) and len(over) == 2 else [None]
    low, high = (ends[0] or 0, ends[-1] or 0)
    if None in ends or low >= high:
        raise err(f"{named}: over {over!r} is not allowed; allowed: [first, last] thread counts, first < last")
    tolerance = raw.get("tolerance", default_tolerance())
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise err(f"{named}: tolerance {tolerance!r} is not allowed; allowed: a fraction in [0, 1) (0.1: 10 %)")
    at, eff, then = _int(raw.get("at")), raw.get("min_efficiency"), raw.get("then")
    if raw["shape"] == "peak":
        if at is None or not low <= at <= high:
            raise err(f"{named}: a peak needs 'at', a thread count within over {over}, not {raw.get('at')!r}")
        if then not in (None, "decreasing"):
            raise err(f"{named}: then {then!r} is not allowed; allowed: decreasing (or leave it out)")
    elif "at" in raw or then is not None:
        raise err(f"{named}: 'at' and 'then' belong to a peak, not to shape {raw['shape']}")
    if raw["shape"] == "linear":
        if isinstance(eff, bool) or not isinstance(eff, (int, float)) or not 0 < eff <= 1:
            raise err(f"{named}: linear needs min_efficiency in (0, 1], not {eff!r}")
    elif eff is not None:
        raise err(f"{named}: min_efficiency belongs to shape linear, not {raw['shape']}")
    return Shape(str(raw["workload"]), str(raw["operation"]), str(raw["shape"]), (low, high), float(tolerance),
                 raw["source"], at=at, then_decreasing=then == "decreasing",
                 min_efficiency=None if eff is None else float(eff), mode=raw.get("mode"))


def load(lab: str, path: Path | None = None) -> list[Shape]:
    """The shapes of a lab's references file (empty when it has none)."""
    path = path or reference_file.path_for(lab)
    if not path.is_file():
        return []
    raw = reference_file.document(lab, path).get("shapes") or []
    if not isinstance(raw, list):
        raise reference_file.ReferenceError(f"{path.name}: 'shapes' must be a list")
    return [entry(item, f"{path.name}: shapes[{i}]") for i, item in enumerate(raw)]


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _rises(points: list[tuple[int, float]], tolerance: float) -> list[str]:
    """Each step where a point falls more than the tolerance below the one before."""
    return [f"{x0} -> {x1} threads: {_fmt(v0)} -> {_fmt(v1)} ({(v1 / v0 - 1) * 100:+.0f} %)"
            for (x0, v0), (x1, v1) in zip(points, points[1:]) if v1 < v0 * (1 - tolerance)]


def judge(shape: Shape, measured: list[tuple[int, float]]) -> tuple[str, str]:
    """(pass | fail | no verdict, why) for the curve's (threads, value) points."""
    points = sorted((x, v) for x, v in measured if shape.over[0] <= x <= shape.over[1])
    xs = [x for x, _ in points]
    needed = {shape.over[0], shape.over[1]} | ({shape.at} if shape.at else set())
    gaps = [f"at {n} threads" for n in sorted(needed) if n not in xs]
    if shape.then_decreasing and shape.at is not None and not any(x > shape.at for x in xs):
        gaps.append(f"after {shape.at} threads")
    if gaps:
        ran = ", ".join(str(x) for x, _ in sorted(measured)) or "none"
        return NO_VERDICT, f"the claim speaks of {shape.claim()}; the run has no point {' or '.join(gaps)} (points: {ran})"
    tol = shape.tolerance
    if shape.shape == "increasing":
        broken = _rises(points, tol)
    elif shape.shape == "linear":
        (x0, v0), eff = points[0], shape.min_efficiency or 1.0
        broken = [f"{x} threads: {_fmt(v)}, {v / v0 / (x / x0):.2f} of linear from {x0} threads (needs {eff:g})"
                  for x, v in points[1:] if v < eff * v0 * x / x0]
    else:
        top = dict(points)[shape.at or 0]
        broken = [f"{x} threads: {_fmt(v)} above the peak's {_fmt(top)} at {shape.at}"
                  for x, v in points if v > top * (1 + tol)]
        broken += _rises([p for p in points if p[0] <= (shape.at or 0)], tol)
        if shape.then_decreasing:
            after = [p for p in points if p[0] >= (shape.at or 0)]
            broken += [f"{x} threads: {_fmt(v)} not below the peak's {_fmt(top)}" for x, v in after[1:] if v >= top]
            broken += [f"{x0} -> {x1} threads: rises {_fmt(v0)} -> {_fmt(v1)}"
                       for (x0, v0), (x1, v1) in zip(after[1:], after[2:]) if v1 > v0 * (1 + tol)]
    if broken:
        return FAIL, f"not {shape.claim()}: " + "; ".join(broken)
    return PASS, f"{shape.claim()}, within {tol * 100:g} % ({len(points)} points)"

