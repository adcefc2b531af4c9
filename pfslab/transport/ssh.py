"""A remote lab's node: a machine reached over SSH (cloud and bare-metal targets).

Every ssh and scp reads the lab's one SSH config (``build/<lab>/ssh/config``, written by
scripts/lib/remote.sh: the lab's key only, pinned host keys, ProxyJump through the
login node, BatchMode) with ``-F``, so neither ~/.ssh/config nor /etc/ssh/ssh_config
applies; a node is named by its name and the config says where and how. ssh's own
failure is status 255 (:data:`SSH_FAILED`)."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pfslab.transport.base import Result, bounded, bounded_shown, stream_lines

#: ssh's exit status when it could not reach the node (not the command's).
SSH_FAILED = 255

#: What ssh says when a node stops answering, for a one-line reason.
_SSH_REASONS = ("Connection refused", "No route to host", "timed out", "Permission denied",
                "closed by remote host", "Connection reset")


@dataclass(frozen=True)
class SshTransport:
    ssh_config: Path
    #: The kit on the nodes (PFSLAB_REMOTE_ROOT) and the node config there (PFSLAB_REMOTE_CONFIG).
    remote_root: str = "/opt/pfslab"
    remote_config: str = "/etc/pfslab/node.json"

    def argv(self, node: str, command: Sequence[str]) -> list[str]:
        """ssh joins its arguments into one remote shell line: one word here, quoted
        where it needs it, so the node's shell sees the words given."""
        return ["ssh", "-F", str(self.ssh_config), "-n", node, " ".join(_word(w) for w in command)]

    def shell_argv(self, node: str, script: str) -> list[str]:
        """A shell line run as it is on the node (``cd /opt/pfslab && ...``)."""
        return ["ssh", "-F", str(self.ssh_config), "-n", node, script]

    def role_command(self, family: str, *args: str) -> list[str]:
        return [f"PFSLAB_NODE_CONFIG={self.remote_config}", f"{self.remote_root}/scripts/roles/{family}", *args]

    def run(self, node: str, command: Sequence[str], timeout: float) -> Result:
        return bounded(self.argv(node, command), timeout)

    def run_shown(self, node: str, command: Sequence[str], timeout: float) -> Result:
        return bounded_shown(self.argv(node, command), timeout)

    def run_shell(self, node: str, script: str, timeout: float) -> Result:
        return bounded(self.shell_argv(node, script), timeout)

    def copy(self, node: str, source: Path, destination: str, timeout: float) -> Result:
        return bounded(["scp", "-F", str(self.ssh_config), "-q", str(source), f"{node}:{destination}"], timeout)

    def copy_between(self, source: str, paths: Sequence[str], node: str, directory: str, timeout: float) -> Result:
        """Files of node ``source`` into ``directory`` on ``node``, host to host through
        this machine (scp -3: the bytes pass through its memory, never its disk), modes
        kept; scp's messages go to stderr as they come."""
        return bounded_shown(["scp", "-3", "-q", "-p", "-F", str(self.ssh_config),
                              *(f"{source}:{p}" for p in paths), f"{node}:{directory}/"], timeout)

    def run_shell_shown(self, node: str, script: str, timeout: float) -> Result:
        return bounded_shown(self.shell_argv(node, script), timeout)

    def stream(self, node: str, command: Sequence[str]) -> Iterator[str]:
        return stream_lines(self.argv(node, command))


def _word(word: str) -> str:
    # VAR=value stays an assignment for the remote shell: only its value is quoted.
    name, eq, value = word.partition("=")
    if eq and name.isidentifier():
        return f"{name}={shlex.quote(value)}"
    return shlex.quote(word)


def unreachable_reason(output: str) -> str:
    """The part of ssh's output that says why a node did not answer (else "ssh failed")."""
    return next((r for r in _SSH_REASONS if r in output), "ssh failed")
