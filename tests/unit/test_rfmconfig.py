"""ReFrame's configuration: the running lab first, seed labs for dry runs, nolab last."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pfslab import labs, rfmconfig, state, workloads

KIT = Path(__file__).resolve().parents[2]
REFRAME = KIT / ".venv" / "bin" / "reframe"


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PFSLAB_RUN_DIR", str(tmp_path / "run"))
    return tmp_path / "run"


def names(config: dict[str, Any]) -> list[str]:
    return [s["name"] for s in config["systems"]]


def test_with_no_lab_up_only_nolab_matches_this_host(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    config = rfmconfig.build(["-c", "reframe/", "-r"])
    assert names(config)[-1] == "nolab"
    catch_all = [s["name"] for s in config["systems"] if s["hostnames"] == [".*"]]
    assert catch_all == ["nolab"]
    assert "local" not in names(config)  # a local lab exists only while it is up
    assert config["general"][0]["report_file"] == str(run_dir / "report.json")
    assert config["general"][0]["report_junit"] == str(run_dir / "junit.xml")
    assert run_dir.is_dir()


def test_every_run_is_stored_in_one_database_per_checkout_outside_the_run(run_dir: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    (storage,) = rfmconfig.build()["storage"]
    assert storage["enable"] is True and storage["backend"] == "sqlite"
    assert storage["sqlite_db_file"] == str(state.BUILD_DIR / "reframe-results.db")
    assert not Path(storage["sqlite_db_file"]).is_relative_to(run_dir)


def test_the_running_lab_comes_first_and_runs_one_job_at_a_time(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: "local")
    monkeypatch.setattr(state, "inventory", lambda lab: {"lab": lab, "title": "t", "nodes": [], "clients": []})
    config = rfmconfig.build(["-r"])
    first = config["systems"][0]
    assert first["name"] == "local" and first["hostnames"] == [".*"]
    (partition,) = first["partitions"]
    assert partition["name"] == "clients" and partition["max_jobs"] == 1 and partition["scheduler"] == "local"
    assert first["outputdir"] == str(run_dir / "output")


def test_labs_provisioned_elsewhere_get_systems_that_never_match(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    config = rfmconfig.build(["-r"])
    remote = {labs.system_name(n) for n in labs.lab_names() if labs.load(n)["target"] != "local"}
    for system in config["systems"]:
        if system["name"] in remote:
            assert system["hostnames"] == [f"^pfslab-never-matches-{system['name']}$"]
    assert remote <= set(names(config))
    # ReFrame allows only letters, digits, '_' and '-' in system names.
    assert "beegfs-small_plus1" in names(config) and all(
        re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", n) for n in names(config)
    )


def test_every_run_directory_is_named_by_its_utc_start_and_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "RUNS_DIR", tmp_path)
    monkeypatch.delenv("PFSLAB_RUN_DIR", raising=False)
    first, second = state.new_run_dir("local"), state.new_run_dir("local")
    dry = state.new_run_dir("local", "-dry")
    assert re.fullmatch(r"\d{8}T\d{6}Z", first.name)
    assert second != first and second.is_dir()  # the same second: a new name, never a shared one
    assert re.fullmatch(r"\d{8}T\d{6}Z-dry", dry.name)
    plain = rfmconfig.run_dir("local")
    assert re.fullmatch(rf"\d{{8}}T\d{{6}}Z-{os.getpid()}", plain.name)


def test_a_local_lab_without_a_scheduler_keeps_this_machines_partition(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: "local")
    monkeypatch.setattr(state, "inventory", lambda lab: {"lab": lab, "title": "t", "nodes": [], "clients": []})
    (partition,) = rfmconfig.build(["-r"])["systems"][0]["partitions"]
    assert partition == {"name": "clients", "descr": "clients of lab local", "scheduler": "local",
                         "launcher": "lab-mpirun", "environs": ["pfslab"], "max_jobs": 1}


def slurm_lab(**access: str) -> dict[str, Any]:
    lab = labs.load("local-slurm")
    lab["scheduler"].update(access)
    return lab


@pytest.mark.parametrize(("launcher", "reframes"), [("srun", "srun"), ("mpirun", "lab-mpirun")])
def test_the_running_slurm_lab_submits_one_batch_job_at_a_time_with_its_access_options(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, launcher: str, reframes: str,
) -> None:
    lab = slurm_lab(partition="batch", account="acct-1", qos="normal", constraint="ssd", launcher=launcher)
    monkeypatch.setattr(state, "active_lab", lambda: "local-slurm")
    monkeypatch.setattr(state, "inventory", lambda name: {"lab": name, "title": "t", "nodes": [], "clients": []})
    monkeypatch.setattr(state, "lab", lambda name: lab)
    first = rfmconfig.build(["-r"])["systems"][0]
    assert first["name"] == "local-slurm" and first["hostnames"] == [".*"]
    (partition,) = first["partitions"]
    # ReFrame's sbatch backend that follows jobs with squeue: the kit's Slurm has no slurmdbd for sacct.
    assert partition["scheduler"] == "squeue" and partition["launcher"] == reframes and partition["max_jobs"] == 1
    assert partition["access"] == ["--partition=batch", "--account=acct-1", "--qos=normal", "--constraint=ssd"]


def test_a_slurm_lab_that_is_not_up_has_a_dry_run_system_asking_only_for_what_it_gives(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    systems = {s["name"]: s for s in rfmconfig.build(["-r"])["systems"]}
    system = systems["local-slurm"]
    assert system["hostnames"] == ["^pfslab-never-matches-local-slurm$"]
    (partition,) = system["partitions"]
    assert partition["scheduler"] == "squeue" and partition["launcher"] == "srun" and partition["access"] == []
    # Remote labs without a scheduler keep this machine's partition for their dry runs.
    assert systems["pixstor-capex"]["partitions"][0]["scheduler"] == "local"
    assert "access" not in systems["pixstor-capex"]["partitions"][0]


def file_logs(config: dict[str, Any]) -> list[str]:
    return [h["name"] for h in config["logging"][0]["handlers"] if h["type"] == "file"]


def test_a_run_or_dry_run_gets_its_directory_and_log(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    for argv in (["-c", "reframe/", "-r", "-n", "IOR"], ["--dry-run", "--system", "beegfs-small"], ["-rv"]):
        assert rfmconfig.runs_tests(argv), argv
    config = rfmconfig.build(["--dry-run", "--system", "beegfs-small"])
    assert run_dir.is_dir() and file_logs(config) == [str(run_dir / "reframe.log")]


@pytest.mark.parametrize("argv", [["-l"], ["-lC"], ["--list=T"], ["-L"], ["--list-detailed", "C"], ["--list-tags"],
                                  ["--describe"], ["--show-config"], ["-r", "-l"], ["-n", "IOR", "-l"],
                                  ["--performance-compare=now-1d:now/mean:/"]])
def test_an_invocation_that_runs_no_test_makes_no_directory(argv: list[str], run_dir: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    config = rfmconfig.build(["-c", "reframe/", *argv])
    assert not run_dir.exists() and file_logs(config) == []


def list_tests(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
               action: str = "-l") -> tuple[str, list[str], Path]:
    """The real `reframe -c reframe/ -l ARGS` (or another action) in a kit whose build/ is
    empty (no lab up), with ``env`` added: (its output, the listed tests' names, the kit's build/)."""
    root = tmp_path / "kit"
    (root / "build").mkdir(parents=True)
    for name in ("families", "labs", "pfslab", "registry", "reframe", "scripts", "spack", "targets", "terraform"):
        (root / name).symlink_to(KIT / name)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("RFM_", "PFSLAB_"))}
    environ.update(RFM_CONFIG_FILES=str(KIT / "reframe" / "config" / "settings.py"), PFSLAB_ROOT=str(root), **(env or {}))
    cmd = [str(REFRAME), "-c", str(KIT / "reframe"), action, "--nocolor", *args]
    proc = subprocess.run(cmd, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    return out, [line[2:] for line in out.splitlines() if line.startswith("- ")], root / "build"


needs_reframe = pytest.mark.skipif(not REFRAME.exists(), reason=f"{REFRAME} is missing: run 'make deps'")


@needs_reframe
@pytest.mark.parametrize("system", [None, "beegfs-small"])
def test_listing_with_no_lab_up_writes_nothing_and_warns_of_nothing(system: str | None, tmp_path: Path) -> None:
    """beegfs-small lacks fio, IO500 and the applications: those tests are simply not there."""
    out, listed, build = list_tests(tmp_path, *(["--system", system] if system else []))
    classes = {name.split()[0].split("_")[0] for name in listed}
    assert classes == ({"IOR", "Mdtest", "IOzone"} if system else {"NoLabUp"}), out
    assert "WARNING" not in out and "undefined" not in out, out
    assert list(build.iterdir()) == []


def parameters_of(listed: str) -> dict[str, str]:
    """``IOR_ior_n1 %lab=x %workload=ior-n1 %threads=4 %mode=quick /hash``: its parameters."""
    return dict(p[1:].split("=", 1) for p in listed.split() if p.startswith("%"))


def cases_of(listed: list[str]) -> list[str]:
    """The case names (lab/workload/point) of listed tests, from their separate parameters."""
    names = []
    for line in listed:
        p = parameters_of(line)
        point = p["threads"] if "threads" in p else f"{p['nodes']}x{p['processes']}"
        names.append(f"{p['lab']}/{p['workload']}/{point}")
    return sorted(names)


def expected(lab: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> list[workloads.Case]:
    """The cases the kit expands for the lab in the mode (what the one parameter held before)."""
    monkeypatch.setenv("PFSLAB_MODE", mode)
    tools = sorted({w["tool"] for name in [lab, *labs.load(lab).get("imports", [])]
                    for w in labs.load(name).get("workloads", [])})
    return [c for tool in tools for c in workloads.cases(tool, [lab])]


@needs_reframe
@pytest.mark.parametrize("lab", ["local-slurm", "pixstor-capex", "cephfs-stria"])
@pytest.mark.parametrize("mode", ["quick", "full"])
def test_a_listing_shows_separate_parameters_and_every_case_once(lab: str, mode: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """lab, workload, threads (or nodes x processes) and mode are parameters of their own,
    and ``--mode`` lists exactly the cases of that mode (as PFSLAB_MODE did): no skipped
    combination, none missing. local-slurm is the local lab with Slurm; cephfs-stria
    sweeps nodes x processes."""
    out, listed, _ = list_tests(tmp_path, "--system", labs.system_name(lab), "--mode", mode)
    want = expected(lab, mode, monkeypatch)
    assert len(listed) == len(want) > 0, out
    assert cases_of(listed) == sorted(c.name for c in want)
    for line in listed:
        p = parameters_of(line)
        assert {"lab", "workload", "mode"} <= set(p) and ("threads" in p) != ("nodes" in p and "processes" in p), line
    assert sorted(parameters_of(line)["mode"] for line in listed) == sorted(c.mode for c in want)
    if lab == "cephfs-stria":
        assert any("nodes" in parameters_of(line) for line in listed)


@needs_reframe
def test_the_command_lines_mode_wins_over_pfslab_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quick = expected("pixstor-capex", "quick", monkeypatch)
    full = expected("pixstor-capex", "full", monkeypatch)
    assert len(quick) < len(full)
    _, listed, _ = list_tests(tmp_path / "f", "--system", "pixstor-capex", "--mode", "full", env={"PFSLAB_MODE": "quick"})
    assert cases_of(listed) == sorted(c.name for c in full)
    _, listed, _ = list_tests(tmp_path / "q", "--system", "pixstor-capex", env={"PFSLAB_MODE": "quick"})
    assert cases_of(listed) == sorted(c.name for c in quick)


@needs_reframe
def test_the_documented_selections_select_by_workload_and_threads(tmp_path: Path) -> None:
    """README, "Or drive ReFrame yourself": -E on the parameters, -n on the name, -t on tags."""
    _, by_expr, _ = list_tests(tmp_path / "e", "--system", "beegfs-small", "-E",
                               'workload == "ior-n1" and threads >= 8')
    _, by_name, _ = list_tests(tmp_path / "n", "--system", "beegfs-small", "-n", "%workload=ior-n1%")
    want = [c.name for c in workloads.cases("ior", ["beegfs-small"]) if c.workload == "ior-n1"]
    wide = [n for n in want if int(n.rsplit("/", 1)[1]) >= 8]
    assert 0 < len(wide) < len(want)
    assert cases_of(by_name) == sorted(want)
    assert cases_of(by_expr) == sorted(wide)
    _, by_point, _ = list_tests(tmp_path / "p", "--system", "beegfs-small", "-n", "%threads=4%")
    every = [c.name for tool in ("ior", "mdtest", "iozone") for c in workloads.cases(tool, ["beegfs-small"])]
    assert cases_of(by_point) == sorted(n for n in every if n.endswith("/4")) != []
    _, by_tag, _ = list_tests(tmp_path / "t", "--system", "beegfs-small", "-t", "^mdtest$")
    assert cases_of(by_tag) == sorted(n for n in every if "/mdtest" in n) != []


@needs_reframe
def test_s_sets_and_p_multiplies_a_variable_of_every_selected_test(tmp_path: Path) -> None:
    """-S and -P act on variables (scratch_root), not on the parameters: -P lists every
    selected case once per value."""
    _, one, _ = list_tests(tmp_path / "a", "--system", "beegfs-small", "-n", "%threads=4%")
    out, two, _ = list_tests(tmp_path / "b", "--system", "beegfs-small", "-n", "%threads=4%",
                             "-P", "scratch_root=/a,/b")
    assert len(two) == 2 * len(one) > 0, out
    assert sorted(parameters_of(line)[".scratch_root"] for line in two) == sorted(["/a", "/b"] * len(one))
    out, _, _ = list_tests(tmp_path / "c", "--system", "beegfs-small", "-n", "%threads=4%",
                           "-S", "scratch_root=/elsewhere", action="--describe")
    described, _ = json.JSONDecoder().raw_decode(out[out.index("["):])
    assert len(described) == len(one) and {t["scratch_root"] for t in described} == {"/elsewhere"}


@needs_reframe
def test_the_demo_filters_select_exactly_the_labs_demo_cases(tmp_path: Path) -> None:
    """make bench --demo's -n arguments (pfslab lab demo-filters): local-slurm's demo has a
    threads point of the lab's own and a nodes x processes point of an imported workload."""
    lab = labs.load("local-slurm")
    demo = labs.setting(lab, "benchmark.demo")
    assert any("x" in entry.rsplit("/", 1)[1] for entry in demo) and len(demo) > 1
    out, listed, _ = list_tests(tmp_path, "--system", "local-slurm", *workloads.demo_filters(lab))
    assert cases_of(listed) == sorted(f"local-slurm/{entry}" for entry in demo), out


def test_a_lab_without_demo_cases_is_named() -> None:
    with pytest.raises(workloads.WorkloadError, match="lab pixstor-capex lists no demo cases"):
        workloads.demo_filters(labs.load("pixstor-capex"))


@pytest.mark.parametrize(("argv", "mode"), [(["--mode", "full"], "full"), (["-r", "--mode=quick"], "quick"),
                                            (["--mode", "bogus"], None), (["-r"], None), (["--mode"], None)])
def test_the_configuration_reads_the_command_lines_mode(argv: list[str], mode: str | None) -> None:
    assert rfmconfig.mode_of(argv) == mode


def test_quick_and_full_are_reframe_modes(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "active_lab", lambda: None)
    monkeypatch.setenv("PFSLAB_MODE", "quick")
    config = rfmconfig.build(["-l", "--mode", "full"])
    assert [m["name"] for m in config["modes"]] == list(workloads.MODES)
    assert os.environ["PFSLAB_MODE"] == "full"  # what the test files expand, after the configuration
