"""IO500 as a workload: its config file rendered from the lab (pfslab/tools/io500_config.py), the
local lab's quick case, what the ReFrame test holds a run to, and the ReFrame dry run
of that case, whose config the built io500 itself must read.
"""

from __future__ import annotations

import configparser
import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pfslab import labs, workloads
from pfslab.tools import io500_config as io500
from pfslab.tools import io500 as io500_parser

KIT = Path(__file__).resolve().parents[2]
REFRAME = KIT / ".venv" / "bin" / "reframe"
BUILT_IO500 = KIT / "build" / "tools" / "view" / "bin" / "io500"
INVENTORY = KIT / "tests" / "fixtures" / "runs" / "local-calibrated-demo" / "inventory.json"
Read = Callable[[str], str]


def ini(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(comment_prefixes=("#", ";"))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


def test_full_mode_follows_the_list_rules() -> None:
    """300 s stonewall, every standard phase (nothing disabled), no setting IO500 calls invalidating."""
    text = io500.render({"ior_easy_block": "4g"}, "full", "io500", "/mnt/fs/scratch/x", "/stage/io500-results")
    config = ini(text)
    assert config["debug"]["stonewall-time"] == "300"
    assert config["global"]["datadir"] == "/mnt/fs/scratch/x"
    assert config["global"]["resultdir"] == "/stage/io500-results"
    assert config["ior-easy"]["blockSize"] == "4g"
    assert not [(s, k) for s in config.sections() for k, v in config[s].items() if k == "run"]
    for invalidating in ("files-per-dir", "pause-dir", "scc"):
        assert invalidating not in text
    assert "list-valid (the IO500 list's rules)" in text and "NOT list-valid" not in text


def test_full_mode_refuses_another_stonewall() -> None:
    with pytest.raises(io500.ConfigError, match=r"^workload io500: stonewall 10 in full mode; the IO500 list's rules "
                                                r"allow only 300 \(quick mode may shorten it\)$"):
        io500.render({"stonewall": 10}, "full", "io500", "/d", "/r")


def test_quick_mode_is_marked_not_list_valid() -> None:
    text = io500.render({"stonewall": 5, "mdtest_hard_files": 1000}, "quick", "io500", "/d", "/r")
    config = ini(text)
    assert config["debug"]["stonewall-time"] == "5"
    assert config["mdtest-hard"]["n"] == "1000"
    assert "NOT list-valid: stonewall 5 s instead of the list's 300 s" in text
    assert not io500.list_valid({"stonewall": 5}, "quick") and io500.list_valid({}, "full")


def test_unknown_size_is_refused() -> None:
    with pytest.raises(io500.ConfigError, match=r"unknown IO500 size 'files_per_dir'; allowed: stonewall, ior_easy_transfer"):
        io500.render({"files_per_dir": 10}, "quick", "io500", "/d", "/r")


def test_the_local_lab_runs_io500_in_its_quick_suite() -> None:
    lab = labs.load("local")
    assert labs.setting(lab, "benchmark.default_mode") == "quick"
    cases = workloads.cases("io500", ["local"])
    assert [(c.name, c.mode) for c in cases] == [("local/io500/2", "quick")]
    ctx = workloads.Context([workloads.Client("cli0", "10.99.0.14"), workloads.Client("cli1", "10.99.0.15")],
                            "/mnt/pfslab/local/pfslab-bench/io500-t2-x", "/stage", "/opt/view/bin/io500")
    rendered = workloads.render(lab, cases[0], ctx)
    [step] = rendered.steps
    assert step.command == "mpirun -np 2 --hostfile /stage/hosts.2 --map-by node /opt/view/bin/io500 /stage/io500.ini"
    assert "score" in step.measures and "mdtest_hard_delete" in step.measures
    config = ini(rendered.files["io500.ini"])
    assert config["debug"]["stonewall-time"] == "5"
    assert config["global"]["datadir"] == ctx.scratch_dir
    assert config["global"]["resultdir"] == "/stage/io500-results"
    # Full mode of the same workload: the list's stonewall, whatever quick says.
    full = workloads.render(lab, workloads.Case("local", "io500", 2, "full"), ctx)
    assert ini(full.files["io500.ini"])["debug"]["stonewall-time"] == "300"


def test_measures_are_what_the_parser_gives(fixture_text: Read) -> None:
    """Every figure the local workload measures is in a real run's parsed output."""
    parsed = io500_parser.parse(fixture_text("io500/io500-sc25_quick_np2_stdout.txt"))
    [step] = workloads.find(labs.load("local"), "io500")["steps"]
    assert set(step["measures"]) <= set(parsed.operations)


def test_judge_run_holds_the_stonewall_and_the_mode(fixture_text: Read) -> None:
    details = io500_parser.parse(fixture_text("io500/io500-sc25_quick_np2_stdout.txt")).details
    assert io500.judge_run(details, "quick", 3) is None  # the fixture's stonewall
    assert io500.judge_run(details, "quick", 4) == (
        "stonewall not honoured: ior-easy-write ran 3.43 s, under the 4 s stonewall")
    why = io500.judge_run(details, "full", 3)
    assert why is not None and why.startswith("full mode needs a list-valid run; IO500 marked it INVALID: stonewall-time < 300s")
    summary = io500.summary(details, "quick", 3)
    assert summary["list_valid"] is False and summary["score"]["total"] == 5.39166
    json.dumps(summary)  # kept as a ReFrame variable: must be JSON


@pytest.mark.skipif(not REFRAME.exists(), reason=f"{REFRAME} is missing: run 'make deps'")
def test_reframe_dry_run_of_the_local_case_writes_a_config_io500_reads(tmp_path: Path) -> None:
    """The local lab's IO500 case through ReFrame (--dry-run), in a kit tree where the
    local lab looks up (a recorded inventory; nothing is started): its job line, and
    its config read by the built io500 (--config-hash parses it and stops)."""
    root = tmp_path / "kit"
    (root / "build" / "local").mkdir(parents=True)
    for name in ("families", "labs", "pfslab", "registry", "reframe", "scripts", "spack", "targets", "terraform"):
        (root / name).symlink_to(KIT / name)
    (root / "build" / "active-lab").write_text("local\n")
    shutil.copy(INVENTORY, root / "build" / "local" / "inventory.json")
    tools = tmp_path / "tools"
    tools.mkdir()
    stub = tools / "io500"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RFM_", "PFSLAB_"))}
    env.update(RFM_CONFIG_FILES=str(KIT / "reframe" / "config" / "settings.py"), PFSLAB_RUN_DIR=str(run_dir),
               PFSLAB_ROOT=str(root), PFSLAB_TOOL_PATH=str(tools))
    proc = subprocess.run([str(REFRAME), "-c", str(KIT / "reframe" / "io500.py"), "--dry-run", "--system",
                           labs.system_name("local"), "--exec-policy=serial", "--nocolor"],
                          cwd=KIT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [testcase] = json.loads((run_dir / "report.json").read_text())["runs"][0]["testcases"]
    assert (testcase["case"], testcase["result"]) == ("local/io500/2", "pass"), testcase.get("fail_reason")
    stage = Path(testcase["stagedir"])
    lines = (stage / "rfm_job.sh").read_text().splitlines()
    scratch = next(shlex.split(line)[2] for line in lines if line.startswith("mkdir -p "))
    # IO500 is the job's executable: its line is the one before its status is printed.
    [step] = [shlex.split(before) for before, line in zip(lines, lines[1:]) if line.startswith("pfslab_done ")]
    assert step == ["mpirun", "-np", "2", "--hostfile", f"{stage}/hosts.2", "--map-by", "node",
                                    str(stub), f"{stage}/io500.ini"]
    assert "io500-results" in testcase["keep_files"]
    config_text = (stage / "io500.ini").read_text()
    config = ini(config_text)
    assert config["global"]["datadir"] == scratch and scratch.startswith("/mnt/pfslab/local/pfslab-bench/io500-t2-")
    assert config["global"]["resultdir"] == f"{stage}/io500-results"
    assert config["debug"]["stonewall-time"] == "5"
    if not BUILT_IO500.exists():
        pytest.skip(f"{BUILT_IO500} is not built ('make tools'): the config was not read by io500")
    hashed = subprocess.run([str(BUILT_IO500), str(stage / "io500.ini"), "--config-hash"], capture_output=True,
                            text=True, timeout=60, check=False,
                            env={**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    assert hashed.returncode == 0 and hashed.stdout.startswith("config-hash"), hashed.stdout + hashed.stderr
