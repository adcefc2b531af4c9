"""ReFrame's results database holds every run, and ``pfslab compare`` judges from it.

A tiny self-contained check (one figure, echoed from the environment) runs for real,
twice, with the local scheduler and the kit's generated configuration, in a kit tree
whose ``build/`` is a temporary directory: its two sessions land in that tree's
``build/reframe-results.db``. ``pfslab compare`` on the two run directories must read
them from there and judge exactly as the report.json-based comparison does; a run
without a stored session falls back to its report.json and says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pfslab import compare, junit, runs, sessions

KIT = Path(__file__).resolve().parents[2]
REFRAME = KIT / ".venv" / "bin" / "reframe"
PFSLAB = KIT / ".venv" / "bin" / "pfslab"
CONFIG = KIT / "reframe" / "config" / "settings.py"
FIXTURE_RUNS = KIT / "tests" / "fixtures" / "runs"

pytestmark = pytest.mark.skipif(not REFRAME.exists(), reason=f"{REFRAME} is missing: run 'make deps'")

TINY_CHECK = '''
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import performance_function, sanity_function


@rfm.simple_test
class TinyRate(rfm.RunOnlyRegressionTest):
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    executable = "echo"
    executable_opts = ["rate=${TINY_RATE}"]

    @sanity_function
    def ran(self):
        return sn.assert_found(r"rate=", self.stdout)

    @performance_function("MiB/s")
    def write(self):
        return sn.extractsingle(r"rate=(\\S+)", self.stdout, 1, float)
'''

RUN_A, RUN_B = "local/20260101T000000Z", "local/20260101T000001Z"


def clean_env(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RFM_", "PFSLAB_"))}
    env.update(PFSLAB_ROOT=str(root), **extra)
    return env


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kit tree with no lab up, two real runs of the tiny check stored in its database."""
    root = tmp_path_factory.mktemp("kit")
    (root / "build").mkdir()
    for name in ("families", "labs", "pfslab", "registry", "reframe", "scripts", "spack", "targets", "terraform"):
        (root / name).symlink_to(KIT / name)
    check = tmp_path_factory.mktemp("check") / "tiny_check.py"
    check.write_text(TINY_CHECK)
    for run, rate in ((RUN_A, "100"), (RUN_B, "150")):
        env = clean_env(root, RFM_CONFIG_FILES=str(CONFIG), PFSLAB_RUN_DIR=str(root / "build" / "runs" / run),
                        TINY_RATE=rate)
        proc = subprocess.run([str(REFRAME), "-c", str(check), "-r", "--exec-policy=serial", "--nocolor"],
                              cwd=root, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        assert "Current session stored with UUID" in proc.stdout
    return root


def pfslab_compare(kit: Path, a: str, b: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PFSLAB), "compare", a, b], cwd=kit, env=clean_env(kit), capture_output=True,
                          text=True, timeout=300)


def judgement(output: str) -> list[str]:
    """The table and its summary: everything after the header's blank line."""
    return output.split("\n\n", 1)[1].splitlines()


def report_uuid(run_dir: Path) -> str:
    return str(json.loads((run_dir / "report.json").read_text())["session_info"]["uuid"])


