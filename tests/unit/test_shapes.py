"""Shape references (pfslab/shapes.py): a source's claim about a curve's course, checked
across a sweep's points, validated, judged in the verdict and shown in the report."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslab import references, report, runs, shapes, verdict

KIT = Path(__file__).resolve().parents[2]
SEEDS = KIT.parent / "shared" / "seeds"
RUNS = KIT / "tests" / "fixtures" / "runs"
SOURCE = {"document": "002_f20a6b9879af5b9b.txt", "where": "4.1", "quote": "q"}


def shape(kind: str, over: list[int], **more: Any) -> shapes.Shape:
    return shapes.entry({"workload": "w", "operation": "write", "shape": kind, "over": over, "source": SOURCE, **more},
                        "x.yaml: shapes[0]")


# ---- judging synthetic curves ----------------------------------------------------------

def test_increasing_passes_within_the_tolerance_and_fails_naming_the_fall() -> None:
    claim = shape("increasing", [1, 8])
    assert claim.tolerance == 0.10  # policy.yaml shape.tolerance
    verdict_, reason = shapes.judge(claim, [(1, 10), (2, 19), (4, 18), (8, 30)])
    assert verdict_ == "pass" and "4 points" in reason
    verdict_, reason = shapes.judge(claim, [(1, 10), (2, 20), (4, 15), (8, 30)])
    assert verdict_ == "fail" and reason.endswith("2 -> 4 threads: 20 -> 15 (-25 %)")


def test_too_few_points_is_no_verdict_naming_what_is_missing() -> None:
    claim = shape("increasing", [1, 1024])
    verdict_, reason = shapes.judge(claim, [(1, 1.0), (2, 2.0), (4, 3.0)])  # a quick-mode sweep
    assert verdict_ == "no verdict" and "no point at 1024 threads (points: 1, 2, 4)" in reason
    assert shapes.judge(claim, [])[0] == "no verdict"


def test_linear_needs_the_minimum_efficiency_at_every_point() -> None:
    claim = shape("linear", [1, 8], min_efficiency=0.8)
    assert shapes.judge(claim, [(1, 10), (2, 19), (4, 36), (8, 70)])[0] == "pass"
    verdict_, reason = shapes.judge(claim, [(1, 10), (2, 19), (4, 30), (8, 70)])
    assert verdict_ == "fail" and "4 threads: 30, 0.75 of linear from 1 threads (needs 0.8)" in reason
    assert "; 8 threads" not in reason and ": 8 threads" not in reason


def test_peak_at_a_point_then_decreasing() -> None:
    claim = shape("peak", [1, 16], at=4, then="decreasing")
    assert shapes.judge(claim, [(1, 5), (2, 8), (4, 10), (8, 9), (16, 7)])[0] == "pass"
    verdict_, reason = shapes.judge(claim, [(1, 5), (2, 8), (4, 10), (8, 12), (16, 7)])
    assert verdict_ == "fail" and "8 threads: 12 above the peak's 10 at 4" in reason
    verdict_, reason = shapes.judge(claim, [(1, 5), (2, 8), (4, 10), (8, 10), (16, 10.5)])
    assert verdict_ == "fail" and "8 threads: 10 not below the peak's 10" in reason
    # The claim needs its range's ends and the peak, not every point between.
    assert shapes.judge(claim, [(1, 5), (4, 10), (16, 7)])[0] == "pass"
    verdict_, reason = shapes.judge(claim, [(1, 5), (2, 8), (8, 7), (16, 6)])
    assert verdict_ == "no verdict" and "no point at 4 threads" in reason
    assert shapes.judge(shape("peak", [1, 4], at=4, then="decreasing"), [(1, 5), (4, 10)])[0] == "no verdict"
    # Without "then", what comes after the peak only has to stay under it.
    assert shapes.judge(shape("peak", [1, 16], at=4), [(1, 5), (4, 10), (16, 10.5)])[0] == "pass"


@pytest.mark.parametrize(("change", "message"), [
    ({"shape": "flat"}, r"shape 'flat' is not allowed; allowed: increasing, linear, peak"),
    ({"source": {"document": "x"}}, r"a shape needs a source with a document and where/quote"),
    ({"over": [8, 1]}, r"over \[8, 1\] is not allowed; allowed: \[first, last\] thread counts"),
    ({"shape": "linear"}, r"linear needs min_efficiency in \(0, 1\], not None"),
    ({"shape": "peak", "at": 64}, r"a peak needs 'at', a thread count within over \[1, 8\], not 64"),
    ({"at": 4}, r"'at' and 'then' belong to a peak"),
    ({"tolerance": 1.5}, r"tolerance 1.5 is not allowed; allowed: a fraction in \[0, 1\)"),
    ({"threads": 4}, r"unknown field 'threads'; allowed: at, min_efficiency, mode, operation, over, shape, source, "
                     r"then, tolerance, workload"),
])
def test_a_bad_shape_is_refused_in_one_line_naming_the_entry(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    raw = {"workload": "w", "operation": "write", "shape": "increasing", "over": [1, 8], "source": SOURCE, **change}
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump({"lab": "lab", "references": [], "shapes": [raw]}))
    with pytest.raises(references.ReferenceError, match=r"^lab\.yaml: shapes\[0\]( \(w write\))?: " + message) as err:
        references.load("lab", path)
    assert "\n" not in str(err.value)


# ---- the seeds' claims -----------------------------------------------------------------

def flat(text: str) -> str:
    return " ".join(re.sub(r"[*`]", "", text).split())


@pytest.mark.parametrize("lab", ["beegfs-medium", "pixstor-capex", "nss73-ha"])
def test_every_shipped_shape_quotes_its_seed(lab: str) -> None:
    claims = shapes.load(lab)
    assert claims
    for claim in claims:
        seed = flat((SEEDS / claim.source["document"]).read_text())
        assert flat(claim.source["quote"]) in seed, f"{lab}: {claim.claim()}"


def test_the_seeds_own_published_curves_meet_their_claims_as_far_as_they_print_them() -> None:
    """The values the references files publish at thread counts are the seeds' curves as far
    as the seeds print them: where they reach the claim's range, the claim passes on them."""
    def judged(lab: str, workload: str, operation: str) -> tuple[str, str]:
        claim = next(c for c in shapes.load(lab) if (c.workload, c.operation) == (workload, operation))
        return shapes.judge(claim, references.published_points(references.load(lab), workload, operation))

    # Seed 002, Figure 10 read: ~3 GB/s at 1 thread, 132 GB/s at 1024.
    assert judged("beegfs-medium", "iozone-seq", "read")[0] == "pass"
    # Seed 000, Figure 4 read: 1.4K IOPS at 1 thread, 25.6K at 64.
    assert judged("pixstor-capex", "fio-rand4k", "read_iops")[0] == "pass"
    # Figure 10 write: ~3 GB/s at 1, 121 GB/s at 256; the seed prints nothing after the peak.
    verdict_, reason = judged("beegfs-medium", "iozone-seq", "write")
    assert verdict_ == "no verdict" and "no point at 1024 threads or after 256 threads (points: 1, 256)" in reason


