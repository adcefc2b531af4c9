"""The measured tool is the job's executable, started by the partition's launcher, and
the job still fails when the tool does or its output is incomplete.

A real ReFrame run (not a dry run) in a kit tree where a lab derived from the local lab
is "up" (an inventory of two clients on this machine), its IOR workload one step. Stub
``mpirun`` and ``ior`` on PFSLAB_TOOL_PATH (first on the job's PATH): mpirun records its
own arguments and starts the program after them; ior prints a real IOR 3.3.0 output
(tests/fixtures), whole or cut short, and exits with the status it is given.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

KIT = Path(__file__).resolve().parents[2]
REFRAME = KIT / ".venv" / "bin" / "reframe"
CONFIG = KIT / "reframe" / "config" / "settings.py"
IOR_OUTPUT = KIT / "tests" / "fixtures" / "ior" / "ior-3.3.0_posix_N1_t1m_b16m.txt"
LAB = "exec-check"

pytestmark = pytest.mark.skipif(not REFRAME.exists(), reason=f"{REFRAME} is missing: run 'make deps'")

LAB_FILE = f"""\
schema_version: 1
name: {LAB}
extends: local
title: The local lab, one IOR workload, no cache drops (this machine's caches are not the test's)
os_tuning: {{sysctl: {{}}, drop_caches: never}}
imports: []
workloads:
  - id: ior-n1
    title: IOR N-1 write and read
    tool: ior
    pattern: seq-n1
    threads: [2]
    steps:
      - args: -a POSIX -i 1 -e -w -r -s 1 -t 1m -b {{block}} -o {{file}}
        measures: [write, read]
    sizes: {{block: 16m}}
  - id: ior-phases
    title: IOR write, then read (two steps, as the PixStor seed runs them)
    tool: ior
    pattern: seq-n1
    threads: [2]
    steps:
      - args: -a POSIX -i 1 -e -w -k -s 1 -t 1m -b {{block}} -o {{file}}
        measures: [write]
      - args: -a POSIX -i 1 -e -r -s 1 -t 1m -b {{block}} -o {{file}}
        measures: [read]
    sizes: {{block: 16m}}
"""

MPIRUN = """#!/bin/sh
# Records its arguments, then starts what follows its options (-np N --hostfile F --map-by node).
echo "$@" >"$STUB_LOG/mpirun.args"
shift 6
exec "$@"
"""

IOR = """#!/bin/sh
echo "$@" >>"$STUB_LOG/ior.args"
cat "$STUB_IOR_OUTPUT"
exit "$STUB_IOR_EXIT"
"""


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kit")
    for name in ("families", "pfslab", "registry", "reframe", "scripts", "spack", "targets", "terraform"):
        (root / name).symlink_to(KIT / name)
    (root / "labs").mkdir()
    for path in (KIT / "labs").iterdir():
        (root / "labs" / path.name).symlink_to(path)
    (root / "labs" / f"{LAB}.yaml").write_text(LAB_FILE)
    build = root / "build"
    (build / LAB).mkdir(parents=True)
    (build / "active-lab").write_text(LAB + "\n")
    inventory = {"lab": LAB, "title": "exec check", "target": "local",
                 "nodes": [{"name": "cli0", "address": "127.0.0.1"}, {"name": "cli1", "address": "127.0.0.1"}],
                 "clients": ["cli0", "cli1"], "launcher": {"env": {"PFSLAB_STUB_ENV": "from-the-inventory"}}}
    (build / LAB / "inventory.json").write_text(json.dumps(inventory))
    tools = root / "tools"
    tools.mkdir()
    for name, text in (("mpirun", MPIRUN), ("ior", IOR)):
        (tools / name).write_text(text)
        (tools / name).chmod(0o755)
    return root


def run(kit: Path, tmp_path: Path, status: int, output: str, workload: str = "ior-n1") -> tuple[dict[str, Any], Path]:
    """One run of the IOR test of ``workload``; its test case from ReFrame's report and the stub log directory."""
    (tmp_path / "ior.out").write_text(output)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RFM_", "PFSLAB_"))}
    env.update(RFM_CONFIG_FILES=str(CONFIG), PFSLAB_RUN_DIR=str(tmp_path / "run"), PFSLAB_ROOT=str(kit),
               PFSLAB_TOOL_PATH=str(kit / "tools"), STUB_LOG=str(logs), STUB_IOR_OUTPUT=str(tmp_path / "ior.out"),
               STUB_IOR_EXIT=str(status))
    proc = subprocess.run([str(REFRAME), "-c", str(KIT / "reframe" / "ior.py"), "-r", "--exec-policy=serial",
                           "--nocolor", "-S", f"scratch_root={tmp_path / 'scratch'}", "-n", f"%lab={LAB}%workload={re.escape(workload)}%"],
                          cwd=kit, env=env, capture_output=True, text=True, timeout=300)
    report = tmp_path / "run" / "report.json"
    assert report.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    [testcase] = json.loads(report.read_text())["runs"][0]["testcases"]
    return testcase, logs


