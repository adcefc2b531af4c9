"""The document a storage engineer hands over: one self-contained HTML file plus PNGs.

Built from a run directory alone (report, lab as run, references, provenance):
scaling curves with the reference beside the measurement, the peak and sustained
table in the seeds' layout, the verdict with reasons, hardware derivations and
provenance. Images are embedded, so the page opens in a browser with no network.
"""

from __future__ import annotations

import base64
import html
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from pfslab import deviations, derive, labs, plots, references, runs, verdict, workloads
from pfslab.units import convert, kind_of

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}
th{background:#f1f3f5}.pass{color:#2b8a3e;font-weight:bold}.fail{color:#c92a2a;font-weight:bold}
.skip,.none{color:#868e96}.dry{color:#1864ab}img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.summary{font-size:1.1em;padding:.5em;border:1px solid #ccc;display:inline-block}
code{background:#f8f9fa;padding:0 .2em}
"""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _point_key(point: str) -> tuple[int, int]:
    """Sweep points in order: by ranks, then by nodes ("8" or "2x4")."""
    if point.isdigit():
        return (int(point), 0)
    nodes, _, per = point.partition("x")
    return (int(nodes) * int(per or 1), int(nodes))


def _sort_points(points: set[str]) -> list[str]:
    return sorted(points, key=_point_key)


def charts(run: runs.Run) -> list[tuple[str, plots.Chart]]:
    """(file stem, chart) per workload: measured curves, reference curves, sweep lines."""
    all_rows = run.test_rows()
    rows = [r for r in all_rows if r.measured is not None]
    refs = run.references
    by_workload: dict[str, list[verdict.Row]] = defaultdict(list)
    for row in rows:
        by_workload[row.workload].append(row)
    # The sweep as the run planned it, measured or not (a dry run measures nothing).
    planned: dict[str, set[str]] = defaultdict(set)
    for row in all_rows:
        if row.point not in ("-", "sweep"):
            planned[row.workload].add(row.point)
    for ref in refs:
        by_workload.setdefault(ref.workload, [])
    out: list[tuple[str, plots.Chart]] = []
    for workload_id, wrows in sorted(by_workload.items()):
        figures = list(dict.fromkeys([r.figure for r in wrows] + [r.operation for r in refs if r.workload == workload_id]))
        wrefs = [r for r in refs if r.workload == workload_id]
        unit = next((r.unit for r in wrefs), None) or next((r.unit for r in wrows), "MiB/s")
        curves: list[plots.Curve] = []
        points: set[str] = {r.point for r in wrows} | planned.get(workload_id, set())
        for figure in figures:
            fig_rows = [r for r in wrows if r.figure == figure]
            fig_refs = [r for r in wrefs if r.operation == figure and (r.mode in (None, run.mode))]
            fig_unit = unit if all(kind_of(unit) == kind_of(r.unit) for r in fig_rows) else fig_rows[0].unit
            curve = plots.Curve(figure, fig_unit)
            curve.measured = [(r.point, convert(r.measured or 0.0, r.unit, fig_unit)) for r in fig_rows]
            for ref in fig_refs:
                if kind_of(ref.unit) != kind_of(fig_unit):
                    continue
                value = convert(ref.value, ref.unit, fig_unit)
                if ref.threads is None:
                    curve.lines.append((ref.kind, value))
                else:
                    point = str(ref.threads) if ref.nodes is None else f"{ref.nodes}x{ref.threads // ref.nodes}"
                    curve.reference.append((point, value))
                    points.add(point)
            # The bound each point had to meet (whatever its kind: published, baseline,
            # calibrated), and the calibration probe it is a floor of.
            for r in fig_rows:
                bound = r.bound()
                if bound is not None and kind_of(r.unit) == kind_of(fig_unit):
                    curve.floor.append((r.point, convert(bound, r.unit, fig_unit)))
                    curve.floor_is_ceiling = r.lower is None
                if r.basis.startswith("calibrated") and r.reference is not None and not any(
                        label == "lab-up probe" for label, _ in curve.lines):
                    curve.lines.append(("lab-up probe", convert(r.reference, r.unit, fig_unit)))
            curve.floor.sort(key=lambda pv: _point_key(pv[0]))
            curve.reference.sort(key=lambda pv: _point_key(pv[0]))
            curve.measured.sort(key=lambda pv: _point_key(pv[0]))
            curves.append(curve)
        if not points and not any(c.lines for c in curves):
            continue
        ordered = _sort_points(points) if points else ["1"]
        log_y = kind_of(unit) == "rate" and workload_id.split("/")[-1].startswith("mdtest")
        title = _workload_title(run, workload_id)
        out.append((workload_id.replace("/", "_"), plots.Chart(title, unit, log_y, ordered, curves)))
    return out


def _workload_title(run: runs.Run, workload_id: str) -> str:
    """The workload's title, and, when it ran at quick sizes, the sizes it ran at: a
    seed's title names the seed's sizes ("8 TiB in total"), not what this run did."""
    try:
        workload = workloads.find(run.lab, workload_id)
    except workloads.WorkloadError:
        return workload_id
    title = f"{workload_id}: {workload.get('title', workload['tool'])}"
    # An imported seed shape always runs at quick sizes on the importing lab.
    mode = "quick" if "/" in workload_id else run.mode
    quick = workload.get("quick", {})
    if mode == "quick" and quick:
        full = workload.get("sizes", {})
        sizes = [f"{k} {v}" + (f" (source: {full[k]})" if k in full and full[k] != v else "")
                 for k, v in quick.get("sizes", {}).items()]
        if "iterations" in quick:
            sizes.append(f"{quick['iterations']} iterations (source: {workload.get('iterations', 1)})")
        title += "\nrun at quick sizes" + (": " + ", ".join(sizes) if sizes else " (the source's flags, a shorter sweep)")
    return title


def launcher_section(lab: dict[str, Any]) -> list[str]:
    """How the jobs started their ranks, and, where that is not the source's own line,
    the source's line beside it and why (the lab's launcher.deviation)."""
    launcher = lab.get("launcher", {})
    if not launcher.get("mpirun"):
        return []
    out = ["<h2>Launcher</h2><table>",
           f"<tr><th>the jobs ran</th><td><code>{_esc(launcher['mpirun'])}</code></td></tr>"]
    if launcher.get("seed_mpirun"):
        out.append(f"<tr><th>the source ran</th><td><code>{_esc(launcher['seed_mpirun'])}</code></td></tr>")
    for workload in lab.get("workloads", []):
        if workload.get("seed_launcher"):
            out.append(f"<tr><th>{_esc(workload['id'])}: the jobs ran</th><td><code>{_esc(workload['launcher'])}</code></td></tr>"
                       f"<tr><th>{_esc(workload['id'])}: the source ran</th>"
                       f"<td><code>{_esc(workload['seed_launcher'])}</code></td></tr>")
    if launcher.get("deviation"):
        out.append(f"<tr><th>why they differ</th><td>{_esc(launcher['deviation'])}</td></tr>")
    out.append("</table>")
    return out


def peak_table(run: runs.Run, rows: list[verdict.Row]) -> list[dict[str, Any]]:
    """Per workload and figure: measured peak, sustained and plateau floor beside the published ones
    (seed Table 4 layout, and the floors the seeds' texts state). A start-of-curve value is
    no peak: it is judged at its own thread count only and not listed here."""
    grouped: dict[tuple[str, str], list[verdict.Row]] = defaultdict(list)
    for row in rows:
        if row.measured is not None and row.point != "sweep":
            grouped[(row.workload, row.figure)].append(row)
    table = []
    for (workload_id, figure), series in sorted(grouped.items()):
        unit = series[0].unit
        published = {r.kind: r for r in run.references if r.workload == workload_id and r.operation == figure
                     and r.kind in ("peak", "sustained", "floor")}
        if published:
            unit = next(iter(published.values())).unit
        values = [convert(r.measured or 0.0, r.unit, unit) for r in series]
        best = max(range(len(values)), key=lambda i: values[i])
        table.append({
            "workload": workload_id, "figure": figure, "unit": unit,
            "peak": values[best], "peak_at": series[best].point,
            "sustained": statistics.median(values[best:]), "floor": min(values[best:]),
            "published_peak": published.get("peak"), "published_sustained": published.get("sustained"),
            "published_floor": published.get("floor"),
        })
    return table


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{_esc(path.stem)}" src="data:image/png;base64,{data}">'


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _published(ref: references.Reference | None) -> str:
    if ref is None:
        return '<span class="none">no published value</span>'
    at = f" @ {ref.threads}" if ref.threads else ""
    return f"{_fmt(ref.value)} {_esc(ref.unit)}{at}"


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def lab_deviations(run: runs.Run) -> list[dict[str, Any]]:
    """The run's departures from its sources: recorded with the run (provenance.json),
    else the lab file kept beside it and the lab as run."""
    recorded = run.provenance.get("deviations")
    if isinstance(recorded, list):
        # A run recorded before deviations were data kept {field, value, note}.
        return [d if "what" in d else {"what": d.get("field"), "seed": "", "kit": _short(d.get("value")),
                                        "why": d.get("note"), "file": d.get("file")} for d in recorded]
    stored = run.path / "lab.yaml"
    return [d.to_json() for d in deviations.listing(run.lab, stored)] if stored.is_file() else []


def release_line(run: runs.Run) -> str:
    """What the nodes installed beside what the lab's source ran."""
    rel = run.provenance.get("filesystem") or labs.release(run.lab)
    source = f"the lab's source ran {rel['characterised']} (filesystem.version)" if rel.get("characterised") else ""
    if rel.get("installed"):
        kit = f"the kit installs {rel['installed']} ({rel['installed_field']})"
    else:
        kit = "the release the nodes' packages or installer give (not the kit's to choose)"
    return f"{rel['type']}: {kit}" + (f"; {source}" if source else "")


IO500_NO_REFERENCE = ("No source publishes an IO500 figure (none of the seeds ran IO500): the phases below "
                      "have no published reference; the verdict judges those a calibration probe predicts.")


def io500_section(report_json: dict[str, Any]) -> list[str]:
    """Each IO500 run in IO500's own terms: validity and why, the scores, every phase."""
    cases = [tc for tc in verdict.final_testcases(report_json) if str(tc.get("name", "")).startswith("IO500")]
    if not cases:
        return []
    out = ["<h2>IO500</h2>", f"<p>{_esc(IO500_NO_REFERENCE)}</p>"]
    for tc in sorted(cases, key=lambda t: str(t.get("case"))):
        raw = tc.get("io500_summary") or ""
        out.append(f"<h3>{_esc(tc.get('case') or tc['name'])}</h3>")
        if not raw:
            why = (tc.get("fail_reason") or "").splitlines()[0] if tc.get("fail_reason") else ""
            state = {"fail": f"<span class='fail'>invalid or failed run</span>: {_esc(why)}",
                     "skip": f"skipped: {_esc(tc.get('skip_reason') or why)}"}.get(
                         str(tc.get("result")), "nothing ran (dry run): no score")
            out.append(f"<p>{state}</p>")
            continue
        summary: dict[str, Any] = json.loads(raw)
        if summary["list_valid"]:
            validity = "<span class='pass'>list-valid</span>: the IO500 list's rules (stonewall 300 s, every phase)"
        else:
            validity = ("<span class='fail'>not list-valid</span>: " + _esc("; ".join(summary["invalid_reasons"]))
                        + _esc(f" (a {summary['mode']}-mode run with a {summary['stonewall']} s stonewall: IO500 marks "
                               "it INVALID; its figures are not comparable with the list's)"))
        score = summary["score"]
        out.append(f"<p>{summary['mode']} mode, stonewall {summary['stonewall']} s; {validity}</p>")
        out.append("<table><tr><th>Bandwidth</th><th>IOPS (metadata)</th><th>TOTAL</th></tr>"
                   f"<tr><td>{_fmt(score['bandwidth_gib_s'])} GiB/s</td><td>{_fmt(score['metadata_kiops'])} kIOPS</td>"
                   f"<td>{_fmt(score['total'])}{'' if summary['list_valid'] else ' [INVALID]'}</td></tr></table>")
        out.append("<table><tr><th>phase</th><th>result</th><th>time</th><th>in the score</th><th>IO500's mark</th></tr>")
        for phase, info in summary["phases"].items():
            scored = {True: "yes", False: "no", None: "-"}[info.get("scored")]
            mark = "[INVALID]" if info.get("invalid") else ""
            out.append(f"<tr><td>{_esc(phase)}</td><td>{_fmt(info['value'])} {_esc(info['unit'])}</td>"
                       f"<td>{_fmt(info['seconds'])} s</td><td>{scored}</td><td>{mark}</td></tr>")
        out.append("</table>")
    return out


def build(run: runs.Run, out_dir: Path | None = None) -> Path:
    """Write ``report.html`` and one PNG per workload into ``<run>/report/``; return the HTML path."""
    out_dir = out_dir or run.path / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = run.rows()
    summary = verdict.summary(rows, run.lab_state)
    drawn = [(chart.title, plots.draw(chart, out_dir / f"{stem}.png")) for stem, chart in charts(run)]
    prov = run.provenance
    session = run.report.get("session_info", {})
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>pfslab report: {_esc(run.lab_name)} {_esc(run.path.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_esc(run.lab.get('title', run.lab_name))}</h1>",
        f"<p>Lab <code>{_esc(run.lab_name)}</code>, run <code>{_esc(run.path.name)}</code>, mode {_esc(run.mode)}, "
        f"{_esc(session.get('time_start', ''))} to {_esc(session.get('time_end', ''))}.</p>",
        f"<p class='summary'>Verdict: <span class='{_esc(summary['overall'].split()[0])}'>{_esc(summary['overall'].upper())}</span>: "
        f"{summary['pass']} pass, {summary['fail']} fail, {summary['skip']} skipped, "
        f"{summary['no reference']} without reference"
        + (f", {summary['no verdict']} shape(s) without verdict" if summary["no verdict"] else "") + "</p>",
        (f"<p class='fail'>{_esc(summary['health'])}</p>" if summary.get("health") else ""),
        "<h2>Scaling</h2>",
        "<p>Measured curves are solid; reference curves (published values or the lab's baseline) dashed in the same "
        "colour; dotted lines are references that hold over the whole sweep (peaks, plateaus, floors, hardware limits).</p>",
    ]
    for title, png in drawn:
        parts.append(f"<h3>{_esc(title)}</h3>{_img(png)}")
    if not drawn:
        parts.append("<p>No figures were measured and the lab has no published curve.</p>")
    parts.append("<h2>Peak and sustained</h2><table><tr><th>workload</th><th>figure</th><th>measured peak</th>"
                 "<th>published peak</th><th>measured sustained</th><th>published sustained</th>"
                 "<th>lowest after the peak</th><th>published floor</th></tr>")
    for entry in peak_table(run, rows):
        parts.append(
            f"<tr><td>{_esc(entry['workload'])}</td><td>{_esc(entry['figure'])}</td>"
            f"<td>{_fmt(entry['peak'])} {_esc(entry['unit'])} @ {_esc(entry['peak_at'])}</td>"
            f"<td>{_published(entry['published_peak'])}</td>"
            f"<td>{_fmt(entry['sustained'])} {_esc(entry['unit'])}</td><td>{_published(entry['published_sustained'])}</td>"
            f"<td>{_fmt(entry['floor'])} {_esc(entry['unit'])}</td><td>{_published(entry['published_floor'])}</td></tr>"
        )
    parts.append("</table>")
    parts.append("<h2>Verdict</h2><table><tr><th>test</th><th>workload</th><th>threads</th><th>figure</th>"
                 "<th>measured</th><th>reference</th><th>threshold</th><th>verdict</th><th>reason</th></tr>")
    for r in rows:
        css = {"pass": "pass", "fail": "fail", "skip": "skip", "no reference": "none", "dry run": "dry",
               "no verdict": "none"}.get(r.verdict, "")
        reference = (f"{_fmt(r.reference)} {_esc(r.unit)}" if r.reference is not None
                     else "the curve&rsquo;s shape" if r.basis.startswith("shape:") else "no published value")
        measured = f"{_fmt(r.measured)} {_esc(r.unit)}" if r.measured is not None else "-"
        bound = r.bound()
        threshold = "-" if bound is None else f"{'&le;' if r.lower is None else '&ge;'} {_fmt(bound)} {_esc(r.unit)}"
        parts.append(f"<tr><td>{_esc(r.test)}</td><td>{_esc(r.workload)}</td><td>{_esc(r.point)}</td><td>{_esc(r.figure)}</td>"
                     f"<td>{measured}</td><td>{reference}</td><td>{threshold}</td><td class='{css}'>{_esc(r.verdict)}</td>"
                     f"<td>{_esc(r.reason)}</td></tr>")
    parts.append("</table>")
    parts.extend(io500_section(run.report))
    bases = dict.fromkeys(f"{r.figure}: {r.basis}" for r in sorted(rows, key=lambda r: r.figure)
                          if r.basis and (r.reference or r.basis.startswith("shape:")))
    if bases:
        parts.append("<h2>Where each threshold comes from</h2><ul>"
                     + "".join(f"<li>{_esc(line)}</li>" for line in bases) + "</ul>")
    if run.calibration is not None:
        from pfslab import calibration

        lines = calibration.summary_lines(run.calibration)
        parts.append(f"<p>{_esc(lines[0])}</p><ul>" + "".join(f"<li>{_esc(line.strip())}</li>" for line in lines[1:])
                     + "</ul><p>The probes and the floors are the kit's policy (reframe/references/policy.yaml, "
                       "section calibration); the probe figures were measured on this machine, through this lab.</p>")
    # Every derivation of the patterns this lab runs, used or not: a reader sees what its
    # hardware implies even where a published value judged the figure instead.
    run_patterns = set(run.patterns().values())
    derivations = [d for pattern, by_direction in derive.derive(run.lab).items() if pattern in run_patterns
                   for d in by_direction.values()]
    if derivations:
        parts.append("<h2>Hardware-derived thresholds</h2>")
        for d in derivations:
            peak = d.efficiency.peak_source
            parts.append(f"<p><b>{_esc(d.pattern)} {_esc(d.direction)}</b></p><ul>"
                         + "".join(f"<li>{_esc(line)}</li>" for line in d.lines)
                         + f"<li>reached: {_esc(d.source.get('document'))}, {_esc(d.source.get('where'))}: "
                           f"&ldquo;{_esc(d.source.get('quote'))}&rdquo;</li>"
                         + f"<li>theoretical peak: {_esc(peak.get('document'))}, {_esc(peak.get('where'))}: "
                           f"&ldquo;{_esc(peak.get('quote'))}&rdquo;</li></ul>")
    declared = lab_deviations(run)
    parts.append("<h2>Where the lab departs from its sources</h2>")
    if declared:
        parts.append("<p>Each departure from the lab&rsquo;s sources: the lab file&rsquo;s <code>deviations</code> and "
                     "those the kit derives from its data (tool versions, launcher lines, seed arguments, the "
                     "file system release).</p><table><tr><th>what</th><th>the source</th><th>the kit</th>"
                     "<th>why</th><th>said in</th></tr>")
        for dev in declared:
            parts.append(f"<tr><td>{_esc(dev.get('what'))}</td><td>{_esc(dev.get('seed'))}</td>"
                         f"<td>{_esc(dev.get('kit'))}</td><td>{_esc(dev.get('why'))}</td><td>{_esc(dev.get('file'))}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>The lab declares no departure from a source.</p>")
    parts.append("<h2>References and their sources</h2><table><tr><th>workload</th><th>figure</th><th>threads</th>"
                 "<th>value</th><th>kind</th><th>source</th></tr>")
    for ref in run.references:
        src = ref.source
        parts.append(f"<tr><td>{_esc(ref.workload)}</td><td>{_esc(ref.operation)}</td><td>{_esc(ref.threads or 'sweep')}</td>"
                     f"<td>{_fmt(ref.value)} {_esc(ref.unit)}</td><td>{_esc(ref.kind)}</td>"
                     f"<td>{_esc(src.get('document'))}: {_esc(src.get('where', ''))} {_esc(src.get('quote', ''))}</td></tr>")
    for claim in run.shapes:
        src = claim.source
        parts.append(f"<tr><td>{_esc(claim.workload)}</td><td>{_esc(claim.operation)}</td>"
                     f"<td>{claim.over[0]}-{claim.over[1]}</td><td>-</td><td>shape: {_esc(claim.claim())}</td>"
                     f"<td>{_esc(src.get('document'))}: {_esc(src.get('where', ''))} {_esc(src.get('quote', ''))}</td></tr>")
    parts.append("</table>")
    parts.extend(launcher_section(run.lab))
    tools = prov.get("tools", {})
    git = prov.get("git", {})
    parts.append("<h2>Provenance</h2><table>")
    for key, value in (
        ("kit commit", f"{git.get('commit')}{' (uncommitted changes)' if git.get('dirty') else ''}"),
        ("lab file sha256", prov.get("lab_file_sha256")),
        ("file system", release_line(run)),
        ("host, kernel", f"{prov.get('host')}, {prov.get('kernel')}"),
        ("spack.lock sha256", prov.get("spack_lock_sha256") or "no toolchain lock"),
        ("ReFrame command", session.get("cmdline")),
        ("ReFrame version", session.get("version")),
        ("run directory", str(run.path)),
    ):
        parts.append(f"<tr><th>{_esc(key)}</th><td>{_esc(value)}</td></tr>")
    for tool, info in sorted(tools.items()):
        parts.append(f"<tr><th>{_esc(tool)}</th><td>{_esc(info.get('version'))} ({_esc(info.get('path'))})</td></tr>")
    parts.append("</table></body></html>")
    page = out_dir / "report.html"
    page.write_text("\n".join(parts))
    return page
