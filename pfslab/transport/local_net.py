"""A local lab's network (``scripts/local/netns``): one bridge per lab, one network
namespace per node, joined by a veth pair whose node side is the node's ``eth0``.

Node traffic crosses the veth pairs and the bridge, so daemons and clients talk over a
real (if virtual) network, as on a cluster. Every action is idempotent: it looks before
it adds and deletes only what is there. A namespace's and a veth's names are the ones
pfslab/names.py derived for the node (the resolved lab's ``instance.nodes``): never
derived here. Commands run through :class:`Ip` (``ip`` and the host's files), which the
tests replace."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from pfslab.errors import KitError

NETNS_DIR = "/run/netns"


class CommandFailed(KitError):
    """A command of the plumbing failed: its own message went to stderr; its status is the exit status."""

    def __init__(self, argv: Sequence[str], rc: int) -> None:
        super().__init__(f"{' '.join(argv)} failed with status {rc}")
        self.rc = rc


class Ip:
    """This machine: ``ip`` and the few files the actions look at."""

    def ok(self, argv: Sequence[str]) -> bool:
        """Whether ``argv`` succeeds; its output is not wanted."""
        return subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False).returncode == 0

    def output(self, argv: Sequence[str]) -> str:
        """What ``argv`` prints ('' when it fails: a look, not a change)."""
        done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
        return done.stdout if done.returncode == 0 else ""

    def run(self, argv: Sequence[str]) -> None:
        """A change: its messages reach stderr, its failure ends the action with its status."""
        sys.stdout.flush()
        rc = subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=sys.stderr, check=False).returncode
        if rc != 0:
            raise CommandFailed(argv, rc)

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def entries(self, path: str) -> list[str]:
        return os.listdir(path)

    def is_mount_point(self, path: str) -> bool:
        from pfslab.lifecycle import mounts

        return path in mounts.mount_points()

    def rmdir(self, path: str) -> None:
        try:
            os.rmdir(path)
        except OSError:
            pass

    def kill(self, pids: Sequence[int]) -> None:
        for pid in pids:
            try:
                os.kill(pid, 9)
            except OSError:
                pass


@dataclass
class Net:
    ip: Ip = field(default_factory=Ip)
    #: Where ``ip netns add`` puts a namespace's handle.
    netns_dir: str = NETNS_DIR

    def bridge_up(self, bridge: str, gw_cidr: str) -> None:
        if not self.ip.ok(["ip", "link", "show", bridge]):
            self.ip.run(["ip", "link", "add", bridge, "type", "bridge"])
        if f"inet {gw_cidr} " not in self.ip.output(["ip", "addr", "show", "dev", bridge]):
            self.ip.run(["ip", "addr", "add", gw_cidr, "dev", bridge])
        self.ip.run(["ip", "link", "set", bridge, "up"])

    def bridge_down(self, bridge: str) -> None:
        if self.ip.ok(["ip", "link", "show", bridge]):
            self.ip.run(["ip", "link", "del", bridge])
        # `ip netns add` turns /run/netns into a mount point; drop it once no namespace is left.
        if self.ip.exists(self.netns_dir) and not self.ip.entries(self.netns_dir):
            if self.ip.is_mount_point(self.netns_dir) and not self.ip.ok(["umount", self.netns_dir]):
                self.ip.run(["umount", "-l", self.netns_dir])
            self.ip.rmdir(self.netns_dir)

    def node_up(self, ns: str, hostif: str, bridge: str, addr_cidr: str, gw: str) -> None:
        if not self.ip.exists(f"{self.netns_dir}/{ns}"):
            self.ip.run(["ip", "netns", "add", ns])
        if not self.ip.ok(["ip", "link", "show", hostif]):
            # An eth0 left in the namespace by a pair half gone would block the new pair's.
            self.ip.ok(["ip", "-n", ns, "link", "del", "eth0"])
            self.ip.run(["ip", "link", "add", hostif, "type", "veth", "peer", "name", "eth0", "netns", ns])
        self.ip.run(["ip", "link", "set", hostif, "master", bridge, "up"])
        self.ip.run(["ip", "-n", ns, "link", "set", "lo", "up"])
        if f"inet {addr_cidr} " not in self.ip.output(["ip", "-n", ns, "addr", "show", "dev", "eth0"]):
            self.ip.run(["ip", "-n", ns, "addr", "add", addr_cidr, "dev", "eth0"])
        self.ip.run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        self.ip.run(["ip", "-n", ns, "route", "replace", "default", "via", gw])

    def node_down(self, ns: str, hostif: str, log: Log) -> None:
        if self.ip.exists(f"{self.netns_dir}/{ns}"):
            # A process still inside would keep the namespace (and its daemons) alive unseen.
            pids = [int(p) for p in self.ip.output(["ip", "netns", "pids", ns]).split() if p.isdigit()]
            if pids:
                log(f"killing leftover processes in {ns}: {' '.join(map(str, pids))} ")
                self.ip.kill(pids)
            self.ip.run(["ip", "netns", "del", ns])
        # Deleting the namespace deletes the veth pair too, asynchronously; only a pair
        # whose namespace was already gone needs deleting here.
        self.ip.ok(["ip", "link", "del", hostif])


class Log:
    """Where an action's messages go: ``[TAG] message`` on stderr."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __call__(self, message: str) -> None:
        print(f"[{self.tag}] {message}", file=sys.stderr, flush=True)


USAGE = {
    "bridge-up": "BRIDGE GATEWAY/PREFIX",
    "bridge-down": "BRIDGE",
    "node-up": "NETNS VETH BRIDGE ADDRESS/PREFIX GATEWAY",
    "node-down": "NETNS VETH",
}


def usage_problem(args: Sequence[str]) -> str | None:
    """Why ``netns ARGS`` is not a call of one of its actions (None: it is)."""
    action = args[0] if args else ""
    if action not in USAGE:
        return f"action '{action}' is not one of {', '.join(USAGE)}"
    if len(args) - 1 != len(USAGE[action].split()):
        return f"usage: netns {action} {USAGE[action]}"
    return None


def main(args: Sequence[str], net: Net | None = None) -> None:
    """``netns ACTION ARGS...`` once its usage is checked (:func:`usage_problem`)."""
    net = net or Net()
    action, rest = args[0], list(args[1:])
    if action == "bridge-up":
        net.bridge_up(*rest)
    elif action == "bridge-down":
        net.bridge_down(*rest)
    elif action == "node-up":
        net.node_up(*rest)
    else:
        net.node_down(rest[0], rest[1], Log("netns"))