def test_every_run_is_stored_in_the_checkouts_results_database(kit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = kit / "build" / "reframe-results.db"
    monkeypatch.setenv("RFM_SQLITE_DB_FILE", str(db))
    wanted = [report_uuid(kit / "build" / "runs" / run) for run in (RUN_A, RUN_B)]
    stored = sessions.fetch(wanted)
    assert sorted(stored) == sorted(wanted)
    for run in (RUN_A, RUN_B):
        run_dir = kit / "build" / "runs" / run
        # The stored session is the run's report, figure for figure.
        assert stored[report_uuid(run_dir)] == json.loads((run_dir / "report.json").read_text())
        assert "<testsuite" in (run_dir / "junit.xml").read_text()  # junit.xml from the configuration


def run_dirs(kit: Path) -> list[Path]:
    return sorted((kit / "build" / "runs").glob("*/*"))


def test_compare_reads_both_runs_from_the_store_and_judges_as_before(kit: Path) -> None:
    before = run_dirs(kit)
    proc = pfslab_compare(kit, RUN_A, RUN_B)
    assert proc.returncode == 0, proc.stderr
    assert run_dirs(kit) == before, "reading the sessions made a run directory"
    db = kit / "build" / "reframe-results.db"
    for label, run in (("A", RUN_A), ("B", RUN_B)):
        uuid_ = report_uuid(kit / "build" / "runs" / run)
        assert f"{label}'s figures: ReFrame session {uuid_} in {db}" in proc.stdout.splitlines()
    from_reports = compare.compare(runs.Run(kit / "build" / "runs" / RUN_A), runs.Run(kit / "build" / "runs" / RUN_B))
    assert [c.verdict for c in from_reports] == ["better"]  # 100 -> 150 MiB/s, beyond the default noise
    assert judgement(proc.stdout) == judgement(compare.table(from_reports, "a", "b"))


def test_the_figures_come_from_the_store_not_the_report_file(kit: Path) -> None:
    # A copy of run B whose report.json says 100 MiB/s: its stored session still says 150.
    copy = kit / "build" / "runs" / "local" / "20260101T000002Z"
    shutil.copytree(kit / "build" / "runs" / RUN_B, copy)
    report = json.loads((copy / "report.json").read_text())
    for testcase in report["runs"][0]["testcases"]:
        for value in testcase["perfvalues"].values():
            value[0] = 100.0
    (copy / "report.json").write_text(json.dumps(report))
    proc = pfslab_compare(kit, RUN_A, "local/20260101T000002Z")
    assert "better" in judgement(proc.stdout)[-2], proc.stdout
    assert "0 worse, 1 better, 0 within noise" == judgement(proc.stdout)[-1]


def test_a_run_without_a_stored_session_falls_back_to_its_report_with_a_line(kit: Path) -> None:
    unstored = kit / "build" / "runs" / "local" / "20260101T000003Z"
    shutil.copytree(kit / "build" / "runs" / RUN_A, unstored)
    report = json.loads((unstored / "report.json").read_text())
    missing = str(uuid.uuid4())
    report["session_info"]["uuid"] = missing
    (unstored / "report.json").write_text(json.dumps(report))
    proc = pfslab_compare(kit, "local/20260101T000003Z", RUN_B)
    db = kit / "build" / "reframe-results.db"
    lines = proc.stdout.splitlines()
    assert f"A's figures: no ReFrame session {missing} in {db}; read from its report.json" in lines
    assert f"B's figures: ReFrame session {report_uuid(kit / 'build' / 'runs' / RUN_B)} in {db}" in lines
    assert judgement(proc.stdout)[-1] == "0 worse, 1 better, 0 within noise"


def test_older_runs_are_compared_from_their_reports_as_before(kit: Path) -> None:
    a, b = FIXTURE_RUNS / "local-quick-suite", FIXTURE_RUNS / "local-mixed-verdicts"
    proc = pfslab_compare(kit, str(a), str(b))
    db = kit / "build" / "reframe-results.db"
    assert f"A's figures: no ReFrame session {report_uuid(a)} in {db}; read from its report.json" in proc.stdout
    assert judgement(proc.stdout) == judgement(compare.table(compare.compare(runs.Run(a), runs.Run(b)), "a", "b"))


def test_a_run_that_ended_before_reframe_reported_gets_a_junit_error(tmp_path: Path) -> None:
    path = junit.write_error(tmp_path / "run", 'ReFrame ran no test (exit status 0) & "nothing" <judged>')
    assert path is not None
    case = ET.parse(path).getroot().find("testsuite/testcase")
    assert case is not None
    error = case.find("error")
    assert error is not None and error.get("message") == 'ReFrame ran no test (exit status 0) & "nothing" <judged>'


def test_reframes_own_junit_report_is_kept(kit: Path) -> None:
    run_dir = kit / "build" / "runs" / RUN_A
    before = (run_dir / "junit.xml").read_text()
    assert junit.write_error(run_dir, "should not replace it") is None
    assert (run_dir / "junit.xml").read_text() == before


def test_a_database_reframe_cannot_read_falls_back_naming_the_problem(kit: Path) -> None:
    broken = kit / "build" / "broken.db"
    broken.write_text("not a database\n")
    env = clean_env(kit, RFM_SQLITE_DB_FILE=str(broken))
    proc = subprocess.run([str(PFSLAB), "compare", RUN_A, RUN_B], cwd=kit, env=env, capture_output=True, text=True,
                          timeout=300)
    lines = proc.stdout.splitlines()
    assert lines[2].startswith(f"A's figures: reframe --describe-stored-sessions failed on {broken}: "), proc.stdout
    assert lines[2].endswith("; read from its report.json")
    assert judgement(proc.stdout)[-1] == "0 worse, 1 better, 0 within noise"
