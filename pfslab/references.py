"""Reference values: what a lab is expected to reach, and where each number comes from.

``reframe/references/<lab>.yaml`` lists every reference of a lab with its provenance;
``reframe/references/policy.yaml`` is the one statement of the tolerance policy. A
reference without a source is an error: a number nobody can trace is not a verdict.

The file may also hold ``notes``: what a source states that is not a figure a run can
be held to (relative claims such as "2.13 times the previous release", theoretical
limits, capacities, "the study publishes figures only"). They are kept with their
source for reports and readers, never compared; a note without a source is an error
too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from pfslab import shapes
# The file's reading, shared with shapes, is pfslab/reference_file.py; its names stay
# reachable here (references.POLICY_PATH, references.ReferenceError, ...) for the callers.
from pfslab.reference_file import POLICY_PATH, REFERENCES_DIR, ReferenceError, document, has_source, path_for
from pfslab.units import KNOWN_UNITS, higher_is_better

__all__ = ["POLICY_PATH", "REFERENCES_DIR", "ReferenceError", "path_for"]
#: peak, sustained, floor: published values of a curve's maximum, its plateau, the
#: value its plateau never drops below; start: a published value at one thread count
#: that is not a maximum (a curve's first point); baseline: measured by `make baseline`;
#: derived: from the lab's hardware. policy.yaml gives each its tolerance and, for those
#: that may hold over a whole sweep, the rule that checks them there.
KINDS: tuple[str, ...] = ("peak", "sustained", "floor", "start", "baseline", "derived")
#: How a sweep reference is checked (policy.yaml `sweep`): the values a rule may take.
SWEEP_RULES: tuple[str, ...] = ("max", "plateau-median", "plateau-every")
#: Kinds a references file may not hold: made on the spot from the lab's own probes.
COMPUTED_KINDS: tuple[str, ...] = ("calibrated",)


@dataclass(frozen=True)
class Reference:
    workload: str
    operation: str
    threads: int | None  # None: holds for every thread count (a plateau, a derived limit)
    nodes: int | None  # for nodes x processes sweeps: the client nodes; None otherwise
    value: float
    unit: str
    kind: str
    mode: str | None  # the mode whose sizes the value belongs to; None: any
    lower: float | None
    upper: float | None
    source: dict[str, Any]
    noise: float | None = None  # relative robust spread, for baselines
    machine: str | None = None  # baselines: the fingerprint of the machine they were measured on

    def bounds(self) -> tuple[float | None, float | None]:
        return self.lower, self.upper


TOLERANCE_ALLOWED = ("allowed: a mapping with lower in [-1, 0] or null and upper >= 0 or null, not both null "
                     "(lower -0.10: at least 90 % of the value)")


def _finite(x: Any) -> float | None:
    """x as a finite number; None for anything else (text, booleans, .nan, .inf)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _tolerance(raw: Any, where: str) -> tuple[float | None, float | None]:
    """(lower, upper) of a tolerance, relative to the reference's value. A lower bound
    below -1 would pass a value of 0, and no bound at all passes everything."""
    if not isinstance(raw, dict) or set(raw) - {"lower", "upper"}:
        raise ReferenceError(f"{where}: tolerance {raw!r} is not allowed; {TOLERANCE_ALLOWED}")
    bounds: list[float | None] = []
    for key in ("lower", "upper"):
        given = raw.get(key)
        bound = _finite(given)
        if given is not None and (bound is None or (key == "lower" and not -1 <= bound <= 0)
                                  or (key == "upper" and bound < 0)):
            raise ReferenceError(f"{where}: tolerance {key} {given!r} is not allowed; {TOLERANCE_ALLOWED}")
        bounds.append(bound)
    if bounds == [None, None]:
        raise ReferenceError(f"{where}: tolerance {raw!r} bounds nothing, so every value would pass; "
                             f"{TOLERANCE_ALLOWED}")
    return bounds[0], bounds[1]


