"""A local lab's teardown proof (pfslab/lifecycle/teardown.py, scripts/lab down) on a fake
machine: only this instance's processes, mounts, namespaces, links, bridge, cgroups and
files are removed, found by name as plain text, and what is left is listed with the
line prefixes lab-down prints after 'left behind:'."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pfslab import cli, instance, labs, layout
from pfslab.lifecycle import Refusal, teardown
from pfslab.lifecycle.teardown import Instance
from pfslab.model import BridgeClaim, Lab

KIT = Path("/w/k+1.0")
BUILD = KIT / "build"


def resolved(name: str = "lo+c.al", root: Path = KIT, bridge: str | None = None) -> dict[str, Any]:
    lab = dict(labs.load("local"), name=name)
    if bridge:
        lab = instance.apply_local(lab, bridge, None)
    return instance.with_instance(layout.resolved(lab), {"USER": "ann"}, root)


def of(lab: dict[str, Any], build: Path = BUILD) -> Instance:
    return Instance.of(Lab.from_json(lab), build)


@dataclass
class FakeHost:
    #: pid -> (command line, environment entries)
    procs: dict[int, tuple[str, list[bytes]]] = field(default_factory=dict)
    netns: dict[str, list[int]] = field(default_factory=dict)
    mount_table: list[str] = field(default_factory=list)
    links: set[str] = field(default_factory=set)
    ports: dict[str, list[str]] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)
    lab_records: list[BridgeClaim] = field(default_factory=list)
    ran: list[list[str]] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)
    unmounted: list[str] = field(default_factory=list)

    def pids(self) -> list[int]:
        return sorted(self.procs)

    def environ(self, pid: int) -> list[bytes]:
        return self.procs[pid][1] if pid in self.procs else []

    def cmdline(self, pid: int) -> str | None:
        return self.procs[pid][0] if pid in self.procs else None

    def kill(self, pids: Iterable[int]) -> None:
        for pid in pids:
            self.killed.append(pid)
            self.procs.pop(pid, None)
            for members in self.netns.values():
                if pid in members:
                    members.remove(pid)

    def namespaces(self) -> list[str]:
        return sorted(self.netns)

    def namespace_pids(self, ns: str) -> list[int]:
        return list(self.netns.get(ns, []))

    def mounts(self) -> list[str]:
        return list(self.mount_table)

    def unmount(self, target: str) -> None:
        self.unmounted.append(target)
        self.mount_table.remove(target)

    def link_exists(self, name: str) -> bool:
        return name in self.links

    def link_ports(self, bridge: str) -> list[str]:
        return self.ports.get(bridge, [])

    def exists(self, path: str) -> bool:
        return path in self.paths or path in self.dirs

    def is_dir(self, path: str) -> bool:
        return path in self.dirs

    def run(self, argv: Sequence[str]) -> int:
        argv = list(argv)
        self.ran.append(argv)
        tool = argv[0].rsplit("/", 1)[-1]
        if tool == "netns" and argv[1] == "node-down":
            self.netns.pop(argv[2], None)
            self.links.discard(argv[3])
        elif tool == "netns" and argv[1] == "bridge-down":
            self.links.discard(argv[2])
        elif argv[:3] == ["ip", "netns", "del"]:
            self.netns.pop(argv[3], None)
        elif tool == "cleanup":
            for path in argv[1:]:
                self.paths.discard(path)
                self.dirs.discard(path)
        return 0

    def records(self) -> list[BridgeClaim]:
        return self.lab_records

    def remove_cgroup(self, path: str) -> None:
        self.dirs.discard(path)

    def remove(self, path: str) -> None:
        self.paths.discard(path)

    def sleep(self, seconds: float) -> None:
        pass


def everything_of(inst: Instance) -> FakeHost:
    """A machine holding one of each thing the instance can leave."""
    ns0, veth0 = inst.nodes[0]
    return FakeHost(
        procs={
            101: (f"ceph-osd -c {inst.state}/lab/nodes/osd0/ceph.conf", []),
            102: (f"ceph-mon --admin-socket {inst.run_root}/mon0/mon.asok", []),
            103: ("ior -w", [b"HOME=/root", f"PFSLAB_RUN_DIR={inst.state.rsplit('/', 1)[0]}/runs/{inst.lab}/x".encode()]),
        },
        netns={ns0: [201]},
        mount_table=["/", f"{inst.state}/lab/nodes/cli0/mnt", inst.mount],
        links={inst.bridge, veth0},
        paths={f"{inst.state}/lab", inst.run_root},
        dirs={inst.mount, f"/sys/fs/cgroup/{inst.cgroup}"},
    )


def test_every_kind_of_leftover_is_listed_with_lab_downs_prefixes() -> None:
    inst = of(resolved())
    host = everything_of(inst)
    ns0, veth0 = inst.nodes[0]
    assert teardown.leftovers(inst, host) == [
        f"mount {inst.state}/lab/nodes/cli0/mnt",
        f"mount {inst.mount}",
        f"namespace {ns0}",
        f"bridge {inst.bridge}",
        f"link {veth0}",
        f"process 101 ceph-osd -c {inst.state}/lab/nodes/osd0/ceph.conf",
        f"process 102 ceph-mon --admin-socket {inst.run_root}/mon0/mon.asok",
        "benchmark process 103",
        f"files {inst.state}/lab",
        f"cgroup /sys/fs/cgroup/{inst.cgroup}",
        f"files {inst.run_root}",
        f"directory {inst.mount}",
    ]


def test_the_sweep_leaves_nothing_and_says_what_it_removed(capsys: pytest.CaptureFixture[str]) -> None:
    inst = of(resolved())
    host = everything_of(inst)
    ns0, veth0 = inst.nodes[0]
    teardown.sweep(inst, host, KIT)
    assert teardown.leftovers(inst, host) == []
    err = capsys.readouterr().err
    assert f"[lab] stopping a benchmark run of lab lo+c.al that is still running: pids 103\n" in err
    assert f"[lab] stopping processes left in {ns0}: 201\n" in err
    assert "[lab] stopping processes of lab lo+c.al left running: 101 102\n" in err
    assert f"[lab] removing namespace {ns0} and link {veth0}\n" in err
    assert f"[lab] removing bridge {inst.bridge}\n" in err
    assert f"[lab] removing cgroup /sys/fs/cgroup/{inst.cgroup}\n" in err
    # The deepest mount first: the host's view is a bind under nothing, the client's is deeper.
    assert host.unmounted == sorted(host.unmounted, reverse=True)
    assert [KIT / "scripts/local/cleanup", f"{inst.state}/lab", inst.run_root, inst.mount] == \
        [Path(host.ran[-1][0]), *host.ran[-1][1:]]


def test_paths_with_plus_and_dot_match_as_text_not_as_a_pattern() -> None:
    inst = of(resolved())
    assert "+" in inst.state and "." in inst.state and "+" in inst.run_root
    # As a regular expression, /w/k+1.0/build/lo+c.al/ would match this other checkout's lab.
    regex_twin = "/w/kk1x0/build/loocxal/"
    other_checkout = of(resolved(root=Path("/w/k+1.0-2")), Path("/w/k+1.0-2/build"))
    host = FakeHost(procs={
        1: (f"ceph-osd -c {inst.state}/lab/x", []),
        2: (f"ceph-osd -c {regex_twin}lab/x", []),
        3: (f"ceph-osd -c {other_checkout.state}/lab/x", []),
        4: (f"ceph-mon -c {other_checkout.run_root}/mon0", []),
    }, mount_table=[f"{regex_twin}lab/m", f"{other_checkout.state}/lab/m", f"{inst.state}/lab/m"])
    teardown.sweep(inst, host, KIT)
    assert host.killed == [1]
    assert host.unmounted == [f"{inst.state}/lab/m"]


def test_a_bench_is_found_by_its_labs_run_directory_only() -> None:
    lab = "lo+c.al"
    host = FakeHost(procs={
        1: ("reframe", [f"PFSLAB_RUN_DIR={BUILD}/runs/{lab}/20261128T100000Z".encode()]),
        2: ("reframe", [f"PFSLAB_RUN_DIR={BUILD}/runs/{lab}2/20261128T100000Z".encode()]),
        3: ("reframe", [f"PFSLAB_RUN_DIR=/w/k+1.0-2/build/runs/{lab}/20261128T100000Z".encode()]),
        4: ("env", [f"OLD_PFSLAB_RUN_DIR={BUILD}/runs/{lab}/x".encode()]),
    }, paths={f"{BUILD}/{lab}/bench.pid"})
    assert teardown.bench_pids(lab, host, BUILD) == [1]
    teardown.stop_bench(lab, host, BUILD)
    assert host.killed == [1]
    assert not host.paths


def test_another_instances_bridge_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    mine = resolved()
    other = resolved(name="local", root=Path("/home/bob/pfslab"))
    inst = of(mine)
    assert other["targets"]["local"]["bridge"] == inst.bridge
    # This instance's own record (still there if its cleanup failed) does not keep it.
    host = FakeHost(links={inst.bridge}, lab_records=[BridgeClaim.from_json(mine), BridgeClaim.from_json(other)])
    teardown.sweep_bridge(inst, host, KIT)
    assert inst.bridge in host.links and host.ran == []
    assert f"[lab] left bridge {inst.bridge}: lab local of /home/bob/pfslab uses it\n" in capsys.readouterr().err
    # A lab on another bridge does not keep it.
    host = FakeHost(links={inst.bridge}, lab_records=[BridgeClaim.from_json(mine),
                                                          BridgeClaim.from_json(resolved(name="local", root=Path("/b"), bridge="pfslab7"))])
    teardown.sweep_bridge(inst, host, KIT)
    assert inst.bridge not in host.links


def test_a_bridge_with_foreign_ports_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    inst = of(resolved())
    host = FakeHost(links={inst.bridge, "vethsite"}, ports={inst.bridge: ["9: vethsite@if2: <UP> master"]})
    teardown.sweep_bridge(inst, host, KIT)
    assert inst.bridge in host.links and host.ran == []
    assert f"[lab] left bridge {inst.bridge}: it has ports that are not this lab's\n" in capsys.readouterr().err


def test_only_this_instances_namespaces_go_and_unlisted_ones_too() -> None:
    inst = of(resolved())
    stray = f"{inst.netns_prefix}-old9"
    foreign = of(resolved(root=Path("/home/bob/pfslab"))).nodes[0][0]
    host = FakeHost(netns={inst.nodes[1][0]: [], stray: [7], foreign: [8]}, procs={7: ("sleep", []), 8: ("sleep", [])})
    teardown.sweep(inst, host, KIT)
    assert sorted(host.netns) == [foreign]
    assert host.killed == [7]
    assert ["ip", "netns", "del", stray] in host.ran


def test_the_command_prints_nothing_when_nothing_is_left_and_the_list_otherwise(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(resolved()))
    assert teardown.main("leftovers", str(path), FakeHost()) == 0
    assert capsys.readouterr().out == ""
    inst = Instance.load(str(path))
    assert teardown.main("leftovers", str(path), FakeHost(links={inst.bridge})) == 1
    assert capsys.readouterr().out == f"bridge {inst.bridge}\n"


def test_a_lab_without_an_instance_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(labs.load("local")))
    with pytest.raises(Refusal, match="has no 'instance'"):
        Instance.load(str(path))
    assert cli.main(["lab", "leftovers", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("[lab] error: the resolved lab has no 'instance'") and err.count("\n") == 1
    assert cli.main(["lab", "stop-bench", "Bad/Name"]) == 2
    assert "LAB=Bad/Name is not a lab name" in capsys.readouterr().err


def test_this_machine_holds_nothing_of_a_lab_never_brought_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The live host, read only: /proc, /run/netns, the mount table, /sys/class/net, /sys/fs/cgroup.
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(resolved(name="never-up", root=tmp_path / "kit", bridge="pfsnever9")))
    assert cli.main(["lab", "leftovers", str(path)]) == 0
    assert capsys.readouterr().out == ""
