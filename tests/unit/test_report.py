"""Reports from recorded runs: plots that hold the data, a self-contained page."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pytest

from pfslab import labs, plots, report, runs

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def pixels_of(png: Path, hex_colour: str, tolerance: float = 0.06) -> int:
    """How many pixels of the PNG have (nearly) this colour."""
    image = mpimg.imread(png)[..., :3]
    target = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return int((np.abs(image - target).max(axis=-1) < tolerance).sum())


@pytest.fixture(scope="module")
def quick_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    report.build(runs.Run(RUNS / "local-quick-suite"), out)
    return out


def test_one_plot_per_workload(quick_suite: Path) -> None:
    assert sorted(p.name for p in quick_suite.glob("*.png")) == [
        "fio-rand4k.png", "ior-n1.png", "iozone-seq.png", "mdtest-4k.png", "mdtest-empty.png"
    ]


@pytest.mark.parametrize(("png", "curves"), [("iozone-seq.png", 2), ("mdtest-empty.png", 4), ("fio-rand4k.png", 2)])
def test_each_measured_curve_is_drawn(quick_suite: Path, png: str, curves: int) -> None:
    for index in range(curves):
        assert pixels_of(quick_suite / png, plots.colour(index)) > 400, f"curve {index} of {png} is missing"
    assert pixels_of(quick_suite / png, plots.colour(curves)) < 50, "a curve too many"


def test_a_blank_chart_has_no_curve_pixels(tmp_path: Path) -> None:
    path = plots.draw(plots.Chart("empty", "MiB/s", False, ["1", "2"], []), tmp_path / "empty.png")
    assert pixels_of(path, plots.colour(0)) == 0


def test_page_is_self_contained_and_complete(quick_suite: Path) -> None:
    page = (quick_suite / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 5
    assert not re.search(r"""(src|href)=["']https?://""", page), "the page must open with no network"
    for section in ("Scaling", "Peak and sustained", "Verdict", "Provenance"):
        assert f"<h2>{section}" in page
    assert "no published value" in page
    assert "IOzone sequential N-N write and read" in page


