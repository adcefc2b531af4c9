"""A remote lab's roles started and stopped phase by phase (pfslab/lifecycle/phases.py,
``pfslab lab phases LAB up|down``) with a fake transport and a fake clock: the order
(the inventory's phases up, reversed down), a failed step named with its exit status,
a connection lost (ssh's 255) told apart as a restart or a lost host, a step out of
its time named with its variable, stops that fail logged and the others still run.
The wording is scripts/lib/remote.sh's (tests/bats/cloud_remote.bats, tests/remote)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pfslab.lifecycle import Refusal, phases
from pfslab.model import Inventory
from pfslab.transport import TIMED_OUT, Result


def inventory() -> Inventory:
    return Inventory.from_json({"target": "baremetal", "ssh": {"user": "root"},
            "nodes": [{"name": "mon0", "address": "10.0.0.10", "ssh_jump": "cli0"},
                      {"name": "osd0", "address": "10.0.0.11", "ssh_jump": "cli0"},
                      {"name": "cli0", "address": "10.0.0.12"}],
            "phases": [[{"node": "mon0", "role": "ceph-mon"}], [{"node": "mon0", "role": "ceph-mgr"}],
                       [{"node": "osd0", "role": "ceph-osd"}], [], [{"node": "cli0", "role": "ceph-client"}]]})


@dataclass
class FakeClock:
    now: float = 0.0
    slept: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def monotonic(self) -> float:
        return self.now


@dataclass
class FakeNodes:
    """Role steps by "node family step component" -> (status, seconds it takes); a node
    in ``down`` fails its probes (ssh's 255) until ``answers_after`` probes were made."""

    clock: FakeClock
    steps: dict[str, tuple[int, float]] = field(default_factory=dict)
    down: dict[str, int] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)
    limits: list[float] = field(default_factory=list)

    def role_command(self, family: str, *args: str) -> list[str]:
        return [family, *args]

    def run_shown(self, node: str, command: Sequence[str], timeout: float) -> Result:
        key = " ".join([node, *command])
        self.ran.append(key)
        self.limits.append(timeout)
        rc, took = self.steps.get(key, (0, 0.0))
        if took >= timeout:
            self.clock.now += timeout
            return Result(TIMED_OUT, "")
        self.clock.now += took
        return Result(rc, "")

    def run(self, node: str, command: Sequence[str], timeout: float) -> Result:
        assert list(command) == ["true"]
        self.ran.append(f"{node} probe")
        if self.down.get(node, 0) > 0:
            self.down[node] -= 1
            return Result(255, "channel 0: open failed: connect failed: Connection refused\n")
        return Result(0, "")


def engine(nodes: FakeNodes, env: dict[str, str] | None = None) -> phases.Phases:
    return phases.Phases("lab1", inventory(), nodes, "remote", env or {}, nodes.clock)


@pytest.fixture(autouse=True)
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PFSLAB_BUILD", str(tmp_path))
    return tmp_path


def test_up_runs_every_role_in_the_inventory_phase_order_each_logged(capsys: pytest.CaptureFixture[str]) -> None:
    nodes = FakeNodes(FakeClock())
    engine(nodes).up()
    assert nodes.ran == ["mon0 ceph up mon", "mon0 ceph up mgr", "osd0 ceph up osd", "cli0 ceph up client"]
    assert capsys.readouterr().err.splitlines() == [
        "[remote] phase 0: ceph-mon up on mon0", "[remote] phase 1: ceph-mgr up on mon0",
        "[remote] phase 2: ceph-osd up on osd0", "[remote] phase 4: ceph-client up on cli0"]
    # Each step bounded by the default limit.
    assert set(nodes.limits) == {1800}


def test_down_stops_in_reverse_phase_order() -> None:
    nodes = FakeNodes(FakeClock())
    engine(nodes).down()
    assert nodes.ran == ["cli0 ceph stop client", "osd0 ceph stop osd", "mon0 ceph stop mgr", "mon0 ceph stop mon"]


def test_a_failed_step_is_named_with_its_exit_status_and_nothing_after_it_runs() -> None:
    nodes = FakeNodes(FakeClock(), steps={"osd0 ceph up osd": (2, 0.0)})
    with pytest.raises(Refusal) as err:
        engine(nodes).up()
    assert str(err.value) == ("ceph-osd up (phase 2) failed on osd0 of lab lab1 (exit status 2; its output is above); "
                              "fix it, then run 'make lab-up LAB=lab1' again")
    assert "cli0 ceph up client" not in nodes.ran
    # Not ssh's own failure: the node is not probed.
    assert not [r for r in nodes.ran if r.endswith("probe")]


