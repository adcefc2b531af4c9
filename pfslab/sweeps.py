"""Checks over a whole sweep: published peaks and plateaus, hardware-derived limits.

A reference without a thread count describes a sweep, not a point: "peak read
24.8 GB/s" is the best point of the curve, "sustained 23.8 GB/s" its plateau. These
are checked here, after the run, on the curve the run measured
(``reframe/references/policy.yaml``, section ``sweep``, says how).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from pfslab import derive, references
from pfslab.units import convert, kind_of
from pfslab.verdict import Row

SEQUENTIAL = frozenset({"seq-nn", "seq-n1"})


def _points(rows: list[Row]) -> dict[tuple[str, str, str], list[Row]]:
    """Measured rows grouped by (test, workload, figure), in sweep order."""
    grouped: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row.measured is not None and row.point != "sweep":
            grouped[(row.test, row.workload, row.figure)].append(row)
    for series in grouped.values():
        series.sort(key=lambda r: (r.threads or 0, r.point))
    return grouped


def _measure(series: list[Row], kind: str, unit: str) -> tuple[float, str]:
    values = [convert(r.measured or 0.0, r.unit, unit) for r in series]
    best = max(range(len(values)), key=lambda i: values[i])
    if kind == "sustained":
        plateau = values[best:]
        return statistics.median(plateau), f"median of {len(plateau)} points from {series[best].point} threads on"
    return values[best], f"best point, at {series[best].point} threads"


def _row(series: list[Row], label: str, measured: float, unit: str, ref: float, lower: float | None,
         upper: float | None, how: str) -> Row:
    low_ok = lower is None or measured >= ref * (1 + lower)
    high_ok = upper is None or measured <= ref * (1 + upper)
    verdict = "pass" if low_ok and high_ok else "fail"
    bound = f">= {ref * (1 + lower):.4g}" if lower is not None else f"<= {ref * (1 + (upper or 0)):.4g}"
    reason = how if verdict == "pass" else f"{how}: outside {bound} {unit}"
    first = series[0]
    return Row(first.test, first.workload, None, "sweep", label, measured, unit, ref, lower, upper, verdict, reason)


def check(rows: list[Row], lab: dict[str, Any], refs: list[references.Reference], mode: str,
          workload_patterns: dict[str, str], machine_id: str | None = None) -> list[Row]:
    """Sweep rows: one per sweep reference, or per derived limit where the figure has no reference at all."""
    out: list[Row] = []
    derivations = derive.derive(lab)
    for (_, workload, figure), series in sorted(_points(rows).items()):
        sweep_refs = references.sweep_references(refs, workload, figure, mode, machine_id)
        for ref in sweep_refs:
            if kind_of(ref.unit) != kind_of(series[0].unit):
                continue
            measured, how = _measure(series, ref.kind, ref.unit)
            out.append(_row(series, f"{figure} ({ref.kind})", measured, ref.unit, ref.value, ref.lower, ref.upper, how))
        has_any = sweep_refs or any(r.workload == workload and r.operation == figure
                                    and references.applies_here(r, machine_id) for r in refs)
        if has_any or workload_patterns.get(workload) not in SEQUENTIAL or figure not in derivations:
            continue
        derivation = derivations[figure]
        measured, how = _measure(series, "peak", "GB/s")
        out.append(_row(series, f"{figure} (derived)", measured, "GB/s", derivation.threshold_gbps, 0.0, None,
                        f"{how}; derived: {derivation.lines[-2]}"))
    return out
