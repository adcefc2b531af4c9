"""A site lab's health during a run, as Slurm's sinfo reports it (pfslab/site_health.py):
fabricated sinfo outputs judged, and the sinfo the watchdog runs (a stand-in on PATH)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pfslab import site_health
from test_site import resolved

HEALTHY = "cli0|idle|none\ncli1|allocated|none\n"


def test_every_named_node_answering_is_healthy() -> None:
    assert site_health.judge(resolved(), site_health.parse(HEALTHY)) == []


def test_a_named_node_not_responding_is_named() -> None:
    found = site_health.judge(resolved(), site_health.parse("cli0|allocated|none\ncli1|allocated*|none\n"))
    assert len(found) == 1
    assert found[0].startswith("node cli1: not responding to the Slurm controller")
    assert "(sinfo: allocated*)" in found[0]


def test_a_down_node_is_named_with_its_reason() -> None:
    found = site_health.judge(resolved(), site_health.parse("cli0|idle|none\ncli1|down*|Not responding\n"))
    assert found == ["node cli1: not responding to the Slurm controller (its slurmd is gone or unreachable), "
                     "state down (sinfo: down*; reason: Not responding)"]


def test_a_drained_node_is_named_though_it_responds() -> None:
    found = site_health.judge(resolved(), site_health.parse("cli0|drained|disk swap\ncli1|idle|none\n"))
    assert found == ["node cli0: state drained (sinfo: drained; reason: disk swap)"]


def test_flags_other_than_not_responding_are_not_a_failure() -> None:
    # "~": powered down by power saving is a state; "@" (reboot pending) alone is not.
    states = site_health.parse("cli0|idle@|none\ncli1|mixed|none\n")
    assert site_health.judge(resolved(), states) == []


def test_a_named_node_slurm_does_not_list_is_named() -> None:
    found = site_health.judge(resolved(), site_health.parse("cli0|idle|none\n"))
    assert found == ["node cli1: not in the Slurm controller's node list (sinfo lists no such node)"]


def test_a_node_in_two_partitions_is_judged_once() -> None:
    states = site_health.parse("cli0|idle|none\ncli0|idle|none\ncli1|idle*|none\ncli1|idle*|none\n")
    assert len(site_health.judge(resolved(), states)) == 1


def test_a_count_lab_fails_only_below_its_count() -> None:
    lab = resolved({"targets.site.nodes": 2})
    spare = site_health.parse("n1|idle|none\nn2|allocated|none\nn3|down*|Not responding\n")
    assert site_health.judge(lab, spare) == []
    short = site_health.parse("n1|idle|none\nn2|down*|Not responding\n")
    found = site_health.judge(lab, short)
    assert found == ["partition local_slurm: 1 usable node(s), the lab needs 2; node n2: not responding to the Slurm "
                     "controller (its slurmd is gone or unreachable), state down (sinfo: down*; reason: Not responding)"]


def test_sinfo_asks_for_the_named_nodes_else_the_partition() -> None:
    assert site_health.sinfo_command(resolved())[-1] == "--nodes=cli0,cli1"
    assert site_health.sinfo_command(resolved({"targets.site.nodes": 2}))[-1] == "--partition=local_slurm"


def fake_sinfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    """A sinfo on PATH that records its arguments and runs ``body``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "sinfo"
    script.write_text(f'#!/bin/sh\necho "$@" >"{tmp_path}/args"\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "args"


def test_problems_runs_sinfo_for_the_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = fake_sinfo(tmp_path, monkeypatch, "printf 'cli0|idle|none\\ncli1|idle*|none\\n'")
    found = site_health.problems(resolved())
    assert args.read_text().split() == ["--noheader", "--Node", "--format=%N|%T|%E", "--nodes=cli0,cli1"]
    assert [line.split(":")[0] for line in found] == ["node cli1"]


def test_a_controller_that_does_not_answer_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_sinfo(tmp_path, monkeypatch, "echo 'sinfo: error: Unable to contact slurm controller' >&2; exit 1")
    with pytest.raises(site_health.UnansweredError,
                       match="^the Slurm controller did not answer: sinfo: sinfo: error: Unable to contact slurm controller$"):
        site_health.problems(resolved())


def test_a_lab_without_a_scheduler_has_nothing_to_ask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = fake_sinfo(tmp_path, monkeypatch, "exit 1")
    assert site_health.problems(resolved({"scheduler": {"type": "none"}, "targets.site.nodes": 1})) == []
    assert not args.exists()