def test_ior_is_the_jobs_executable_started_by_the_labs_mpirun_line(kit: Path, tmp_path: Path) -> None:
    testcase, logs = run(kit, tmp_path, 0, IOR_OUTPUT.read_text())
    assert testcase["result"] == "pass", testcase.get("fail_reason")
    stage = Path(testcase["stagedir"])
    script = (Path(testcase["outputdir"]) / "rfm_job.sh").read_text().splitlines()
    assert not [line for line in script if line.startswith("pfslab_step ")], "a one-step case needs no prelude step"
    [tool_line] = [before for before, line in zip(script, script[1:]) if line.startswith("pfslab_done ")]
    tokens = shlex.split(tool_line)
    assert tokens[:7] == ["mpirun", "-np", "2", "--hostfile", f"{stage}/hosts.2", "--map-by", "node"]
    assert tokens[7] == str(kit / "tools" / "ior") and tokens[8:12] == ["-a", "POSIX", "-i", "1"]
    # What ran is that line: the launcher got its options, the tool its own.
    assert (logs / "mpirun.args").read_text().split() == tokens[1:]
    assert (logs / "ior.args").read_text().split() == tokens[8:]
    assert "export PFSLAB_STUB_ENV=from-the-inventory" in script
    # The raw output is the job's stdout, kept with the run; the benchmark's files are gone.
    assert (Path(testcase["outputdir"]) / "rfm_job.out").read_text() == IOR_OUTPUT.read_text()
    assert not any((tmp_path / "scratch").iterdir())
    figures = {key.rsplit(":", 1)[-1]: value[0] for key, value in testcase["perfvalues"].items()}
    assert figures == {"write": 2253.60, "read": 43394.71}


def test_a_tool_that_exits_non_zero_fails_the_test_with_its_status(kit: Path, tmp_path: Path) -> None:
    testcase, _ = run(kit, tmp_path, 3, IOR_OUTPUT.read_text())
    assert testcase["result"] == "fail"
    assert "step 1 (ior) exited with status 3" in testcase["fail_reason"]
    assert not any((tmp_path / "scratch").iterdir())


def test_an_incomplete_output_fails_the_test(kit: Path, tmp_path: Path) -> None:
    cut = IOR_OUTPUT.read_text().split("Summary of all tests")[0].split("read      ")[0]
    testcase, _ = run(kit, tmp_path, 0, cut)
    assert testcase["result"] == "fail"
    assert "step 1: IOR output is truncated" in testcase["fail_reason"], testcase["fail_reason"]


def test_a_failed_step_before_the_measured_one_stops_the_job_before_it(kit: Path, tmp_path: Path) -> None:
    testcase, logs = run(kit, tmp_path, 3, IOR_OUTPUT.read_text(), "ior-phases")
    assert testcase["result"] == "fail"
    assert "step 1 (ior) exited with status 3" in testcase["fail_reason"]
    # The write step ran (its output in its own file); the read step, the executable, did not.
    assert [line.split()[5] for line in (logs / "ior.args").read_text().splitlines()] == ["-w"]
    assert not any((tmp_path / "scratch").iterdir())


def test_a_two_phase_case_measures_each_phase_from_its_own_output(kit: Path, tmp_path: Path) -> None:
    testcase, logs = run(kit, tmp_path, 0, IOR_OUTPUT.read_text(), "ior-phases")
    assert testcase["result"] == "pass", testcase.get("fail_reason")
    assert [line.split()[5] for line in (logs / "ior.args").read_text().splitlines()] == ["-w", "-r"]
    script = (Path(testcase["outputdir"]) / "rfm_job.sh").read_text().splitlines()
    assert [shlex.split(line)[:2] for line in script if line.startswith("pfslab_step ")] == [["pfslab_step", "1"]]
    figures = {key.rsplit(":", 1)[-1]: value[0] for key, value in testcase["perfvalues"].items()}
    assert figures == {"write": 2253.60, "read": 43394.71}