def test_a_connection_lost_then_answering_is_a_restart() -> None:
    clock = FakeClock()
    nodes = FakeNodes(clock, steps={"osd0 ceph up osd": (255, 0.0)}, down={"osd0": 1})
    with pytest.raises(Refusal) as err:
        engine(nodes, {"PFSLAB_RESTART_WAIT": "6"}).up()
    assert str(err.value) == ("host osd0 restarted during ceph-osd up (phase 2) (its SSH connection broke, and it "
                              "answers again); run 'make lab-up LAB=lab1' again (it resumes)")
    assert nodes.ran[-2:] == ["osd0 probe", "osd0 probe"]
    assert clock.slept == [3]


def test_a_connection_lost_for_good_is_a_lost_host_with_why(build: Path) -> None:
    clock = FakeClock()
    nodes = FakeNodes(clock, steps={"osd0 ceph up osd": (255, 0.0)}, down={"osd0": 99})
    with pytest.raises(Refusal) as err:
        engine(nodes, {"PFSLAB_RESTART_WAIT": "6"}).up()
    assert str(err.value) == (
        "lost osd0 during ceph-osd up (phase 2): host osd0 (10.0.0.11, through cli0): nothing accepts SSH "
        "connections on port 22 (connection refused: its sshd is not running); start sshd on it, then run "
        "'make lab-up LAB=lab1' again (it resumes)")
    # Probed until PFSLAB_RESTART_WAIT ran out, 3 s apart.
    assert clock.slept == [3, 3]
    assert "cli0 ceph up client" not in nodes.ran


def test_a_step_out_of_its_time_is_named_with_its_variable() -> None:
    nodes = FakeNodes(FakeClock(), steps={"osd0 ceph up osd": (0, 99.0)})
    with pytest.raises(Refusal) as err:
        engine(nodes, {"PFSLAB_ROLE_STEP_TIMEOUT": "5"}).up()
    assert str(err.value) == ("role step 'ceph up osd' on node osd0 of lab lab1 did not finish within 5s, its limit; "
                              "if it needs longer, run the command again with PFSLAB_ROLE_STEP_TIMEOUT=<seconds> in "
                              "its environment (default 1800)")
    assert nodes.limits == [5, 5, 5]


@pytest.mark.parametrize("value", ["1h", "0", "-3", "012", " 5"])
def test_a_limit_that_is_not_seconds_is_refused(value: str) -> None:
    with pytest.raises(Refusal) as err:
        engine(FakeNodes(FakeClock()), {"PFSLAB_ROLE_STEP_TIMEOUT": value})
    assert str(err.value) == (f"PFSLAB_ROLE_STEP_TIMEOUT={value} is not allowed; give a number of seconds above 0 "
                              "(default 1800)")


def test_stops_that_fail_or_run_out_are_logged_and_the_others_still_run(capsys: pytest.CaptureFixture[str]) -> None:
    nodes = FakeNodes(FakeClock(), steps={"osd0 ceph stop osd": (255, 0.0), "cli0 ceph stop client": (0, 99.0)})
    engine(nodes, {"PFSLAB_ROLE_STEP_TIMEOUT": "5"}).down()
    assert nodes.ran == ["cli0 ceph stop client", "osd0 ceph stop osd", "mon0 ceph stop mgr", "mon0 ceph stop mon"]
    assert capsys.readouterr().err.splitlines() == [
        "[remote] error: role step 'ceph stop client' on node cli0 of lab lab1 did not finish within 5s, its limit; "
        "if it needs longer, run the command again with PFSLAB_ROLE_STEP_TIMEOUT=<seconds> in its environment "
        "(default 1800)",
        "[remote] could not stop ceph-client on cli0 (ignored)",
        "[remote] could not stop ceph-osd on osd0 (ignored)"]


def test_a_shown_step_writes_to_stderr_as_it_comes_and_keeps_its_status(tmp_path: Path,
                                                                        capfd: pytest.CaptureFixture[str]) -> None:
    from pfslab.transport import bounded_shown

    done = bounded_shown([sys.executable, "-u", "-c", "import sys; print('out'); print('err', file=sys.stderr); "
                                                "sys.exit(255)"], 30)
    assert (done.rc, done.output) == (255, "")
    captured = capfd.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == ["out", "err"]
    assert bounded_shown(["sleep", "30"], 0.3).rc == TIMED_OUT


def test_an_action_other_than_up_or_down_is_refused_naming_it() -> None:
    with pytest.raises(Refusal, match=r"^'start' is not a phases action; give up or down$"):
        phases.main("lab1", "start")


def test_a_restart_wait_that_is_not_seconds_is_refused() -> None:
    with pytest.raises(Refusal, match=r"^PFSLAB_RESTART_WAIT=3s is not allowed; give a number of seconds "
                                      r"\(default 30\)$"):
        engine(FakeNodes(FakeClock()), {"PFSLAB_RESTART_WAIT": "3s"})
