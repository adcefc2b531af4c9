"""The verdict of a run: one row per figure, from ReFrame's JSON report.

A figure passes only when its test ran, exited 0, wrote a complete output and met
its reference. A figure without a reference is reported as such, never as a pass;
a skipped test says why.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pfslab.workloads import parse_case_name, tool_test
from pfslab.errors import KitError


class ReportError(KitError, ValueError):
    """The run directory holds no usable ReFrame report."""


@dataclass
class Row:
    test: str
    workload: str
    threads: int | None  # ranks in all; with nodes, nodes x processes per node
    point: str  # the sweep point as labelled: "4" threads, or "8x4" nodes x processes
    figure: str
    measured: float | None
    unit: str
    reference: float | None
    lower: float | None
    upper: float | None
    verdict: str  # pass | fail | skip | no reference | dry run | no verdict (a shape the sweep cannot judge)
    reason: str
    basis: str = ""  # where the threshold comes from (or why there is none)
    derivation: list[str] = field(default_factory=list)  # a hardware-derived threshold's lines (pfslab.derive)

    def bound(self) -> float | None:
        """The value the figure had to reach (or stay under, for times): the verdict's line."""
        if self.reference is None:
            return None
        if self.lower is not None:
            return self.reference * (1 + self.lower)
        if self.upper is not None:
            return self.reference * (1 + self.upper)
        return None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_report(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "report.json"
    if not path.is_file():
        raise ReportError(f"{run_dir} has no report.json (was the run interrupted?)")
    try:
        report: dict[str, Any] = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ReportError(f"{path} is not valid JSON: {err}") from None
    return report


def _case_parts(case: str | None, name: str) -> tuple[str, int | None, str]:
    if case:
        _, workload, threads, _ = parse_case_name(case)
        return workload, threads, case.rsplit("/", 1)[1]
    return name, None, "-"


def final_testcases(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The last attempt of every test case (ReFrame reruns failures when asked)."""
    latest: dict[str, dict[str, Any]] = {}
    for run in report.get("runs", []):
        for testcase in run.get("testcases", []):
            latest[testcase["unique_name"] + "@" + testcase.get("system", "") + testcase.get("partition", "")] = testcase
    return list(latest.values())


def is_dry_run(report: dict[str, Any]) -> bool:
    return "--dry-run" in str(report.get("session_info", {}).get("cmdline", ""))


def rows(report: dict[str, Any]) -> list[Row]:
    out: list[Row] = []
    dry = is_dry_run(report)
    for tc in final_testcases(report):
        workload, threads, point = _case_parts(tc.get("case"), tc["name"])
        test = tool_test(tc["name"].split(" ")[0])
        result = tc.get("result")
        perf = tc.get("perfvalues") or {}
        if result == "skip":
            reason = tc.get("skip_reason") or tc.get("fail_reason") or "skipped (no reason recorded)"
            out.append(Row(test, workload, threads, point, "-", None, "", None, None, None, "skip", reason))
            continue
        if dry and result == "pass":
            out.append(Row(test, workload, threads, point, "-", None, "", None, None, None, "dry run",
                           "job script written, nothing ran"))
            continue
        if result in ("fail", "abort") and not perf:
            reason = (tc.get("fail_reason") or "").splitlines()[0] if tc.get("fail_reason") else ""
            out.append(Row(test, workload, threads, point, "-", None, "", None, None, None, "fail", f"{tc.get('fail_phase')}: {reason}"))
            continue
        bases: dict[str, str] = tc.get("reference_basis") or {}
        for key, value in perf.items():
            figure = key.rsplit(":", 1)[-1]
            measured, ref, lower, upper, unit, outcome = value[:6]
            has_ref = bool(ref)
            basis = str(bases.get(figure, ""))
            if not has_ref:
                verdict, reason = "no reference", basis or "no published or baseline value for this figure"
            elif outcome == "pass":
                verdict, reason = "pass", ""
            else:
                verdict, reason = "fail", _bounds_text(ref, lower, upper, unit)
            out.append(Row(test, workload, threads, point, figure, measured, unit, ref if has_ref else None, lower,
                           upper, verdict, reason, basis))
    return out


def _bounds_text(ref: float, lower: float | None, upper: float | None, unit: str) -> str:
    parts = []
    if lower is not None:
        parts.append(f">= {ref * (1 + lower):.4g}")
    if upper is not None:
        parts.append(f"<= {ref * (1 + upper):.4g}")
    return f"outside {' and '.join(parts)} {unit}"


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.3e}"


def _threshold_text(r: Row) -> str:
    bound = r.bound()
    if bound is None:
        return "-"
    return f"{'<=' if r.lower is None else '>='} {_fmt(bound)} {r.unit}"


def table(run_rows: list[Row], lab_state: dict[str, Any] | None = None, notes: list[str] | None = None) -> str:
    """The verdict as text: one line per figure, where each threshold comes from, the summary."""
    headers = ["test", "workload", "threads", "figure", "measured", "threshold", "verdict"]
    lines = [headers]
    # A reason that only repeats the lab's failure (every test skipped after it) points to
    # the summary line instead of being printed on every row.
    detail = str((lab_state or {}).get("detail") or "")
    for r in sorted(run_rows, key=lambda r: (r.test, r.workload, r.threads or 0, r.figure)):
        measured = f"{_fmt(r.measured)} {r.unit}".strip() if r.measured is not None else "-"
        reason = "the lab was unhealthy (see the last line)" if detail and detail in r.reason else r.reason
        verdict = r.verdict if not reason or r.verdict == "no reference" else f"{r.verdict}: {reason}"
        lines.append([r.test, r.workload, r.point, r.figure, measured, _threshold_text(r), verdict])
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers) - 1)]
    text = []
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line, widths)]
        text.append("  ".join(cells + [line[-1]]).rstrip())
    bases = dict.fromkeys(f"{r.figure}: {r.basis}" for r in sorted(run_rows, key=lambda r: r.figure)
                          if r.basis and (r.reference is not None or r.basis.startswith("shape:")))
    unjudged = dict.fromkeys(f"{r.figure}: {r.reason}" for r in sorted(run_rows, key=lambda r: r.figure)
                             if r.verdict == "no reference")
    if bases:
        text.append("thresholds:")
        text.extend(f"  {line}" for line in bases)
    derivations = {f"{r.workload} {r.figure}": r.derivation for r in sorted(run_rows, key=lambda r: (r.workload, r.figure))
                   if r.derivation}
    for name, derivation in derivations.items():
        text.append(f"hardware derivation of {name}:")
        text.extend(f"  {line}" for line in derivation)
    if unjudged:
        text.append("without threshold:")
        text.extend(f"  {line}" for line in unjudged)
    text.extend(notes or [])
    counts = summary(run_rows, lab_state)
    health = f"; {counts['health']}" if counts.get("health") else ""
    undecided = f", {counts['no verdict']} shape(s) without verdict" if counts["no verdict"] else ""
    text.append(
        f"verdict: {counts['overall'].upper()}  "
        f"({counts['pass']} pass, {counts['fail']} fail, {counts['skip']} skipped, "
        f"{counts['no reference']} without reference{undecided}{health})"
    )
    return "\n".join(text)


def summary(run_rows: list[Row], lab_state: dict[str, Any] | None = None) -> dict[str, Any]:
    """Counts and the overall verdict. A lab that was unhealthy or degraded during the
    run (``lab_state``, what the watchdog recorded) fails the run whatever its figures."""
    counts: dict[str, Any] = {
        k: sum(1 for r in run_rows if r.verdict == k)
        for k in ("pass", "fail", "skip", "no reference", "dry run", "no verdict")
    }
    health = ""
    if lab_state and lab_state.get("state") in ("unhealthy", "degraded"):
        health = f"lab {lab_state['state']} during the run: {lab_state.get('detail', '?')}"
    if counts["fail"] or health:
        overall = "fail"
    elif counts["pass"]:
        overall = "pass"
    else:
        overall = "no verdict"  # nothing ran, or nothing had a reference
    counts["overall"] = overall
    counts["health"] = health
    return counts
