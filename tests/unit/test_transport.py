"""How a command reaches a node (pfslab/transport): the exact ssh command lines, a
local node's command through a stand-in node-exec, the time bound, and the choice of
transport from the target's registry flag, not its name."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from pfslab import registry, transport
from pfslab.model import Inventory
from pfslab.transport import TIMED_OUT, bounded, for_lab
from pfslab.transport.local import LocalTransport
from pfslab.transport.ssh import SshTransport, unreachable_reason


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_ssh_runs_a_role_step_with_the_labs_config_and_the_node_config() -> None:
    ssh = SshTransport(Path("/b/lab/ssh/config"))
    assert ssh.argv("mds0", ssh.role_command("beegfs", "health", "storage")) == [
        "ssh", "-F", "/b/lab/ssh/config", "-n", "mds0",
        "PFSLAB_NODE_CONFIG=/etc/pfslab/node.json /opt/pfslab/scripts/roles/beegfs health storage"]


def test_ssh_quotes_each_word_so_the_node_shell_sees_the_words_given() -> None:
    ssh = SshTransport(Path("c"), "/srv/kit", "/srv/node config.json")
    assert ssh.argv("n", ssh.role_command("ceph", "a b", "$HOME"))[-1] == \
        "PFSLAB_NODE_CONFIG='/srv/node config.json' /srv/kit/scripts/roles/ceph 'a b' '$HOME'"
    assert ssh.shell_argv("n", "cd /opt && x")[-1] == "cd /opt && x"


def test_ssh_run_gives_ssh_status_and_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(tmp_path / "bin" / "ssh", 'echo "ssh: connect to host $4 port 22: No route to host" >&2; exit 255\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    done = SshTransport(tmp_path / "config").run("cli0", ["true"], 5)
    assert done.rc == 255
    assert unreachable_reason(done.output) == "No route to host"


def test_ssh_copies_with_scp_and_the_same_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(tmp_path / "bin" / "scp", 'echo "scp $*"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    done = SshTransport(Path("/b/l/ssh/config")).copy("osd0", Path("/tmp/ceph.conf"), "/etc/ceph/ceph.conf", 5)
    assert done == transport.Result(0, "scp -F /b/l/ssh/config -q /tmp/ceph.conf osd0:/etc/ceph/ceph.conf\n")


def test_local_runs_through_node_exec_with_the_node_namespace_and_config(tmp_path: Path) -> None:
    # A stand-in node-exec: no namespace, the role's view of its config only.
    _script(tmp_path / "kit/scripts/local/node-exec", 'echo "netns=$1"; PFSLAB_NODE_CONFIG=$2 exec "${@:3}"\n')
    _script(tmp_path / "kit/scripts/roles/ceph", 'echo "config=$PFSLAB_NODE_CONFIG $*"; exit 3\n')
    local = LocalTransport.of_inventory(Inventory.from_json({"target": "local", "nodes": [], "filesystem": {"mount": "/m"},
                                                                     "local": {"netns": {"mon0": "x-mon0"}, "state_root": "/s"}}),
                                        tmp_path / "kit")
    done = local.run("mon0", local.role_command("ceph", "health", "service"), 5)
    assert (done.rc, done.output) == (3, "netns=x-mon0\nconfig=/s/nodes/mon0/node.json health service\n")
    with pytest.raises(KeyError, match="'osd9' is not in the lab's namespaces"):
        local.argv("osd9", ["true"])


def test_a_command_over_its_time_is_abandoned_with_124(tmp_path: Path) -> None:
    start = time.monotonic()
    done = bounded(["bash", "-c", "echo started; exec sleep 30"], 0.5)
    assert done.rc == TIMED_OUT
    assert done.output == "started\n"
    assert time.monotonic() - start < 5


def test_stream_gives_lines_as_they_come(tmp_path: Path) -> None:
    _script(tmp_path / "kit/scripts/local/node-exec", 'exec "${@:3}"\n')
    local = LocalTransport(tmp_path / "kit", {"cli0": "ns"}, tmp_path)
    assert list(local.stream("cli0", ["printf", "a\\nb\\n"])) == ["a", "b"]


def test_the_transport_follows_the_target_flag_not_its_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    inv = Inventory.from_json({"target": "local", "nodes": [], "filesystem": {"mount": "/m"},
                               "local": {"netns": {}, "state_root": "/s"}})
    assert isinstance(for_lab("l", inv, tmp_path, tmp_path / "build", "/opt/pfslab", "/c"), LocalTransport)
    # The same name with namespaces false is reached over SSH.
    real = registry.targets()
    fake = {**real, "local": registry.Target(**{**real["local"].__dict__, "namespaces": False})}
    monkeypatch.setattr(registry, "targets", lambda: fake)
    chosen = transport.for_lab("l", inv, tmp_path, tmp_path / "build", "/opt/pfslab", "/c")
    assert isinstance(chosen, SshTransport)
    assert chosen.ssh_config == tmp_path / "build" / "l" / "ssh" / "config"
