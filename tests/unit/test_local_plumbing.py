"""The local lab's plumbing on this machine (scripts/local/*, scripts/throttle, now
pfslab/transport/local_net.py, local_node.py, pfslab/lifecycle/local_dirs.py, throttle.py
behind ``pfslab local`` and ``pfslab throttle``): the commands each network action runs
and skips, the directories made and removed, a node's files, the CPU throttle's cgroup."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from pfslab.lifecycle import Refusal, local_command, local_dirs, mounts, throttle
from pfslab.transport import local_net, local_node


class FakeIp(local_net.Ip):
    """A host where ``links`` and ``addrs`` exist; records every change."""

    def __init__(self, tmp: Path, links: set[str] = set(), addrs: str = "", pids: str = "") -> None:
        self.links, self.addrs, self.pids = set(links), addrs, pids
        self.changes: list[list[str]] = []
        self.killed: list[int] = []
        self.netns_dir = tmp / "netns"

    def ok(self, argv: Sequence[str]) -> bool:
        if list(argv[:3]) == ["ip", "link", "show"]:
            return argv[3] in self.links
        self.changes.append(list(argv))
        return True

    def output(self, argv: Sequence[str]) -> str:
        return self.pids if "pids" in argv else self.addrs

    def run(self, argv: Sequence[str]) -> None:
        self.changes.append(list(argv))

    def is_mount_point(self, path: str) -> bool:
        return True

    def kill(self, pids: Sequence[int]) -> None:
        self.killed += pids


def net(ip: FakeIp) -> local_net.Net:
    return local_net.Net(ip, str(ip.netns_dir))


def test_a_bridge_is_added_with_its_gateway_once(tmp_path: Path) -> None:
    ip = FakeIp(tmp_path)
    net(ip).bridge_up("pfslab9", "10.9.0.1/24")
    assert ip.changes == [["ip", "link", "add", "pfslab9", "type", "bridge"],
                          ["ip", "addr", "add", "10.9.0.1/24", "dev", "pfslab9"], ["ip", "link", "set", "pfslab9", "up"]]
    # Again, with the bridge and its address there: only set up.
    ip = FakeIp(tmp_path, links={"pfslab9"}, addrs="    inet 10.9.0.1/24 brd 10.9.0.255 scope global pfslab9\n")
    net(ip).bridge_up("pfslab9", "10.9.0.1/24")
    assert ip.changes == [["ip", "link", "set", "pfslab9", "up"]]


def test_a_node_gets_its_namespace_veth_address_and_route(tmp_path: Path) -> None:
    ip = FakeIp(tmp_path)
    net(ip).node_up("pfs-x-cli0", "vx-cli0", "pfslab9", "10.9.0.14/24", "10.9.0.1")
    assert ip.changes == [
        ["ip", "netns", "add", "pfs-x-cli0"],
        ["ip", "-n", "pfs-x-cli0", "link", "del", "eth0"],
        ["ip", "link", "add", "vx-cli0", "type", "veth", "peer", "name", "eth0", "netns", "pfs-x-cli0"],
        ["ip", "link", "set", "vx-cli0", "master", "pfslab9", "up"],
        ["ip", "-n", "pfs-x-cli0", "link", "set", "lo", "up"],
        ["ip", "-n", "pfs-x-cli0", "addr", "add", "10.9.0.14/24", "dev", "eth0"],
        ["ip", "-n", "pfs-x-cli0", "link", "set", "eth0", "up"],
        ["ip", "-n", "pfs-x-cli0", "route", "replace", "default", "via", "10.9.0.1"]]
    # Again, everything there: no namespace, pair or address added a second time.
    ip = FakeIp(tmp_path, links={"vx-cli0"}, addrs="    inet 10.9.0.14/24 scope global eth0\n")
    ip.netns_dir.mkdir()
    (ip.netns_dir / "pfs-x-cli0").touch()
    net(ip).node_up("pfs-x-cli0", "vx-cli0", "pfslab9", "10.9.0.14/24", "10.9.0.1")
    assert not [c for c in ip.changes if "add" in c]


def test_a_node_down_kills_what_is_left_inside_then_deletes_the_namespace(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    ip = FakeIp(tmp_path, pids="301\n302\n")
    ip.netns_dir.mkdir()
    (ip.netns_dir / "pfs-x-osd0").touch()
    local_net.Net(ip, str(ip.netns_dir)).node_down("pfs-x-osd0", "vx-osd0", local_net.Log("netns"))
    assert ip.killed == [301, 302]
    assert ip.changes == [["ip", "netns", "del", "pfs-x-osd0"], ["ip", "link", "del", "vx-osd0"]]
    assert capsys.readouterr().err == "[netns] killing leftover processes in pfs-x-osd0: 301 302 \n"
    # A namespace already gone: only its host link is deleted.
    (ip.netns_dir / "pfs-x-osd0").unlink()
    ip.changes = []
    net(ip).node_down("pfs-x-osd0", "vx-osd0", local_net.Log("netns"))
    assert ip.changes == [["ip", "link", "del", "vx-osd0"]]


def test_the_last_bridge_down_takes_the_empty_netns_directory_away(tmp_path: Path) -> None:
    ip = FakeIp(tmp_path, links={"pfslab9"})
    ip.netns_dir.mkdir()
    net(ip).bridge_down("pfslab9")
    assert ip.changes == [["ip", "link", "del", "pfslab9"], ["umount", str(ip.netns_dir)]]
    assert not ip.netns_dir.exists()


@pytest.mark.parametrize(("args", "problem"), [
    ([], "action '' is not one of bridge-up, bridge-down, node-up, node-down"),
    (["up"], "action 'up' is not one of bridge-up, bridge-down, node-up, node-down"),
    (["node-down", "ns"], "usage: netns node-down NETNS VETH"),
    (["bridge-up", "b", "10.0.0.1/24", "x"], "usage: netns bridge-up BRIDGE GATEWAY/PREFIX"),
    (["node-up", "a", "b", "c", "d", "e"], None),
])
def test_netns_usage(args: list[str], problem: str | None) -> None:
    assert local_net.usage_problem(args) == problem


def _no_mounts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mounts, "mountinfo", lambda: [])


def test_prepare_makes_and_cleanup_removes_the_lab_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    _no_mounts(monkeypatch)
    state, run, mount = tmp_path / "b/lab", tmp_path / "run/pfslab/l-1", tmp_path / "mnt/pfslab/l"
    local_dirs.prepare(str(state), str(run), str(mount))
    assert (state / "nodes").is_dir() and (run / "hosts").is_dir() and mount.is_dir()
    (state / "nodes" / "osd0.img").write_text("x")
    local_dirs.cleanup(str(state), str(run), str(mount))
    assert not state.exists() and not run.exists() and not (tmp_path / "run/pfslab").exists()
    assert not (tmp_path / "mnt/pfslab").exists()
    assert capsys.readouterr().err == ""
    # A mount path someone filled stays, and says so.
    mount.mkdir(parents=True)
    (mount / "mine").write_text("x")
    local_dirs.cleanup(str(state), str(run), str(mount))
    assert (mount / "mine").exists()
    assert capsys.readouterr().err == f"[cleanup] left {mount} in place: it is not empty\n"


def test_cleanup_unmounts_what_is_left_under_the_state_deepest_first(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "lab"
    left = [f"{state}/nodes/cli0/mnt", f"{state}/nodes/cli0/mnt/deeper", f"{tmp_path}/lab-other/x"]
    monkeypatch.setattr(mounts, "mounts_under", lambda root: [m for m in left if m.startswith(root + "/")])
    monkeypatch.setattr(mounts, "mount_points", lambda: [])
    unmounted: list[str] = []

    def unmount(target: str, grace: int, tag: str) -> bool:
        unmounted.append(target)
        return True

    monkeypatch.setattr(mounts, "unmount_bounded", unmount)
    local_dirs.cleanup(str(state), str(tmp_path / "run"), str(tmp_path / "mnt"))
    assert unmounted == [left[1], left[0]]


@pytest.mark.parametrize("path", ["relative/lab", "/"])
def test_cleanup_refuses_a_path_that_is_not_below_the_root(path: str) -> None:
    with pytest.raises(Refusal, match=f"refusing to remove '{path}': not an absolute path below /"):
        local_dirs.cleanup(path, "/run/x", "/mnt/x")


def test_the_node_files_are_rewritten_whole_from_the_environment(tmp_path: Path) -> None:
    config, record = tmp_path / "nodes/cli0/node.json", tmp_path / "cli0"
    local_node.write_node_files(config, record, {"NODE_CONFIG": '{"a": 1}', "NODE_RECORD": "10.9.0.14 cli0 ns s d"})
    local_node.write_node_files(config, record, {"NODE_CONFIG": "{}", "NODE_RECORD": "r"})
    assert (config.read_text(), record.read_text()) == ("{}\n", "r\n")
    with pytest.raises(local_node.NodeFileError, match="NODE_CONFIG and NODE_RECORD must be set"):
        local_node.write_node_files(config, record, {"NODE_CONFIG": "{}"})


def _node(tmp_path: Path, name: str, *roles: str) -> Path:
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps({"node": {"name": name, "roles": list(roles)},
                                  "paths": {"cluster": str(tmp_path / name / "cluster")}}))
    return config


def test_a_node_gets_only_its_roles_cluster_files_modes_kept(tmp_path: Path) -> None:
    src = tmp_path / "mon0" / "cluster"
    src.mkdir(parents=True)
    for name, mode in (("ceph.conf", 0o644), ("ceph.client.pfslab.keyring", 0o600), ("ceph.mon.keyring", 0o600)):
        (src / name).write_text(name)
        (src / name).chmod(mode)
    local_node.cluster_files(src, _node(tmp_path, "cli0", "ceph-client"))
    dst = tmp_path / "cli0" / "cluster"
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in dst.iterdir()} == {
        "ceph.conf": "0o644", "ceph.client.pfslab.keyring": "0o600"}
    assert dst.stat().st_mode & 0o777 == 0o700
    # An identical file is left alone; a changed one is copied again.
    before = (dst / "ceph.client.pfslab.keyring").stat().st_ino
    (src / "ceph.conf").write_text("changed")
    local_node.cluster_files(src, _node(tmp_path, "cli0", "ceph-client"))
    assert (dst / "ceph.client.pfslab.keyring").stat().st_ino == before
    assert (dst / "ceph.conf").read_text() == "changed"


def test_the_first_slurm_node_makes_the_munge_key_once(tmp_path: Path) -> None:
    src = tmp_path / "mon0" / "cluster"
    src.mkdir(parents=True)
    local_node.cluster_files(src, _node(tmp_path, "cli0", "ceph-client", "slurm-node"))
    key = src / "munge.key"
    assert (key.stat().st_size, key.stat().st_mode & 0o777) == (1024, 0o400)
    made = key.read_bytes()
    local_node.cluster_files(src, _node(tmp_path, "cli1", "slurm-node"))
    assert (tmp_path / "cli1" / "cluster" / "munge.key").read_bytes() == made == key.read_bytes()
    assert [p.name for p in src.iterdir()] == ["munge.key"]  # no temporary file left


def test_a_missing_node_config_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(local_node.NodeFileError, match=f"node config '{tmp_path}/none.json' does not exist"):
        local_node.cluster_files(tmp_path, tmp_path / "none.json")


# ---- throttle ------------------------------------------------------------------------

class ScratchCgroups(throttle.Cgroups):
    def rmdir(self, path: Path) -> None:
        for f in path.iterdir():
            f.unlink()
        path.rmdir()


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, ScratchCgroups]:
    """A kit whose lab lo is up with two ceph-osd pid files, and a v2 cgroup tree."""
    monkeypatch.delenv("PFSLAB_LAB_JSON", raising=False)
    kit, run = tmp_path / "kit", tmp_path / "run"
    (kit / "build" / "lo").mkdir(parents=True)
    (kit / "build" / "active-lab").write_text("lo\n")
    (kit / "build" / "lo" / "lab.json").write_text(json.dumps(
        {"name": "lo", "instance": {"cgroup": "pfslab-throttle-lo-abc", "run_root": str(run)}}))
    for node, pid in (("osd0", "11"), ("osd1", "12")):
        (run / node).mkdir(parents=True)
        (run / node / f"ceph-osd.{node[-1]}.pid").write_text(pid + "\n")
    (run / "mon0").mkdir()
    (run / "mon0" / "ceph-mon.a.pid").write_text("9\n")
    fs = ScratchCgroups(tmp_path / "cg", tmp_path / "cg" / "cpu")
    fs.v2.mkdir()
    (fs.v2 / "cgroup.controllers").write_text("cpuset cpu io memory\n")
    (fs.v2 / "cgroup.procs").write_text("")
    return kit, fs


def test_throttle_on_moves_the_daemons_into_a_quota_and_off_releases_them(
        lab: tuple[Path, ScratchCgroups], capsys: pytest.CaptureFixture[str]) -> None:
    kit, fs = lab
    group = fs.v2 / "pfslab-throttle-lo-abc"
    group.mkdir()
    (group / "cpu.max").write_text("max 100000\n")  # what the kernel puts in a new cgroup
    throttle.main(["on", "7"], fs, kit)
    assert (group / "cpu.max").read_text() == "7000 100000\n"
    assert (group / "cgroup.procs").read_text() == "12\n"  # the last write (one pid a write)
    assert capsys.readouterr().err == f"[throttle] 2 ceph-osd process(es) of lab lo limited to 7 % of one CPU ({group})\n"
    (group / "cgroup.procs").write_text("11\n12\n")
    assert throttle.status(fs, kit) == f"{group}: 2 process(es), quota 7000 100000"
    throttle.main(["off"], fs, kit)
    assert not group.exists()
    assert (fs.v2 / "cgroup.procs").read_text() == "12\n"
    assert capsys.readouterr().err == f"[throttle] released the daemons of lab lo ({group} removed)\n"
    assert throttle.status(fs, kit) == "lab lo: nothing throttled"


def test_throttle_v1_and_its_refusals(lab: tuple[Path, ScratchCgroups]) -> None:
    kit, fs = lab
    (fs.v2 / "cgroup.controllers").write_text("memory\n")
    with pytest.raises(Refusal, match="no cgroup cpu controller here"):
        throttle.main(["on"], fs, kit)
    fs.v1.mkdir()
    (fs.v1 / "cpu.cfs_quota_us").write_text("-1\n")
    throttle.main(["on", "50", "ceph-mon"], fs, kit)
    group = fs.v1 / "pfslab-throttle-lo-abc"
    assert ((group / "cpu.cfs_quota_us").read_text(), (group / "cgroup.procs").read_text()) == ("50000\n", "9\n")
    with pytest.raises(Refusal, match="^no running ceph-mds in lab lo$"):
        throttle.main(["on", "5", "ceph-mds"], fs, kit)
    for percent in ("0", "101", "5.5", "x"):
        with pytest.raises(Refusal, match=f"PERCENT={percent} is not allowed; give a whole number from 1 to 100"):
            throttle.main(["on", percent], fs, kit)
    with pytest.raises(Refusal, match="action 'up' is not one of on, off, status"):
        throttle.main(["up"], fs, kit)
    (kit / "build" / "active-lab").unlink()
    with pytest.raises(Refusal, match="no lab is up; run 'make lab-up' first"):
        throttle.main(["status"], fs, kit)


# ---- the commands, as their scripts spoke -----------------------------------------------

def test_each_action_refuses_as_its_script_did(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    for args, line in (
        (["prepare", "a"], "[prepare] error: usage: prepare STATE_ROOT RUN_ROOT MOUNT_PATH"),
        (["unmount", "mnt"], "[unmount] error: TARGET 'mnt' is not an absolute path"),
        (["bind-mount"], "[bind-mount] error: usage: bind-mount SOURCE TARGET"),
        (["node-config", "a"], "[node-config] error: usage: NODE_CONFIG=JSON NODE_RECORD=LINE node-config CONFIG RECORD"),
        (["cluster-files", "/s", "/none.json"], "[cluster-files] error: node config '/none.json' does not exist"),
        (["netns", "node-down", "x"], "[netns] error: usage: netns node-down NETNS VETH"),
        (["nsrsh"], "[local] error: action 'nsrsh' is not one of netns, prepare, cleanup, bind-mount, unmount, "
                    "node-config, cluster-files"),
    ):
        assert local_command.main(args) == 2
        assert capsys.readouterr().err == line + "\n"
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert local_command.main(["netns", "bridge-down", "b"]) == 2
    assert capsys.readouterr().err == ("[netns] error: the local lab's network needs root (it creates network "
                                       "namespaces, mounts and daemons); run it as root or with sudo\n")
    assert local_command.throttle_main(["status"]) == 2
    assert capsys.readouterr().err.startswith("[throttle] error: scripts/throttle needs root")
