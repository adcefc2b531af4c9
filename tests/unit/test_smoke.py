"""make smoke (pfslab/smoke.py, pfslab/smoke_run.py): the scaling, the table checks, and
what fails a job; then real runs of fio, IOzone and IOR where they are here."""

from __future__ import annotations

import argparse
import copy
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from pfslab import smoke, smoke_run, state, tools, workloads
from pfslab.rfm_paths import BUILT_TOOLS

REAL_LAB = state.lab


def _args(command: str, tool: str) -> list[str]:
    tokens = shlex.split(command)
    at = next(i for i, t in enumerate(tokens) if Path(t).name == tools.executable(tool))
    return tokens[at + 1:]


def _changed(tool: str, exact: list[str], scaled: list[str]) -> list[tuple[str, str, str]]:
    """(option, old, new) of every value that differs; fails on any other difference."""
    assert len(exact) == len(scaled), f"{tool}: options added or dropped: {exact} -> {scaled}"
    out = []
    for i, (old, new) in enumerate(zip(exact, scaled)):
        if old == new:
            continue
        if old.startswith("--") and "=" in old:
            name = old.partition("=")[0]
            assert new.startswith(name + "="), f"{tool}: {old} became {new}"
            out.append((name, old, new))
        else:
            assert i > 0 and exact[i - 1] == scaled[i - 1], f"{tool}: {old} became {new}"
            out.append((exact[i - 1], old, new))
    return out


def _without(exact: list[str], removed: list[str]) -> list[str]:
    """The exact arguments less the hardware options the plan says it took out."""
    out: list[str] = []
    i = 0
    while i < len(exact):
        if exact[i] == "-O" and all(f"-O {d}" in removed for d in exact[i + 1].split(",")):
            i += 2
            continue
        if exact[i] not in removed:
            out.append(exact[i])
        i += 1
    return out


@pytest.mark.parametrize("lab", ["beegfs-medium", "pixstor-capex", "cephfs-stria", "nss73-ha", "local", "aws-nfs"])
def test_scaling_keeps_every_option_but_size_count_and_time_values(lab: str) -> None:
    plans = smoke.plan_lab(lab, "/w", "/s", {})
    assert plans
    seen: set[str] = set()
    for p in plans:
        if p.tool == "fio":
            # the jobs per node, $(( threads / nodes + ... )): threads and nodes at most 2
            expr = re.compile(r"\$\(\( ([0-9]+) / ([0-9]+) \+ \(r < [0-9]+ % [0-9]+\) \)\)")
            exact_script, scaled_script = _args(p.exact, "sh")[1], _args(p.run, "sh")[1]
            match = expr.search(scaled_script)
            assert match and max(map(int, match.groups())) <= smoke.MAX_RANKS, scaled_script
            changed = _changed("fio", expr.sub("N", exact_script).split(), expr.sub("N", scaled_script).split())
            assert {name for name, _, _ in changed} <= set(smoke.SCALE["fio"]), changed
            continue
        exact = _args(p.exact, p.tool)
        scaled = _args(p.run, p.tool)
        kept = _without(exact, p.table_checked)
        if p.tool == "iozone":
            assert scaled[-2:] == ["-+h", "127.0.0.1"]
            scaled = scaled[:-2]
            kept = [t for i, t in enumerate(kept) if t != "-+h" and (i == 0 or kept[i - 1] != "-+h")]
        changed = _changed(p.tool, kept, scaled)
        assert {name for name, _, _ in changed} <= set(smoke.SCALE.get(p.tool, {})), (p.where, changed)
        seen |= {f"{p.tool} {name}" for name, _, _ in changed}
        head = shlex.split(p.run)[: len(shlex.split(p.run)) - len(_args(p.run, p.tool)) - 1]
        if head:
            assert int(head[head.index("-np") + 1]) <= smoke.MAX_RANKS
            assert "--oversubscribe" in head
    # the big values did change (the seeds' 128g blocks, 8 TiB / threads files)
    assert seen & {"ior -b", "iozone -s", "mdtest -I"}, seen


def test_beegfs_striping_is_taken_out_of_the_run_and_named() -> None:
    plans = [p for p in smoke.plan_lab("beegfs-medium", "/w", "/s", {}) if p.tool == "ior"]
    assert plans
    for p in plans:
        assert "beegfs" in p.exact.lower() and "beegfs" not in p.run.lower()
        # the seed's striping (IOR 3.3.0's syntax), and the launcher's UCX selection (InfiniBand)
        assert p.table_checked == ["-O beegfsNumTargets=33", "-O beegfsChunkSize=2M", "OMPI_MCA_pml=ucx"], p.table_checked
        assert p.problems == []


