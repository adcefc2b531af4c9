"""Checks over a whole sweep: published peaks, plateaus and floors, hardware-derived limits.

A reference without a thread count describes a sweep, not a point: "peak read
24.8 GB/s" is the best point of the curve, "sustained 23.8 GB/s" its plateau, "does
not drop below 440K op/s" a floor under every point of the plateau. These are checked
here, after the run, on the curve the run measured, by the rule of their kind
(``reframe/references/policy.yaml``, section ``sweep``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from pfslab import derive, references, shapes
from pfslab.units import convert, kind_of
from pfslab.verdict import Row


def _points(rows: list[Row]) -> dict[tuple[str, str, str], list[Row]]:
    """Measured rows grouped by (test, workload, figure), in sweep order."""
    grouped: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row.measured is not None and row.point != "sweep":
            grouped[(row.test, row.workload, row.figure)].append(row)
    for series in grouped.values():
        series.sort(key=lambda r: (r.threads or 0, r.point))
    return grouped


def _bound(ref: float, lower: float | None, upper: float | None) -> tuple[float | None, float | None]:
    return (None if lower is None else ref * (1 + lower)), (None if upper is None else ref * (1 + upper))


def _row(series: list[Row], label: str, measured: float, unit: str, ref: float, lower: float | None,
         upper: float | None, how: str, basis: str = "", derivation: list[str] | None = None) -> Row:
    low, high = _bound(ref, lower, upper)
    low_ok = low is None or measured >= low
    high_ok = high is None or measured <= high
    verdict = "pass" if low_ok and high_ok else "fail"
    bound = f">= {low:.4g}" if low is not None else f"<= {high or 0:.4g}"
    reason = how if verdict == "pass" else f"{how}: outside {bound} {unit}"
    first = series[0]
    return Row(first.test, first.workload, None, "sweep", label, measured, unit, ref, lower, upper, verdict, reason,
               basis, list(derivation or []))


def _rule(series: list[Row], ref: references.Reference) -> Row:
    """One sweep reference checked by its kind's rule (policy.yaml `sweep`)."""
    values = [convert(r.measured or 0.0, r.unit, ref.unit) for r in series]
    best = max(range(len(values)), key=lambda i: values[i])
    plateau = list(zip(series[best:], values[best:]))
    rule = references.sweep_rules()[ref.kind]
    label, basis = f"{series[0].figure} ({ref.kind})", references.basis(ref)
    if rule == "plateau-median":
        measured = statistics.median(v for _, v in plateau)
        how = f"median of {len(plateau)} points from {series[best].point} threads on"
    elif rule == "plateau-every":
        # "Does not drop below X": the statement holds for each point after the peak, so the
        # row shows the lowest and, when it fails, names every point under the bound.
        low, _ = _bound(ref.value, ref.lower, ref.upper)
        lowest = min(range(len(plateau)), key=lambda i: plateau[i][1])
        measured = plateau[lowest][1]
        how = (f"every one of {len(plateau)} points from {series[best].point} threads on; "
               f"lowest at {plateau[lowest][0].point} threads")
        under = [(r.point, v) for r, v in plateau if low is not None and v < low]
        if under:
            named = ", ".join(f"{point} threads: {v:.4g} {ref.unit}" for point, v in under)
            row = _row(series, label, measured, ref.unit, ref.value, ref.lower, ref.upper, how, basis)
            row.reason = f"{len(under)} of {len(plateau)} plateau points under >= {low:.4g} {ref.unit}: {named}"
            return row
    else:  # max
        measured, how = values[best], f"best point, at {series[best].point} threads"
    return _row(series, label, measured, ref.unit, ref.value, ref.lower, ref.upper, how, basis)


def shape_rows(rows: list[Row], claims: list[shapes.Shape], mode: str) -> list[Row]:
    """One row per shape claim of a measured figure: pass, fail (naming the points that
    break it) or no verdict (the sweep did not reach the range the claim speaks of)."""
    out = []
    for (test, workload, figure), series in sorted(_points(rows).items()):
        for claim in claims:
            if claim.workload != workload or claim.operation != figure or claim.mode not in (None, mode):
                continue
            points = [(r.threads, r.measured or 0.0) for r in series if r.threads is not None]
            verdict, reason = shapes.judge(claim, points)
            src = claim.source
            basis = f"shape: {src.get('document')}, {src.get('where') or src.get('section', '')}"
            out.append(Row(test, workload, None, "sweep", f"{figure} (shape)", None, series[0].unit, None, None, None,
                           verdict, reason, basis))
    return out


def check(rows: list[Row], lab: dict[str, Any], refs: list[references.Reference], mode: str,
          workload_patterns: dict[str, str], machine_id: str | None = None,
          claims: list[shapes.Shape] | None = None) -> list[Row]:
    """Sweep rows: one per sweep reference and shape claim, or per derived limit where the
    figure has no reference at all."""
    out: list[Row] = shape_rows(rows, claims or [], mode)
    derivations = derive.derive(lab)
    tolerance = references.policy()["derived"]
    for (_, workload, figure), series in sorted(_points(rows).items()):
        sweep_refs = references.sweep_references(refs, workload, figure, mode, machine_id)
        for ref in sweep_refs:
            if kind_of(ref.unit) != kind_of(series[0].unit):
                continue
            out.append(_rule(series, ref))
        has_any = sweep_refs or any(r.workload == workload and r.operation == figure
                                    and references.applies_here(r, machine_id) for r in refs)
        # Only patterns the policy has an efficiency for are derived (policy.yaml `efficiency`).
        derivation = derivations.get(workload_patterns.get(workload, ""), {}).get(figure)
        if has_any or derivation is None or kind_of(series[0].unit) != "bandwidth":
            continue
        values = [convert(r.measured or 0.0, r.unit, "GB/s") for r in series]
        best = max(range(len(values)), key=lambda i: values[i])
        out.append(_row(series, f"{figure} (derived)", values[best], "GB/s", derivation.threshold_gbps,
                        tolerance["lower"], tolerance["upper"], f"best point, at {series[best].point} threads",
                        f"derived: {derivation.summary()}", derivation.lines))
    return out