@lru_cache(maxsize=1)
def policy() -> dict[str, dict[str, float | None]]:
    data = yaml.safe_load(POLICY_PATH.read_text())
    kinds: dict[str, dict[str, float | None]] = data["kinds"]
    missing = set(KINDS) - set(kinds)
    if missing:
        raise ReferenceError(f"{POLICY_PATH.name}: no tolerance for kind(s) {', '.join(sorted(missing))}")
    for kind, tolerance in kinds.items():
        _tolerance(tolerance, f"{POLICY_PATH.name}: kinds.{kind}")
    return kinds


@lru_cache(maxsize=1)
def sweep_rules() -> dict[str, str]:
    """Kind -> how a reference of that kind without a thread count is checked over a sweep."""
    rules: dict[str, str] = yaml.safe_load(POLICY_PATH.read_text())["sweep"]
    for kind, rule in rules.items():
        if kind not in KINDS or rule not in SWEEP_RULES:
            raise ReferenceError(f"{POLICY_PATH.name}: sweep rule {kind}: {rule} is not one of "
                                 f"kinds {', '.join(KINDS)} with rules {', '.join(SWEEP_RULES)}")
    return rules


@dataclass(frozen=True)
class Note:
    """A sourced statement that is not a reference (a relative claim, a limit, a capacity)."""

    text: str
    source: dict[str, Any]


def _entry(raw: dict[str, Any], where: str) -> Reference:
    for key in ("workload", "operation", "value", "unit", "kind"):
        if key not in raw:
            raise ReferenceError(f"{where}: missing {key!r}")
    source = raw.get("source")
    if not has_source(source):
        raise ReferenceError(f"{where}: a reference needs a source with a document and where/quote")
    if raw["unit"] not in KNOWN_UNITS:
        raise ReferenceError(f"{where}: unit {raw['unit']!r} is unknown; known: {', '.join(KNOWN_UNITS)}")
    if raw["kind"] not in KINDS:
        raise ReferenceError(f"{where}: kind {raw['kind']!r} is not one of {', '.join(KINDS)}")
    at = f" at {raw['threads']} threads" if raw.get("threads") is not None else ""
    named = f"{where} ({raw['workload']} {raw['operation']}{at})"
    value = _finite(raw["value"])
    if value is None or value <= 0:
        raise ReferenceError(f"{named}: value must be a finite number > 0, not {raw['value']!r}")
    noise = raw.get("noise")
    if noise is not None and ((n := _finite(noise)) is None or n < 0):
        raise ReferenceError(f"{named}: noise must be a finite number >= 0, not {noise!r}")
    if raw.get("tolerance") is not None:
        lower, upper = _tolerance(raw["tolerance"], named)
    else:
        lower, upper = _tolerance(policy()[raw["kind"]], f"{POLICY_PATH.name}: kinds.{raw['kind']}")
    if not higher_is_better(raw["unit"]) and "tolerance" not in raw:
        lower, upper = (None if upper is None else -upper), (None if lower is None else -lower)
    threads, nodes = raw.get("threads"), raw.get("nodes")
    rule = sweep_rules().get(raw["kind"])
    if threads is None and rule is None:
        raise ReferenceError(f"{where}: kind {raw['kind']!r} holds at one thread count: give 'threads' "
                             f"(kinds that may hold over a sweep: {', '.join(sweep_rules())})")
    if threads is not None and rule == "plateau-every":
        raise ReferenceError(f"{where}: kind {raw['kind']!r} holds for every point of the plateau: "
                             f"it takes no 'threads' (for a value at {threads} threads use 'peak' or 'start')")
    if rule == "plateau-every" and not higher_is_better(raw["unit"]):
        raise ReferenceError(f"{where}: kind {raw['kind']!r} is a lower bound; unit {raw['unit']!r} is a time, "
                             "where lower is better")
    return Reference(
        workload=str(raw["workload"]),
        operation=str(raw["operation"]),
        threads=None if threads is None else int(threads),
        nodes=None if nodes is None else int(nodes),
        value=value,
        unit=str(raw["unit"]),
        kind=str(raw["kind"]),
        mode=raw.get("mode"),
        lower=lower,
        upper=upper,
        source=source,
        noise=None if raw.get("noise") is None else float(raw["noise"]),
        machine=None if raw.get("machine") is None else str(raw["machine"]),
    )


