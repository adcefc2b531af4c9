"""Verdict tables from real run directories (tests/fixtures/runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pfslab import verdict

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
KIT = Path(__file__).resolve().parents[2]
#: The kit's command, installed beside the interpreter running the tests (make deps).
PFSLAB = Path(sys.executable).with_name("pfslab")


def rows_of(name: str) -> list[verdict.Row]:
    return verdict.rows(verdict.load_report(RUNS / name))


def test_every_verdict_kind_from_one_real_run() -> None:
    by = {(r.test, r.figure): r for r in rows_of("local-mixed-verdicts")}
    assert by[("Fio", "write_iops")].verdict == "pass" and by[("Fio", "write_iops")].reference == 10
    assert by[("Fio", "read_iops")].verdict == "no reference" and by[("Fio", "read_iops")].measured
    assert by[("IOzone", "write")].verdict == "fail"
    assert by[("IOzone", "write")].reason == "outside >= 9000 MiB/s"
    skip = by[("IOR", "-")]
    assert skip.verdict == "skip" and skip.reason.startswith("ior is not installed")
    assert verdict.summary(list(by.values()))["overall"] == "fail"


def test_a_failed_benchmark_is_a_failure_with_its_reason() -> None:
    (row,) = rows_of("local-sanity-failure")
    assert (row.verdict, row.figure, row.threads) == ("fail", "-", 2)
    assert "step 1 (fio) exited with status 1" in row.reason


def test_figures_without_references_give_no_verdict_not_a_pass() -> None:
    rows = rows_of("local-quick-suite")
    assert len(rows) == 42
    assert {r.verdict for r in rows} == {"no reference"}
    assert verdict.summary(rows)["overall"] == "no verdict"


def test_the_table_has_one_line_per_figure_and_a_summary() -> None:
    text = verdict.table(rows_of("local-mixed-verdicts"))
    lines = text.splitlines()
    assert lines[0].split() == ["test", "workload", "threads", "figure", "measured", "threshold", "verdict"]
    assert len(lines) == 1 + 5 + 1 + 2 + 1  # header, rows, "without threshold:" and a line per figure, summary
    assert lines[6:9] == ["without threshold:", "  read: no published or baseline value for this figure",
                          "  read_iops: no published or baseline value for this figure"]
    assert lines[-1] == "verdict: FAIL  (1 pass, 1 fail, 1 skipped, 2 without reference)"


def test_a_directory_without_report_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(verdict.ReportError, match="has no report.json"):
        verdict.load_report(tmp_path)


def test_cli_exit_status_follows_the_verdict() -> None:
    def run(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PFSLAB), "verdict", "--json", str(RUNS / name)],
                              capture_output=True, text=True, check=False)

    failed, quiet = run("local-mixed-verdicts"), run("local-quick-suite")
    assert failed.returncode == 1 and json.loads(failed.stdout)["summary"]["fail"] == 1
    assert quiet.returncode == 3 and json.loads(quiet.stdout)["summary"]["overall"] == "no verdict"


def test_a_lab_that_failed_during_the_run_fails_the_run_whatever_its_figures() -> None:
    rows = [r for r in rows_of("local-mixed-verdicts") if r.verdict != "fail"]
    assert verdict.summary(rows)["overall"] == "pass"
    for state in ("unhealthy", "degraded"):
        lab_state = {"state": state, "since": "2026-11-23T01:27:00Z", "detail": "every ceph-mds of the lab is down"}
        summary = verdict.summary(rows, lab_state)
        assert summary["overall"] == "fail"
        assert summary["health"] == f"lab {state} during the run: every ceph-mds of the lab is down"
        assert verdict.table(rows, lab_state).splitlines()[-1].endswith(
            f"; lab {state} during the run: every ceph-mds of the lab is down)")


def test_rows_skipped_because_the_lab_failed_point_to_the_summary() -> None:
    detail = "every ceph-mds of the lab is down"
    row = verdict.Row("Fio", "fio-rand4k", 2, "2", "-", None, "", None, None, None, "skip",
                      f"lab unhealthy since 2026-11-23T01:27:00Z: {detail}; fix it")
    text = verdict.table([row], {"state": "unhealthy", "detail": detail})
    assert "skip: the lab was unhealthy (see the last line)" in text.splitlines()[1]
    assert text.splitlines()[-1].endswith(f"lab unhealthy during the run: {detail})")


@pytest.mark.parametrize("name", ["IOR_ior_n1 %lab=local %workload=ior-n1 %threads=4 %mode=quick",
                                  "IOR %case=local/ior-n1/4"])
def test_a_row_names_the_tools_test_and_the_case_in_either_naming(name: str) -> None:
    """Since the parameters are separate a test is IOR_<workload>; a report stored before
    names it IOR with one case parameter: both read as IOR, ior-n1, 4 threads."""
    tc = {"name": name, "unique_name": "x", "case": "local/ior-n1/4", "result": "skip", "skip_reason": "not up"}
    (row,) = verdict.rows({"runs": [{"testcases": [tc]}]})
    assert (row.test, row.workload, row.threads, row.point, row.verdict) == ("IOR", "ior-n1", 4, "4", "skip")
