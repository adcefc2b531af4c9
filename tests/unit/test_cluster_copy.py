"""A remote lab's cluster files copied from the bootstrap node (pfslab/lifecycle/cluster_copy.py,
``pfslab lab cluster-copy LAB``) with a fake SSH transport: each node gets only what its
roles use, host to host (scp -3, never through this machine's disk), a copy out of its
time is named with its variable, nothing is copied when the bootstrap node made no files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pfslab.lifecycle import Refusal, cluster_copy
from pfslab.model import Inventory
from pfslab.transport import TIMED_OUT, Result
from pfslab.transport.ssh import SshTransport
from tests.unit.test_phases import FakeClock


def inventory(slurm: bool = False) -> Inventory:
    return Inventory.from_json({"target": "baremetal", "nodes": [{"name": "mon0", "roles": ["ceph-mon", "ceph-mgr"]},
                      {"name": "osd0", "roles": ["ceph-osd"]},
                      {"name": "cli0", "roles": ["ceph-client", *(["slurm-node"] if slurm else [])]}],
            "phases": [[{"node": "mon0", "role": "ceph-mon"}], [{"node": "osd0", "role": "ceph-osd"}]]})


@dataclass
class FakeSsh:
    clock: FakeClock
    listing: str = "ceph.client.admin.keyring\nceph.client.bootstrap-osd.keyring\nceph.client.pfslab.keyring\n" \
                   "ceph.conf\nceph.mon.keyring\nmonmap\nmunge.key\n"
    copy_takes: float = 0.0
    remote_root: str = "/opt/pfslab"
    calls: list[str] = field(default_factory=list)

    def run_shell(self, node: str, script: str, timeout: float) -> Result:
        self.calls.append(f"{node}: {script}")
        return Result(0, self.listing if script.startswith("ls -A") else "")

    def run_shell_shown(self, node: str, script: str, timeout: float) -> Result:
        self.calls.append(f"{node}: {script}")
        return Result(0, "")

    def copy_between(self, source: str, paths: Sequence[str], node: str, directory: str, timeout: float) -> Result:
        self.calls.append(f"{source} -> {node}:{directory}: {' '.join(paths)}")
        if self.copy_takes >= timeout:
            self.clock.now += timeout
            return Result(TIMED_OUT, "")
        return Result(0, "")


def copy(ssh: FakeSsh, inv: Inventory, env: dict[str, str] | None = None) -> None:
    cluster_copy.copy_cluster("lab1", inv, ssh, "remote", env or {}, ssh.clock)


def test_each_node_gets_only_what_its_roles_use_from_the_bootstrap_node(capsys: pytest.CaptureFixture[str]) -> None:
    ssh = FakeSsh(FakeClock())
    copy(ssh, inventory())
    p = "/etc/pfslab/cluster"
    assert ssh.calls == [
        f"mon0: ls -A '{p}' 2>/dev/null",
        f"osd0: mkdir -p '{p}' && chmod 700 '{p}'",
        f"mon0 -> osd0:{p}: {p}/ceph.client.bootstrap-osd.keyring {p}/ceph.conf",
        f"cli0: mkdir -p '{p}' && chmod 700 '{p}'",
        f"mon0 -> cli0:{p}: {p}/ceph.client.pfslab.keyring {p}/ceph.conf"]
    assert capsys.readouterr().err.splitlines() == [
        "[remote] copied to osd0 what its roles use: ceph.client.bootstrap-osd.keyring ceph.conf",
        "[remote] copied to cli0 what its roles use: ceph.client.pfslab.keyring ceph.conf"]


def test_a_lab_with_slurm_makes_the_munge_key_on_the_bootstrap_node_first() -> None:
    ssh = FakeSsh(FakeClock())
    copy(ssh, inventory(slurm=True))
    assert ssh.calls[0].startswith("mon0: bash -c 'set -e; source /opt/pfslab/scripts/lib/common.sh;")
    assert ssh.calls[0].endswith("munge_key_make /etc/pfslab/cluster/munge.key'")
    assert ssh.calls[-1].endswith("/etc/pfslab/cluster/ceph.client.pfslab.keyring /etc/pfslab/cluster/ceph.conf "
                                  "/etc/pfslab/cluster/munge.key")


def test_no_cluster_files_nothing_copied(capsys: pytest.CaptureFixture[str]) -> None:
    ssh = FakeSsh(FakeClock(), listing="")
    copy(ssh, inventory())
    assert ssh.calls == ["mon0: ls -A '/etc/pfslab/cluster' 2>/dev/null"]
    assert "[remote] the bootstrap node mon0 has no cluster files in /etc/pfslab/cluster; nothing to distribute" \
        in capsys.readouterr().err


def test_a_copy_out_of_its_time_is_named_with_its_variable() -> None:
    ssh = FakeSsh(FakeClock(), copy_takes=99)
    with pytest.raises(Refusal) as err:
        copy(ssh, inventory(), {"PFSLAB_COPY_TIMEOUT": "1"})
    assert str(err.value) == ("copying the cluster files from mon0 on node osd0 of lab lab1 did not finish within 1s, "
                              "its limit; if it needs longer, run the command again with PFSLAB_COPY_TIMEOUT=<seconds> "
                              "in its environment (default 600)")


def test_the_ssh_transport_copies_host_to_host_with_scp_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "scp").write_text('#!/bin/sh\necho "scp $*" >&2\n')
    (tmp_path / "scp").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    done = SshTransport(tmp_path / "config").copy_between("mon0", ["/c/a", "/c/b"], "osd0", "/c", 30)
    assert (done.rc, done.output) == (0, "")
    assert capfd.readouterr().err == f"scp -3 -q -p -F {tmp_path}/config mon0:/c/a mon0:/c/b osd0:/c/\n"
