"""The health engine's judgements (pfslab/lifecycle/health.py) from recorded answers:
what preflight prints per check and what the watchdog calls fatal or degraded."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from pfslab import labs, layout
from pfslab.lifecycle import health
from pfslab.lifecycle.health import Problem, RoleAnswer, RoleOnNode
from pfslab.model import Inventory
from pfslab.transport import TIMED_OUT, Result
from pfslab.transport.ssh import SshTransport

ESSENTIAL = {"mon", "mds", "osd", "client"}
OK = Result(0, "")


def inventory(**keys: object) -> Inventory:
    """An inventory with what a test sets; the keys every inventory has besides."""
    return Inventory.from_json({"target": "local", "filesystem": {"mount": "/mnt/pfs"}, "nodes": [], **keys})


def answer(node: str, role: str, rc: int = 0, out: str = "") -> RoleAnswer:
    return RoleAnswer(RoleOnNode(node, role), Result(rc, out))


def lab(*failing: RoleAnswer) -> list[RoleAnswer]:
    """A ceph lab with Slurm: mon0 (mon, mds), osd0, osd1, cli0 (client, slurm); some failing."""
    table = [("mon0", "ceph-mon"), ("mon0", "ceph-mds"), ("osd0", "ceph-osd"), ("osd1", "ceph-osd"),
             ("cli0", "ceph-client"), ("cli0", "slurm-controller"), ("cli0", "slurm-node")]
    bad = {(a.at.node, a.at.role): a for a in failing}
    return [bad.get((n, r), answer(n, r)) for n, r in table]


def judge(answers: list[RoleAnswer], service: Result = OK) -> list[Problem]:
    return health.judge_roles(answers, ESSENTIAL, RoleAnswer(RoleOnNode("mon0", "ceph-mon"), service), "wd", 25)


def test_a_healthy_lab_has_no_problem() -> None:
    assert judge(lab()) == []


def test_the_only_mds_down_is_fatal_twice_over() -> None:
    found = judge(lab(answer("mon0", "ceph-mds", 1, "ceph-mds.mon0: not running\n")),
                  Result(1, "ceph: no MDS is active, the file system is offline\nmore\n"))
    assert found == [Problem(False, "mon0: ceph-mds.mon0: not running"),
                     Problem(True, "every ceph-mds of the lab is down"),
                     Problem(True, "ceph: no MDS is active, the file system is offline")]


def test_one_osd_of_two_down_while_the_pools_serve_is_degraded_only() -> None:
    found = judge(lab(answer("osd1", "ceph-osd", 1, "ceph-osd.1: not running")),
                  Result(3, "ceph: 1/2 OSDs up, data is degraded (the pools still serve)"))
    assert [p.fatal for p in found] == [False, False]
    both = judge(lab(answer("osd0", "ceph-osd", 1, "a"), answer("osd1", "ceph-osd", 1, "b")))
    assert Problem(True, "every ceph-osd of the lab is down") in both


def test_a_client_mount_gone_or_a_dead_slurmd_is_fatal_naming_the_node() -> None:
    assert judge(lab(answer("cli0", "ceph-client", 1, "ceph-client@cli0: /mnt does not answer"))) == \
        [Problem(True, "cli0: ceph-client@cli0: /mnt does not answer"),
         Problem(True, "every ceph-client of the lab is down")]
    assert judge(lab(answer("cli0", "slurm-node", 1, "slurm-node@cli0: slurmd is not running"))) == \
        [Problem(True, "cli0: slurm-node@cli0: slurmd is not running")]


def test_a_check_that_does_not_answer_or_a_node_gone_from_ssh_is_named() -> None:
    found = judge(lab(answer("osd0", "ceph-osd", TIMED_OUT), answer("osd1", "ceph-osd", 255,
                                                                     "ssh: connect to host osd1: No route to host")),
                  Result(TIMED_OUT, ""))
    assert found[0] == Problem(False, "osd0: ceph-osd on osd0: its health check did not answer in 25s")
    assert found[1] == Problem(False, "osd1: host osd1 stopped answering over SSH (No route to host): bring it back, "
                                      "run 'make lab-up LAB=wd', then run the benchmarks again")
    assert found[-1] == Problem(True, "the service check of the file system did not answer in 25s")


def test_the_reading_joins_fatal_and_degraded_details() -> None:
    reading = health.Reading([Problem(True, "a"), Problem(False, "b"), Problem(True, "c; d")])
    assert (reading.fatal(), reading.degraded()) == ("a; c; d", "b")


def test_role_table_follows_the_phases_else_the_nodes() -> None:
    nodes = [{"name": "a", "roles": ["ceph-osd"]}, {"name": "b", "roles": ["ceph-mon", "ceph-client"]}]
    assert [(r.node, r.role) for r in health.role_table(inventory(nodes=nodes))] == \
        [("a", "ceph-osd"), ("b", "ceph-mon"), ("b", "ceph-client")]
    phased = inventory(nodes=nodes, phases=[[{"node": "b", "role": "ceph-mon"}], [{"node": "a", "role": "ceph-osd"}]])
    assert [r.role for r in health.role_table(phased)] == ["ceph-mon", "ceph-osd"]


def test_every_client_is_in_one_pair() -> None:
    assert health.client_pairs(["c0", "c1", "c2"]) == [("c0", "c1"), ("c2", "c0")]
    assert health.client_pairs(["c0", "c1"]) == [("c0", "c1")]
    assert health.client_pairs(["c0"]) == []


def test_preflight_judges_a_check_by_its_last_line_and_ssh_status() -> None:
    assert health.judge_check("mgmt0", "10.0.0.9", "fabric", Result(0, "x\nfabric ok\n\n")).line() == \
        "PASS mgmt0      fabric           fabric ok"
    assert health.judge_check("mgmt0", "10.0.0.9", "fabric", Result(255, "No route to host\n")).detail == \
        "ssh to mgmt0 (10.0.0.9) failed: No route to host"
    assert health.judge_check("n", "a", "w", Result(1, "")).detail == "exit status 1"
    assert health.judge_probe("c0", "c1", "c0", Result(3, "no MPI to probe")).status == "SKIP"
    assert health.judge_probe("c0", "c1", "c0", Result(1, "TCP")).line() == "FAIL c0,c1      mpi-fabric       TCP"


class Recording(SshTransport):
    """An SSH transport that records what it would run; every check passes."""

    def __init__(self) -> None:
        super().__init__(Path("cfg"))
        object.__setattr__(self, "ran", [])

    def run(self, node: str, command: Sequence[str], timeout: float) -> Result:
        self.ran.append(self.argv(node, command)[-2:])  # type: ignore[attr-defined]
        return Result(0, "fine")

    def run_shell(self, node: str, script: str, timeout: float) -> Result:
        self.ran.append([node, script])  # type: ignore[attr-defined]
        return Result(0, "fine")


def test_preflight_checks_fabric_everywhere_tuning_on_servers_every_role_then_the_cluster_and_mpi() -> None:
    inv = inventory(nodes=[{"name": "mgmt0", "roles": ["beegfs-mgmt"]}, {"name": "cli0", "roles": ["beegfs-client"]},
                           {"name": "cli1", "roles": ["beegfs-client"]}])
    ssh = Recording()
    checks: Iterator[health.Check] = health.preflight_checks("bg", inv, ssh, 60)
    assert [c.what for c in checks] == ["fabric", "tuning", "beegfs-mgmt", "fabric", "beegfs-client", "fabric",
                                        "beegfs-client", "beegfs-cluster", "mpi-fabric"]
    r = "PFSLAB_NODE_CONFIG=/etc/pfslab/node.json /opt/pfslab/scripts/roles"
    assert ssh.ran[:3] == [["mgmt0", f"{r}/common health fabric"], ["mgmt0", f"{r}/common health tuning"],  # type: ignore[attr-defined]
                           ["mgmt0", f"{r}/beegfs health mgmt"]]
    assert ssh.ran[-1] == ["cli0", "cd /opt/pfslab && .venv/bin/pfslab fabric-probe bg cli0 cli1"]  # type: ignore[attr-defined]


class Answers:
    """A transport answering each (node, role step) from a table; records what it ran."""

    def __init__(self, failing: dict[tuple[str, str], Result]) -> None:
        self.failing = failing
        self.ran: list[tuple[str, str]] = []

    def argv(self, node: str, command: Sequence[str]) -> list[str]:
        return [node, *command]

    def role_command(self, family: str, *args: str) -> list[str]:
        return [family, *args]

    def run(self, node: str, command: Sequence[str], timeout: float) -> Result:
        step = (node, " ".join(command))
        self.ran.append(step)
        return self.failing.get(step, Result(0, "fine\n"))

    def copy(self, node: str, source: Path, destination: str, timeout: float) -> Result:
        raise NotImplementedError

    def stream(self, node: str, command: Sequence[str]) -> Iterator[str]:
        raise NotImplementedError


CEPH = inventory(nodes=[{"name": "cli0", "roles": ["ceph-client"]}, {"name": "mon0", "roles": ["ceph-mon"]},
                        {"name": "cli1", "roles": ["ceph-client"]}])


def test_ready_asks_the_first_server_for_the_cluster_then_every_client() -> None:
    answers = Answers({})
    assert health.ready(CEPH, answers, 5) == (True, Result(0, "fine\n"))
    assert answers.ran == [("mon0", "ceph health cluster"), ("cli0", "ceph health client"),
                           ("cli1", "ceph health client")]


def test_not_ready_while_the_cluster_warns_or_a_client_is_not_mounted() -> None:
    warn = Result(1, "HEALTH_WARN 1 osds down\n")
    assert health.ready(CEPH, Answers({("mon0", "ceph health cluster"): warn}), 5) == (False, warn)
    unmounted = Answers({("cli1", "ceph health client"): Result(1, "not mounted")})
    assert health.ready(CEPH, unmounted, 5)[0] is False


def _lab_inventory(name: str, with_phases: bool = True) -> Inventory:
    """The inventory's roles as the local root writes them: the lab plan's phases and nodes."""
    derived = layout.resolved(labs.load(name))[layout.KEY]
    return inventory(nodes=derived["nodes"], **({"phases": derived["phases"]} if with_phases else {}))


def _start_order(inv: Inventory) -> list[str]:
    roles = [r.role for r in health.role_table(inv)]
    return [r for i, r in enumerate(roles) if i == 0 or roles[i - 1] != r]


def test_beegfs_roles_start_management_first_then_metadata_storage_the_monitor_the_clients() -> None:
    inv = _lab_inventory("beegfs-medium")
    assert _start_order(inv) == ["beegfs-mgmt", "beegfs-meta", "beegfs-storage", "beegfs-mon", "beegfs-client"]
    assert health.role_table(inv)[0] == RoleOnNode("mgmt0", "beegfs-mgmt")


def test_ceph_roles_start_mon_mgr_osd_mds_client_whatever_the_node_order() -> None:
    assert _start_order(_lab_inventory("local")) == ["ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-client"]


def test_an_inventory_written_before_it_had_phases_still_lists_every_role() -> None:
    old = health.role_table(_lab_inventory("local", with_phases=False))
    assert RoleOnNode("osd2", "ceph-osd") in old
    assert sorted(old, key=str) == sorted(health.role_table(_lab_inventory("local")), key=str)
