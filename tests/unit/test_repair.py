"""A local lab's repair at lab-up (pfslab/lifecycle/repair.py, `pfslab health converge`)
with a fake transport and a fake machine: a dead role is started again with ``up``, one
still unhealthy after the wait is restarted (``stop`` then ``up``), the host's view is
bound again only when it no longer answers, and the log lines (the ones tests/lab and
the README name) count what was repaired. Also lab-status's mounts (status.py)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pfslab.lifecycle import Refusal, health_command, repair, status
from pfslab.model import Inventory, Node
from pfslab.transport import Result


def inventory(state_root: Path) -> Inventory:
    """A ceph lab: mon0 (mon, mds), osd0, cli0 (client); its head's node config written."""
    node = state_root / "nodes" / "cli0"
    node.mkdir(parents=True)
    (node / "node.json").write_text(json.dumps({"paths": {"mount": "/s/lab/cli0/mnt"}}))
    return Inventory.from_json({
        "target": "local", "filesystem": {"mount": "/mnt/pfs"}, "clients": ["cli0"], "nodes": [],
        "local": {"state_root": str(state_root), "netns": {}},
        "phases": [[{"node": "mon0", "role": "ceph-mon"}], [{"node": "mon0", "role": "ceph-mds"}],
                   [{"node": "osd0", "role": "ceph-osd"}], [{"node": "cli0", "role": "ceph-client"}]]})


@dataclass
class FakeLab:
    """Roles' health answers by (node, component); ``up`` heals a dead role unless it is
    ``stuck`` (alive but out of the maps: only ``stop`` then ``up`` heals it)."""

    dead: set[tuple[str, str]] = field(default_factory=set)
    stuck: set[tuple[str, str]] = field(default_factory=set)
    steps: list[tuple[str, str, str]] = field(default_factory=list)

    def argv(self, node: str, command: Sequence[str]) -> list[str]:
        return [node, *command]

    def role_command(self, family: str, *args: str) -> list[str]:
        return [family, *args]

    def run(self, node: str, command: Sequence[str], timeout: float) -> Result:
        _, step, what = command
        key = (node, what)
        if step == "health":
            if what == "cluster":
                return Result(0, "HEALTH_OK\nmore\n") if not self.dead | self.stuck else Result(1, "HEALTH_WARN\n")
            return Result(1, f"ceph-{what}.{node}: not running\nsecond line\n") if key in self.dead | self.stuck \
                else Result(0, "")
        self.steps.append((step, node, what))
        if step == "stop" and key in self.stuck:
            self.stuck.discard(key)
            self.dead.add(key)
        if step == "up":
            self.dead.discard(key)
        return Result(0, f"{step} {what}\n")

    def copy(self, node: str, source: Path, destination: str, timeout: float) -> Result:
        raise AssertionError("the repair copies nothing")

    def stream(self, node: str, command: Sequence[str]) -> Iterator[str]:
        raise AssertionError("the repair streams nothing")


@dataclass
class FakeHost:
    answering: bool = True
    rebound: list[tuple[str, str]] = field(default_factory=list)
    now: float = 0.0

    def answers(self, target: str) -> bool:
        return self.answering

    def rebind(self, source: str, target: str) -> None:
        self.rebound.append((source, target))
        self.answering = True

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def monotonic(self) -> float:
        return self.now


def lab_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("[lab] ")]


def test_a_healthy_lab_has_nothing_to_repair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake, host = FakeLab(), FakeHost()
    cluster = repair.converge("lab1", inventory(tmp_path), fake, host, 60)
    assert fake.steps == [] and host.rebound == []
    assert lab_lines(capsys.readouterr().err) == ["[lab] every role of lab lab1 is running; nothing to repair"]
    assert cluster.output.splitlines()[0] == "HEALTH_OK"


def test_a_dead_role_is_started_again_with_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake, host = FakeLab(dead={("mon0", "mds")}), FakeHost()
    repair.converge("lab1", inventory(tmp_path), fake, host, 60)
    assert fake.steps == [("up", "mon0", "mds")]
    err = capsys.readouterr().err
    assert lab_lines(err) == ["[lab] repairing ceph-mds on mon0: ceph-mds.mon0: not running; second line",
                              "[lab] repaired 1 role(s)"]
    assert "up mds\n" in err  # the role's own lines are shown


