"""What changed between two runs, per workload, sweep point and figure, noise included.

Each run's figures come from its session in ReFrame's results database
(:mod:`pfslab.sessions`); a run without a stored session (made before storage was on,
or on a remote lab's login node) is read from its report.json, and a line says so.
ReFrame's own ``--performance-compare`` is not the judge: it joins the two sessions
on tests both ran (so a figure only one run has disappears), rounds the difference
to 0.01 % and keys figures by unit, with no noise and no threads.

A difference counts only when it exceeds k times the figure's noise: the relative
robust spread its baseline measured, else the policy's default
(``reframe/references/policy.yaml``, section ``compare``).
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from pfslab import references, runs, sessions
from pfslab.units import convert, higher_is_better


@dataclass
class Change:
    workload: str
    point: str
    figure: str
    unit: str
    a: float | None
    b: float | None
    relative: float | None
    noise: float
    verdict: str  # better | worse | within noise | only in A | only in B


def read_stored(run_a: runs.Run, run_b: runs.Run) -> list[str]:
    """Attach each run's stored session; one line per run saying where its figures come from."""
    compared = (run_a, run_b)
    uuids = [run.session_uuid for run in compared]
    db = sessions.database()
    try:
        stored = sessions.fetch([u for u in uuids if u])
        problem = ""
    except sessions.SessionError as err:
        stored, problem = {}, str(err)
    lines = []
    for label, run, uuid in zip("AB", compared, uuids):
        if uuid and uuid in stored:
            run.session = stored[uuid]
            lines.append(f"{label}'s figures: ReFrame session {uuid} in {db}")
        else:
            why = problem or (f"no ReFrame session {uuid} in {db}" if uuid else "no ReFrame session recorded")
            lines.append(f"{label}'s figures: {why}; read from its report.json")
    return lines


def compare(run_a: runs.Run, run_b: runs.Run) -> list[Change]:
    policy = yaml.safe_load(references.POLICY_PATH.read_text())["compare"]
    noise_of = {(r.workload, r.operation, r.threads): r.noise for r in run_b.references if r.noise is not None}
    rows_a = {(r.workload, r.point, r.figure): r for r in run_a.test_rows() if r.measured is not None}
    rows_b = {(r.workload, r.point, r.figure): r for r in run_b.test_rows() if r.measured is not None}
    out: list[Change] = []
    for key in sorted(set(rows_a) | set(rows_b)):
        ra, rb = rows_a.get(key), rows_b.get(key)
        unit = (rb or ra).unit  # type: ignore[union-attr]
        a = convert(ra.measured or 0.0, ra.unit, unit) if ra else None
        b = convert(rb.measured or 0.0, rb.unit, unit) if rb else None
        threads = (rb or ra).threads  # type: ignore[union-attr]
        noise = noise_of.get((key[0], key[2], threads)) or float(policy["default_noise"])
        if a is None or b is None:
            out.append(Change(*key, unit, a, b, None, noise, "only in B" if a is None else "only in A"))
            continue
        relative = (b - a) / a if a else 0.0
        if abs(relative) <= float(policy["k"]) * noise:
            verdict = "within noise"
        else:
            verdict = "better" if (relative > 0) == higher_is_better(unit) else "worse"
        out.append(Change(*key, unit, a, b, relative, noise, verdict))
    return out


def table(changes: list[Change], name_a: str, name_b: str, sources: list[str] | None = None) -> str:
    lines = [f"A = {name_a}", f"B = {name_b}", *(sources or []), ""]
    header = ["workload", "threads", "figure", "A", "B", "change", "noise", "verdict"]
    body = [[c.workload, c.point, c.figure,
             f"{c.a:.4g} {c.unit}" if c.a is not None else "-",
             f"{c.b:.4g} {c.unit}" if c.b is not None else "-",
             f"{c.relative:+.1%}" if c.relative is not None else "-",
             f"{c.noise:.1%}", c.verdict] for c in changes]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    for r in [header, *body]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    counts = {v: sum(1 for c in changes if c.verdict == v) for v in ("better", "worse", "within noise")}
    lines.append(f"{counts['worse']} worse, {counts['better']} better, {counts['within noise']} within noise")
    return "\n".join(lines)