def _lab(name: str, view: str | None = None, workload: dict[str, Any] | None = None) -> dict[str, Any]:
    lab = copy.deepcopy(REAL_LAB(name))
    if view:
        lab.setdefault("benchmark", {})["toolchain"] = view
    if workload:
        lab["workloads"] = [workload]
        lab["imports"] = []
    return lab


@pytest.mark.parametrize("view,bad,good", [
    ("default", "-O beegfsNumTargets=33", "--posix.beegfs.NumTargets=33"),
    ("seed", "--posix.beegfs.NumTargets=33", "-O beegfsNumTargets=33"),
])
def test_the_option_table_of_the_labs_ior_judges_beegfs_striping(view: str, bad: str, good: str) -> None:
    lab = _lab("beegfs-medium", view)
    line = "mpirun -np 2 --hostfile h ior -w -t 2M -b 2M -o /s/f {}"
    found = smoke.table_problems(lab, "ior", shlex.split(line.format(bad)), {})
    assert len(found) == 1 and ("beegfsNumTargets" in found[0] or "beegfs.NumTargets" in found[0]), found
    assert smoke.table_problems(lab, "ior", shlex.split(line.format(good)), {}) == []
    # either way the run goes without it: no BeeGFS here
    scaled, removed = smoke.scale_args("ior", shlex.split(good))
    assert scaled == [] and removed


IOZONE_SEQ = {"id": "iozone-seq", "tool": "iozone", "title": "t", "pattern": "n-n", "threads": [1],
              "sizes": {"file_size": "8t"},
              "steps": [{"args": "-i 0 -i 1 -c -e -w -r 1m -s {file_size} -t {threads} -+n -+m {threadlist}",
                         "measures": ["write", "read"]}]}


def _smoke_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, lab: dict[str, Any],
               tools: dict[str, str | None] | None = None) -> tuple[list[smoke_run.Job], list[str]]:
    monkeypatch.setattr(state, "lab", lambda name: lab if name == lab["name"] else REAL_LAB(name))
    if tools is not None:
        monkeypatch.setattr(smoke_run, "find_tool",
                            lambda _lab, tool: (tools.get(tool), "" if tools.get(tool) else f"no {tool} (test)"))
    lines: list[str] = []
    root = tmp_path / "root"
    root.mkdir()
    jobs = smoke_run.smoke([lab["name"]], root, lines.append)
    return jobs, [line for line in lines if line.startswith("FAIL")]


def _fake_tool(tmp_path: Path, body: str) -> str:
    path = tmp_path / "bin" / "iozone"
    path.parent.mkdir()
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("size, body, reason, line", [
    # IOzone takes -s 8t as 8 KiB and says nothing: the exact line's suffixes are checked
    # (pfslab/tools/iozone_options.py), so the job fails whether or not IOzone is here.
    ("8t", None, ("iozone -s 8t", "-s 8t -t 1"), "FAIL nss73-ha iozone-seq 1 step 1: iozone -s 8t"),
    # A tool exiting non-zero fails its job, naming lab, workload and line.
    ("8g", "echo 'iozone: bad option' >&2; exit 3", ("exited 3 (iozone: bad option)",),
     "FAIL nss73-ha iozone-seq 1 step 1 exited 3"),
    # An output the parser cannot read fails its job.
    ("8g", "echo 'Children see throughput for 1 initial writers = 12'; exit 0", ("parser cannot read",), None),
], ids=["iozone size in t", "tool exits non-zero", "output the parser cannot read"])
def test_a_job_fails_with_its_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, size: str, body: str | None,
                                     reason: tuple[str, ...], line: str | None) -> None:
    lab = _lab("nss73-ha", workload={**IOZONE_SEQ, "sizes": {"file_size": size}})
    jobs, lines = _smoke_one(monkeypatch, tmp_path, lab, {"iozone": None if body is None else _fake_tool(tmp_path, body)})
    (job,) = jobs
    assert job.status == "failed"
    assert any(all(part in r for part in reason) for r in job.reasons), job.reasons
    if line is not None:
        # The job's first FAIL line names it; a tool that is not here adds a second.
        assert len(lines) == (1 if body else 2), lines
        assert lines[0].startswith(line) and f"-s {size} -t 1" in lines[0], lines


def test_a_missing_tool_is_a_skip_and_no_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    lab = _lab("nss73-ha", workload={**IOZONE_SEQ, "sizes": {"file_size": "8g"}})
    jobs, _lines = _smoke_one(monkeypatch, tmp_path, lab, {"iozone": None})
    assert [j.status for j in jobs] == ["skipped"]
    smoke_run.print_summary(smoke_run.summary(jobs), jobs, 0.0)
    assert "SKIPPED: no iozone (test)" in capsys.readouterr().out


# ---- real tools ------------------------------------------------------------------------

def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (apt-get install fio iozone3)")