# ---- in the verdict and the report -----------------------------------------------------

@pytest.fixture()
def quick_run(tmp_path: Path) -> runs.Run:
    """The local lab's quick suite (real measurements) with shape claims written beside it."""
    run_dir = tmp_path / "local" / "run"
    shutil.copytree(RUNS / "local-quick-suite", run_dir)
    src = {"document": "test", "where": "a claim about the measured curve"}
    claims = [
        {"workload": "ior-n1", "operation": "read", "shape": "increasing", "over": [1, 4], "source": src},
        {"workload": "mdtest-empty", "operation": "file_removal", "shape": "increasing", "over": [1, 4], "source": src},
        {"workload": "fio-rand4k", "operation": "write_iops", "shape": "increasing", "over": [1, 64], "source": src},
    ]
    data = yaml.safe_load(references.path_for("local").read_text())
    (run_dir / "references.yaml").write_text(yaml.safe_dump({**data, "shapes": claims}))
    return runs.Run(run_dir)


def test_shapes_are_judged_in_the_verdict(quick_run: runs.Run) -> None:
    rows = {(r.workload, r.figure): r for r in quick_run.rows() if r.figure.endswith("(shape)")}
    assert rows[("ior-n1", "read (shape)")].verdict == "pass"
    removal = rows[("mdtest-empty", "file_removal (shape)")]
    assert removal.verdict == "fail" and removal.reason.endswith("2 -> 4 threads: 1510 -> 1307 (-13 %)")
    fio = rows[("fio-rand4k", "write_iops (shape)")]
    assert fio.verdict == "no verdict" and "no point at 64 threads (points: 1, 2, 4)" in fio.reason
    counts = verdict.summary(quick_run.rows())
    assert counts["no verdict"] == 1 and counts["overall"] == "fail"
    assert "1 shape(s) without verdict" in verdict.table(quick_run.rows())


def test_the_report_shows_each_shape_and_its_verdict(quick_run: runs.Run, tmp_path: Path) -> None:
    page = report.build(quick_run, tmp_path / "out").read_text()
    assert ("<td>mdtest-empty</td><td>file_removal</td><td>1-4</td><td>-</td><td>shape: increasing over 1 to 4 "
            "threads</td><td>test: a claim about the measured curve </td>") in page
    row = next(line for line in page.splitlines() if "write_iops (shape)" in line)
    assert "<td class='none'>no verdict</td>" in row and "the curve&rsquo;s shape" in row
    assert "1 shape(s) without verdict" in page