def test_a_role_still_unhealthy_after_the_wait_is_stopped_then_started(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake, host = FakeLab(dead={("osd0", "osd")}, stuck={("mon0", "mds")}), FakeHost()
    repair.converge("lab1", inventory(tmp_path), fake, host, 60)
    assert fake.steps == [("up", "mon0", "mds"), ("up", "osd0", "osd"), ("stop", "mon0", "mds"), ("up", "mon0", "mds")]
    # The first wait ran out before the second pass.
    assert host.now >= 60
    assert lab_lines(capsys.readouterr().err) == [
        "[lab] repairing ceph-mds on mon0: ceph-mds.mon0: not running; second line",
        "[lab] repairing ceph-osd on osd0: ceph-osd.osd0: not running; second line",
        "[lab] restarting ceph-mds on mon0: ceph-mds.mon0: not running; second line",
        "[lab] repaired 3 role(s)"]


def test_a_lab_not_healthy_after_the_second_wait_is_refused_with_the_clusters_answer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    class Never(FakeLab):
        def run(self, node: str, command: Sequence[str], timeout: float) -> Result:
            if list(command[1:]) == ["health", "cluster"]:
                return Result(1, "HEALTH_WARN: 1 MDS damaged\n")
            return super().run(node, command, timeout)

    with pytest.raises(Refusal, match=r"^lab lab1 is not healthy after 5s; 'make lab-status' shows what is wrong$"):
        repair.converge("lab1", inventory(tmp_path), Never(), FakeHost(), 5)
    assert "HEALTH_WARN: 1 MDS damaged" in capsys.readouterr().err


def test_the_hosts_view_is_bound_again_only_when_it_no_longer_answers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = inventory(tmp_path)
    fresh = FakeHost(answering=True)
    assert repair.repair_head_mount(inv, fresh) == 0
    assert fresh.rebound == []
    stale = FakeHost(answering=False)
    repair.converge("lab1", inv, FakeLab(), stale, 60)
    assert stale.rebound == [("/s/lab/cli0/mnt", "/mnt/pfs")]
    assert lab_lines(capsys.readouterr().err) == [
        "[lab] repairing the host's view of the file system at /mnt/pfs (a bind of cli0's mount)",
        "[lab] repaired 1 role(s)"]


def test_a_head_whose_node_config_is_unreadable_is_one_line(tmp_path: Path) -> None:
    inv = inventory(tmp_path)
    (tmp_path / "nodes" / "cli0" / "node.json").write_text("{}")
    with pytest.raises(Refusal, match=r"^cannot read cli0's mount from its node config .*/cli0/node.json: 'paths'$"):
        repair.repair_head_mount(inv, FakeHost(answering=False))


def test_status_lists_only_the_labs_mounts_under_the_header(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PFSLAB_BUILD", str(tmp_path / "build"))
    inv = inventory(tmp_path / "state")
    inv = dataclasses.replace(inv, nodes=tuple(Node(n, "10.0.0.1") for n in ("mon0", "osd0", "cli0")))
    monkeypatch.setattr(status, "lab_of", lambda lab: (inv, FakeLab(dead={("osd0", "osd")})))
    under = f"{tmp_path}/build/lab1/lab"
    table = f"/ /dev/sda1 ext4\n{under}/cli0/mnt ceph-fuse fuse.ceph-fuse\n{tmp_path}/build/lab10/lab/x a b\n"
    monkeypatch.setattr(status, "bounded", lambda argv, timeout: Result(0, table))
    assert status.status("lab1") == 1
    out = capsys.readouterr().out.splitlines()
    assert "osd0     10.0.0.1       ceph-osd     FAILED: ceph-osd.osd0: not running; second line" in out
    assert out[-2:] == ["mounts (each client's own, seen by benchmark ranks at /mnt/pfs):",
                        f"  {under}/cli0/mnt ceph-fuse fuse.ceph-fuse"]


def test_a_health_command_that_is_not_one_is_named(tmp_path: Path) -> None:
    with pytest.raises(Refusal, match=r"^'wait lab1 5' is not a health command: pfslab health converge LAB SECONDS"):
        health_command.main(["wait", "lab1", "5"])