def _only(name: str, *ids: str, view: str | None = None) -> dict[str, Any]:
    lab = _lab(name, view)
    lab["workloads"] = [w for w in lab["workloads"] if w["id"] in ids]
    lab["imports"] = []
    return lab


def _all_passed(jobs: list[smoke_run.Job], lines: list[str]) -> None:
    """A real smoke that ran something, said no FAIL and passed every job."""
    assert lines == [], lines
    assert jobs and all(j.status == "passed" for j in jobs), [(j.job, j.reasons) for j in jobs]


def test_real_fio_and_iozone_smoke_of_the_local_lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _need("fio", "iozone", "mpirun")
    jobs, lines = _smoke_one(monkeypatch, tmp_path, _only("local", "fio-rand4k", "iozone-seq"))
    _all_passed(jobs, lines)
    assert {j.workload for j in jobs} == {"fio-rand4k", "iozone-seq"}
    assert sum(1 for j in jobs if not j.ran_as) == 2  # one run per workload, at two ranks/threads


def test_real_ior_smoke_of_both_ior_releases(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    have = {v: (BUILT_TOOLS / v / "bin" / "ior").exists() for v in ("view", "view-seed")}
    if not all(have.values()) or shutil.which("mpirun") is None:
        pytest.skip(f"IOR not built in {BUILT_TOOLS} ({have}) or no mpirun: 'make tools' builds it")
    jobs, lines = _smoke_one(monkeypatch, tmp_path, _only("local", "ior-n1", "mdtest-empty"))
    _all_passed(jobs, lines)
    assert {j.tool_path for j in jobs if j.tool == "ior"} == {str(BUILT_TOOLS / "view" / "bin" / "ior")}
    # the seed lab's IOR 3.3.0, its BeeGFS striping checked by table instead
    (tmp_path / "seed").mkdir()
    jobs, lines = _smoke_one(monkeypatch, tmp_path / "seed", _only("beegfs-medium", "ior-n1"))
    _all_passed(jobs, lines)
    assert {j.tool_path for j in jobs} == {str(BUILT_TOOLS / "view-seed" / "bin" / "ior")}
    assert all(s.table_checked for j in jobs for s in j.steps)


def _job(tool: str, status: str) -> smoke_run.Job:
    return smoke_run.Job("local", f"{tool}-w", "1", tool, [], status, [f"no {tool}"] if status == "skipped" else [])


@pytest.mark.parametrize("jobs, require, status", [
    ([("fio", "passed"), ("ior", "skipped")], "", 0),
    ([("fio", "passed"), ("ior", "skipped")], "ior,mdtest", 1),
    ([("ior", "skipped")], "", 1),  # nothing ran: nothing proven
    ([("fio", "passed"), ("iozone", "failed")], "", 1),
], ids=["a skip is no failure", "a required tool skipped", "nothing ran", "a job failed"])
def test_exit_status_a_missing_required_tool_or_nothing_run_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                  jobs: list[tuple[str, str]], require: str,
                                                                  status: int) -> None:
    made = [_job(tool, state) for tool, state in jobs]
    monkeypatch.setattr(smoke_run, "REPORT_DIR", tmp_path)
    monkeypatch.setattr(smoke_run, "smoke", lambda names, root, log=print: made)
    assert smoke_run.main(argparse.Namespace(labs=["local"], scratch=str(tmp_path), require=require)) == status


def test_the_io500_config_of_a_smoke_has_a_1_s_stonewall_and_keeps_every_other_line() -> None:
    """On a fast scratch the quick sizes ran out before the quick 5 s stonewall, which
    IO500 rightly calls invalid: the smoke scales the stonewall, a time, as the others."""
    from pfslab.tools import io500_config as io500

    config = io500.render({"stonewall": 5, "ior_easy_block": "2g"}, "quick", "io500", "/data", "/results")
    scaled = smoke._scaled_files({io500.CONFIG_FILE: config}, 2, 2, "/tmp/x", "/bin/io500")[io500.CONFIG_FILE]
    assert "stonewall-time = 1\n" in scaled and "stonewall-time = 5" not in scaled
    assert [line for line in scaled.splitlines() if "stonewall" not in line] == \
        [line for line in config.splitlines() if "stonewall" not in line]


def test_io500_scaled_run_may_take_longer_than_a_single_tool_run() -> None:
    """IO500 runs four write phases for the stonewall time each, then reads, stats and
    deletes what they wrote: beside CI's other jobs it ran over 45 s twice."""
    from pfslab import smoke_run

    assert smoke_run.step_timeout("io500") == 180
    assert smoke_run.step_timeout("ior") == smoke_run.STEP_TIMEOUT
    assert smoke_run.step_timeout("no-such-tool") == smoke_run.STEP_TIMEOUT