def _note(raw: Any, where: str) -> Note:
    if not isinstance(raw, dict):
        raise ReferenceError(f"{where}: a note is a mapping with 'text' and 'source', not {type(raw).__name__}")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ReferenceError(f"{where}: missing 'text'")
    source = raw.get("source")
    if not has_source(source):
        raise ReferenceError(f"{where}: a note needs a source with a document and where/quote")
    return Note(text=text.strip(), source=source)


def load(lab: str, path: Path | None = None) -> list[Reference]:
    """All references of a lab (empty when it has no references file). Notes are validated too."""
    path = path or path_for(lab)
    if not path.is_file():
        return []
    data = document(lab, path)
    entries = data.get("references") or []
    refs = [_entry(raw, f"{path.name}: references[{i}]") for i, raw in enumerate(entries)]
    _notes(data, path)
    shapes.load(lab, path)  # validated with the rest of the file
    return refs


def _notes(data: dict[str, Any], path: Path) -> list[Note]:
    return [_note(raw, f"{path.name}: notes[{i}]") for i, raw in enumerate(data.get("notes") or [])]


def notes(lab: str, path: Path | None = None) -> list[Note]:
    """The sourced notes of a lab's references file (empty when it has none)."""
    path = path or path_for(lab)
    if not path.is_file():
        return []
    return _notes(document(lab, path), path)


def applies_here(ref: Reference, machine_id: str | None) -> bool:
    """A baseline holds only on the machine it was measured on (one that names none holds
    nowhere); published and derived values hold anywhere."""
    return ref.kind != "baseline" or (ref.machine is not None and ref.machine == machine_id)


def lookup(
    refs: list[Reference], workload: str, operation: str, threads: int, mode: str, nodes: int | None = None,
    machine_id: str | None = None,
) -> Reference | None:
    """The reference for one figure at one sweep point, if the lab has one (on this machine)."""
    matching = [
        r for r in refs
        if r.workload == workload and r.operation == operation and (r.mode in (None, mode))
        and applies_here(r, machine_id)
    ]
    exact = [r for r in matching if r.threads == threads and r.nodes == nodes]
    # A reference without a thread count describes a whole sweep (a plateau, a
    # hardware limit): it is checked over the sweep (pfslab.sweeps), not per test,
    # where it would fail every small thread count.
    return exact[0] if exact else None


def sweep_references(refs: list[Reference], workload: str, operation: str, mode: str,
                     machine_id: str | None = None) -> list[Reference]:
    """References that hold for a workload's whole sweep (no thread count)."""
    return [
        r for r in refs
        if r.workload == workload and r.operation == operation and r.threads is None and r.mode in (None, mode)
        and applies_here(r, machine_id)
    ]


def elsewhere(refs: list[Reference], workload: str, operation: str, threads: int, mode: str,
              nodes: int | None, machine_id: str | None) -> Reference | None:
    """A baseline for this point that was measured on another machine (so it does not apply)."""
    return next((r for r in refs if r.kind == "baseline" and r.workload == workload and r.operation == operation
                 and r.threads == threads and r.nodes == nodes and r.mode in (None, mode)
                 and not applies_here(r, machine_id)), None)


def basis(ref: Reference) -> str:
    """Where a reference comes from, in one line, for the verdict and the report."""
    src = ref.source
    if ref.kind == "calibrated":
        return str(src.get("where", "calibrated"))
    if ref.kind == "baseline":
        on = f" on machine {ref.machine}" if ref.machine else ""
        return f"baseline{on}: {src.get('where', '')}".rstrip(": ")
    where = src.get("where") or src.get("section") or ""
    return f"{ref.kind}: {src.get('document')}{', ' + str(where) if where else ''}"


def published_points(refs: list[Reference], workload: str, operation: str) -> list[tuple[int, float]]:
    """The values a references file publishes at given thread counts for one figure
    (peaks and starts): the source's own curve, as far as it prints one."""
    return sorted((r.threads, r.value) for r in refs if r.workload == workload and r.operation == operation
                  and r.threads is not None and r.nodes is None and r.kind in ("peak", "start"))