def test_verdict_reasons_are_in_the_page(tmp_path: Path) -> None:
    report.build(runs.Run(RUNS / "local-mixed-verdicts"), tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "ior is not installed" in page and "outside &gt;= 9000 MiB/s" in page


def test_reference_curves_are_drawn_dashed_beside_the_measurement(tmp_path: Path) -> None:
    chart = plots.Chart("w", "GB/s", False, ["1", "2", "4"], [
        plots.Curve("read", "GB/s", measured=[("1", 1.0), ("2", 2.0), ("4", 3.0)], reference=[("4", 4.0)], lines=[("peak", 3.5)]),
    ])
    path = plots.draw(chart, tmp_path / "w.png")
    assert pixels_of(path, plots.colour(0)) > 400


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (make deps installs it)")
def test_headless_chromium_shows_the_plots(quick_suite: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    subprocess.run(
        [str(chromium()), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars", "--window-size=1200,2400",
         f"--screenshot={shot}", (quick_suite / "report.html").as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    # The first plots are on screen: their curve colours appear in the screenshot.
    assert pixels_of(shot, plots.colour(0), tolerance=0.1) > 300
    assert pixels_of(shot, plots.colour(1), tolerance=0.1) > 300


def test_a_seed_lab_dry_run_draws_the_published_values(tmp_path: Path) -> None:
    run = runs.Run(RUNS / "pixstor-capex-dry-run")
    rows = run.rows()
    assert rows and {r.verdict for r in rows} == {"dry run"}
    report.build(run, tmp_path)
    page = (tmp_path / "report.html").read_text()
    # Table 4 and the figure texts: "24.8 GB/s at 16 threads", "222.1K op/s" creates at 32 threads
    assert "24.8 GB/s" in page and "2.221e+05 ops/s" in page
    # The IOR chart holds the published read (first figure) and write values (points and
    # sustained lines, thin and dotted) over the seed's sweep, and no measured curve.
    png = tmp_path / "ior-n1.png"
    assert pixels_of(png, plots.colour(0)) > 10 and pixels_of(png, plots.colour(1)) > 10
    charts = dict(report.charts(run))
    assert charts["ior-n1"].points == ["1", "2", "4", "8", "16", "32", "64", "128", "256", "512"]
    assert all(not c.measured for c in charts["ior-n1"].curves)


def test_the_report_shows_the_seeds_mpirun_line_beside_the_one_that_ran_and_why(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(RUNS / "pixstor-capex-dry-run", run_dir)
    lab = labs.load("pixstor-capex")
    (run_dir / "lab.json").write_text(json.dumps(lab))
    report.build(runs.Run(run_dir), tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text()
    section = page[page.index("<h2>Launcher</h2>"):page.index("<h2>Provenance</h2>")]
    assert f"<tr><th>the jobs ran</th><td><code>{html.escape(lab['launcher']['mpirun'])}</code>" in section
    assert f"<tr><th>the source ran</th><td><code>{html.escape(lab['launcher']['seed_mpirun'])}</code>" in section
    assert "--prefix /mmfs1/perftest/ompi" in lab["launcher"]["seed_mpirun"] and "--prefix" not in lab["launcher"]["mpirun"]
    assert "mdtest-empty: the source ran" in section and "mdtest-4k: the source ran" in section
    assert f"<tr><th>why they differ</th><td>{html.escape(lab['launcher']['deviation'])}</td>" in section
    assert section.count(html.escape(lab["launcher"]["deviation"])) == 1  # said once


def test_a_long_title_is_wrapped_inside_the_figure() -> None:
    title = ("beegfs-medium/iozone-seq: IOzone sequential N-N write then read, 1 MiB records, O_DIRECT, "
             "8 TiB in total (mean of 3)\nrun at quick sizes: aggregate 128m (source: 8T), 2 iterations (source: 3)")
    fig = plots.figure(plots.Chart(title, "MiB/s", False, ["1", "2", "4"], [
        plots.Curve("write", "MiB/s", measured=[("1", 50.0), ("2", 60.0), ("4", 70.0)])]))
    renderer = fig.canvas.get_renderer()
    box = fig.axes[0].title.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height
    assert all(len(line) <= plots.TITLE_WIDTH for line in plots.wrap_title(title).splitlines())
    plt.close(fig)


def test_the_floor_the_verdict_used_is_drawn_and_its_zone_shaded(tmp_path: Path) -> None:
    def chart(floor: list[tuple[str, float]]) -> plots.Chart:
        return plots.Chart("w", "IOPS", False, ["1", "2", "4"], [
            plots.Curve("write_iops", "IOPS", measured=[("1", 400.0), ("2", 500.0), ("4", 550.0)], floor=floor)])

    plain = pixels_of(plots.draw(chart([]), tmp_path / "plain.png"), plots.colour(0))
    flat = pixels_of(plots.draw(chart([("1", 90.0), ("2", 90.0), ("4", 90.0)]), tmp_path / "flat.png"), plots.colour(0))
    per_point = pixels_of(plots.draw(chart([("1", 200.0), ("2", 300.0), ("4", 350.0)]), tmp_path / "pp.png"),
                          plots.colour(0))
    assert flat > plain + 300 and per_point > plain + 300


def test_a_calibrated_run_reports_each_threshold_its_source_and_the_calibration(tmp_path: Path) -> None:
    report.build(runs.Run(RUNS / "local-calibrated-demo"), tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Where each threshold comes from</h2>" in page
    assert "calibrated on this machine: floor 20% of the lab&#x27;s own seq-write probe" in page
    assert "thresholds calibrated on this machine at lab-up" in page
    assert "&ge; " in page  # the threshold column
    assert "run at quick sizes: box 10 (source: 20)" in page


def _scaled_beegfs_run(tmp_path: Path) -> Path:
    """A run of beegfs-small's IOR N-1 (no published value: the threshold is derived), as
    ReFrame reports it: write 17.5 GB/s at its best (the seed's Medium reached 37.4 of 136.4
    GB/s of links; Small has 62), read 20 GB/s (under the 30.1 GB/s the seed's 66.3 scales to)."""
    run = tmp_path / "beegfs-small" / "20261125T000000Z"
    run.mkdir(parents=True)
    (run / "lab.json").write_text(json.dumps(labs.load("beegfs-small")))
    (run / "provenance.json").write_text(json.dumps({"lab": "beegfs-small", "mode": "full"}))
    cases = [{"name": f"IOR %case=beegfs-small/ior-n1/{n}", "unique_name": f"IOR_{i}", "case": f"beegfs-small/ior-n1/{n}",
              "system": "beegfs-small", "partition": "clients", "result": "pass", "fail_phase": None, "fail_reason": None,
              "perfvalues": {"beegfs-small:clients:write": [w, 0, None, None, "GB/s", "pass"],
                             "beegfs-small:clients:read": [r, 0, None, None, "GB/s", "pass"]}}
             for i, (n, w, r) in enumerate([(1, 2.0, 2.5), (64, 17.5, 15.0), (512, 16.0, 20.0)])]
    (run / "report.json").write_text(json.dumps({"session_info": {"cmdline": "reframe -c reframe/ -r"},
                                                 "runs": [{"testcases": cases}]}))
    return run


def test_a_derived_threshold_shows_its_derivation_in_the_verdict_and_the_report(tmp_path: Path) -> None:
    run_dir = _scaled_beegfs_run(tmp_path)
    pfslab = Path(sys.executable).with_name("pfslab")
    done = subprocess.run([str(pfslab), "verdict", str(run_dir)], capture_output=True, text=True, check=False)
    text = done.stdout
    assert done.returncode == 1, done.stderr  # the read fails
    rows = {line.split()[3] + " " + line.split()[4]: line for line in text.splitlines() if " (derived) " in line}
    assert "pass" in rows["write (derived)"] and ">= 15.3 GB/s" in rows["write (derived)"]
    assert "fail: best point, at 512 threads: outside >= 27.12 GB/s" in rows["read (derived)"]
    lines = text.splitlines()
    at = lines.index("hardware derivation of ior-n1 write (derived):")
    assert lines[at + 4] == "  theoretical write peak = min(drives 78, storage links 62, client links 400) = 62 GB/s (storage links)"
    assert lines[at + 5].startswith("  seq-n1 write efficiency = 37.4 GB/s reached / 136.4 GB/s theoretical = 27.4% "
                                    "(002_f20a6b9879af5b9b.txt: section 4.2")
    assert lines[at + 6].startswith("  threshold = 62 GB/s x 27.4% = 17 GB/s")
    report.build(runs.Run(run_dir), tmp_path / "report")
    page = (tmp_path / "report" / "report.html").read_text()
    assert "<h2>Hardware-derived thresholds</h2>" in page
    for line in ("seq-n1 write efficiency = 37.4 GB/s reached / 136.4 GB/s theoretical = 27.4%",
                 "threshold = 62 GB/s x 27.4% = 17 GB/s", "seq-nn read efficiency = 132 GB/s reached"):
        assert line in page
    assert "The peak read performance of 66.3 GB/s is observed at 512 threads." in page


def test_io500_section_in_its_own_terms(tmp_path: Path) -> None:
    """A recorded run with two IO500 test cases added: one whose summary is that of the
    real quick run (tests/fixtures/io500), one that failed its validity check."""
    from pfslab.tools import io500_config as io500
    from pfslab.tools import io500 as io500_parser

    run_dir = tmp_path / "run"
    shutil.copytree(RUNS / "local-calibrated-demo", run_dir)
    details = io500_parser.parse((RUNS.parent / "io500" / "io500-sc25_quick_np2_stdout.txt").read_text()).details
    data = json.loads((run_dir / "report.json").read_text())
    template = data["runs"][0]["testcases"][0]
    ran = dict(template, name="IO500 %case=local/io500/2", unique_name="IO500_2", case="local/io500/2",
               result="pass", fail_reason=None,
               io500_summary=json.dumps(io500.summary(details, "quick", 3)),
               perfvalues={"local:clients:score": [5.39166, 0, None, None, "score", None],
                           "local:clients:ior_easy_write": [597.6, 0, None, None, "MiB/s", None]},
               reference_basis={})
    failed = dict(template, name="IO500 %case=local/io500/4", unique_name="IO500_4", case="local/io500/4",
                  result="fail", perfvalues={},
                  fail_reason="sanity error: step 1: stonewall not honoured: ior-easy-write ran 2 s, under the 5 s stonewall",
                  fail_phase="sanity", io500_summary="")
    data["runs"][0]["testcases"] += [ran, failed]
    (run_dir / "report.json").write_text(json.dumps(data))
    page = html.unescape(report.build(runs.Run(run_dir), tmp_path / "out").read_text())
    section = page[page.index("<h2>IO500</h2>"):]
    assert "No source publishes an IO500 figure (none of the seeds ran IO500)" in section
    assert "quick mode, stonewall 3 s; <span class='fail'>not list-valid</span>: stonewall-time < 300s; " \
           "Runtime is smaller than expected minimum runtime" in section
    assert "<td>0.6747 GiB/s</td><td>43.08 kIOPS</td><td>5.392 [INVALID]</td>" in section
    assert "<tr><td>mdtest-hard-delete</td><td>0.8799 kIOPS</td><td>45.42 s</td><td>yes</td><td></td></tr>" in section
    assert "<tr><td>ior-rnd4K-easy-read</td><td>2.416 GiB/s</td><td>3.361 s</td><td>no</td><td></td></tr>" in section
    assert "<tr><td>ior-easy-write</td><td>0.5836 GiB/s</td><td>3.43 s</td><td>yes</td><td>[INVALID]</td></tr>" in section
    assert "local/io500/4</h3>\n<p><span class='fail'>invalid or failed run</span>: sanity error: step 1: " \
           "stonewall not honoured" in section
