"""A local lab's teardown proof (scripts/lab down): what Terraform's destroy did not
remove is removed by name, then everything the lab could have left is looked for.

What no Terraform state holds: a step that failed part way (a namespace made before its
veth failed, a daemon whose start failed after it forked), a destroy that failed, a
benchmark run that was killed. Everything is found by the names the lab instance's
record gives (its resolved lab's ``instance`` block, :mod:`pfslab.names`), so another
checkout's lab of the same name is never touched. Paths are matched as plain text: a
lab name or checkout path may hold '+' and '.'.

The machine is reached through :class:`Host` only, so each rule is tested with a fake
(tests/unit/test_teardown.py); :class:`LiveHost` is this machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pfslab import KIT_ROOT, instance, names
from pfslab.lifecycle import Refusal, check_lab_name, log, mounts
from pfslab.model import BridgeClaim, Lab, ModelError

TAG = "lab"
#: Half-second polls a killed benchmark run gets to be gone.
BENCH_POLLS = 20
#: Seconds each step of an unmount may take (unmount_bounded's grace).
UNMOUNT_GRACE_S = 10
CGROUP_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/cpu")


class Host(Protocol):
    """What the teardown reads and changes on this machine."""

    def pids(self) -> list[int]:
        """Every process (/proc/[0-9]*) but this one and its ancestors: the command
        taking the lab down is never its own leftover."""

    def environ(self, pid: int) -> list[bytes]:
        """The process's environment entries ([] when it is gone or unreadable)."""

    def cmdline(self, pid: int) -> str | None:
        """Its arguments joined by spaces, as pgrep -f matches them (None: gone or a kernel thread)."""

    def kill(self, pids: Iterable[int]) -> None: ...

    def namespaces(self) -> list[str]:
        """The named network namespaces (ip netns list)."""

    def namespace_pids(self, ns: str) -> list[int]: ...

    def mounts(self) -> list[str]:
        """Every mount point, in the mount table's order."""

    def unmount(self, target: str) -> None: ...

    def link_exists(self, name: str) -> bool: ...

    def link_ports(self, bridge: str) -> list[str]:
        """The links whose master is ``bridge``."""

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def run(self, argv: Sequence[str]) -> int:
        """Run a command, its output on stderr (stdout is the leftovers list); its status."""

    def records(self) -> list[BridgeClaim]:
        """What the resolved labs of the local labs up on this machine (/run/pfslab/*/lab.json)."""

    def remove_cgroup(self, path: str) -> None:
        """Move the cgroup's processes to its parent and remove it."""

    def remove(self, path: str) -> None: ...

    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class Instance:
    """The names one lab instance's things have on this machine."""

    lab: str
    #: build/<lab> of the checkout (scripts/lab's state_dir).
    state: str
    run_root: str
    mount: str
    bridge: str
    cgroup: str
    netns_prefix: str
    id: str
    #: (namespace, host side of the veth pair) per node, in the record's order.
    nodes: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, resolved: Lab, build: Path | None = None) -> Instance:
        """From a resolved lab with its instance (build/<lab>/lab.json, pfslab lab show --instance)."""
        inst = resolved.instance
        for key, value in ((instance.KEY, inst), ("targets.local.bridge", resolved.bridge)):
            if value is None:
                raise Refusal(f"the resolved lab has no '{key}': give a local lab's resolved copy "
                              "(build/<lab>/lab.json, or 'pfslab lab show LAB --instance')")
        assert inst is not None and resolved.bridge is not None
        check_lab_name(resolved.name)
        return cls(resolved.name, str((build or KIT_ROOT / "build") / resolved.name), inst.run_root, resolved.mount,
                   resolved.bridge, inst.cgroup, inst.netns_prefix, inst.id,
                   tuple((n.netns, n.veth) for _, n in inst.nodes))

    @classmethod
    def load(cls, path: str) -> Instance:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise Refusal(f"cannot read the resolved lab {path}: {err}") from None
        if not isinstance(data, dict):
            raise Refusal(f"{path} is not a resolved lab (a JSON object)")
        try:
            return cls.of(Lab.from_json(data, path))
        except ModelError as err:
            raise Refusal(str(err)) from None

    def holds(self, command_line: str) -> bool:
        """The command line names this instance's state or run root (plain text, not a pattern)."""
        return f"{self.state}/" in command_line or f"{self.run_root}/" in command_line

    def cgroups(self) -> list[str]:
        return [f"{root}/{self.cgroup}" for root in CGROUP_ROOTS]


# ---- benchmark runs ------------------------------------------------------------------

def bench_pids(lab: str, host: Host, build: Path | None = None) -> list[int]:
    """Processes of a benchmark run of the lab (bench, ReFrame, job scripts, mpirun,
    ranks): each carries the PFSLAB_RUN_DIR of one of the lab's runs."""
    marker = f"PFSLAB_RUN_DIR={build or KIT_ROOT / 'build'}/runs/{lab}/".encode()
    return [pid for pid in host.pids() if any(e.startswith(marker) for e in host.environ(pid))]


def stop_bench(lab: str, host: Host, build: Path | None = None) -> None:
    """What an interrupted bench left running against the lab (one still running holds
    the lab's lock: lab-down is refused) would hold the file system open and keep the
    clients busy: ended before anything stops."""
    pids = bench_pids(lab, host, build)
    if not pids:
        return
    log(TAG, f"stopping a benchmark run of lab {lab} that is still running: pids {' '.join(map(str, pids))}")
    host.kill(pids)
    for _ in range(BENCH_POLLS):
        if not bench_pids(lab, host, build):
            break
        host.sleep(0.5)
    host.remove(f"{(build or KIT_ROOT / 'build') / lab}/bench.pid")


# ---- the sweep -----------------------------------------------------------------------

def instance_namespaces(inst: Instance, host: Host) -> list[str]:
    return [ns for ns in host.namespaces() if ns.startswith(f"{inst.netns_prefix}-")]


def instance_mounts(inst: Instance, host: Host) -> list[str]:
    """Under its state, and its common mount path."""
    return [m for m in host.mounts() if m.startswith(f"{inst.state}/") or m == inst.mount]


def lab_processes(inst: Instance, host: Host) -> list[tuple[int, str]]:
    found = []
    for pid in host.pids():
        line = host.cmdline(pid)
        if line is not None and inst.holds(line):
            found.append((pid, line))
    return found


def sweep(inst: Instance, host: Host, kit: Path = KIT_ROOT) -> None:
    """Remove what is left of the instance, by name."""
    stop_bench(inst.lab, host, Path(inst.state).parent)
    for ns in instance_namespaces(inst, host):
        pids = host.namespace_pids(ns)
        if pids:
            log(TAG, f"stopping processes left in {ns}: {' '.join(map(str, pids))}")
            host.kill(pids)
    pids = [pid for pid, _ in lab_processes(inst, host)]
    if pids:
        log(TAG, f"stopping processes of lab {inst.lab} left running: {' '.join(map(str, pids))}")
        host.kill(pids)
    # Deepest first: a mount under another keeps the outer one busy.
    for target in sorted(instance_mounts(inst, host), reverse=True):
        log(TAG, f"unmounting {target}")
        host.unmount(target)
    netns = str(kit / "scripts" / "local" / "netns")
    for ns, veth in inst.nodes:
        if host.exists(f"/run/netns/{ns}") or host.link_exists(veth):
            log(TAG, f"removing namespace {ns} and link {veth}")
            host.run([netns, "node-down", ns, veth])
    # Namespaces of the instance that its record does not list (a lab file changed since).
    for ns in instance_namespaces(inst, host):
        log(TAG, f"removing namespace {ns}")
        host.run(["ip", "netns", "del", ns])
    sweep_bridge(inst, host, kit)
    for path in inst.cgroups():
        if host.is_dir(path):
            log(TAG, f"removing cgroup {path}")
            host.remove_cgroup(path)
    lab_files = f"{inst.state}/lab"
    if host.exists(lab_files) or host.exists(inst.run_root) or host.is_dir(inst.mount):
        host.run([str(kit / "scripts" / "local" / "cleanup"), lab_files, inst.run_root, inst.mount])


def sweep_bridge(inst: Instance, host: Host, kit: Path = KIT_ROOT) -> None:
    """The lab's bridge goes with the lab, unless another lab instance that is up names
    it or it still has ports (not this lab's: its veths are gone)."""
    if not host.link_exists(inst.bridge):
        return
    for record in host.records():
        if record.id != inst.id and record.bridge == inst.bridge:
            log(TAG, f"left bridge {inst.bridge}: lab {record.name} of {record.root} uses it")
            return
    if host.link_ports(inst.bridge):
        log(TAG, f"left bridge {inst.bridge}: it has ports that are not this lab's")
        return
    log(TAG, f"removing bridge {inst.bridge}")
    host.run([str(kit / "scripts" / "local" / "netns"), "bridge-down", inst.bridge])


def leftovers(inst: Instance, host: Host) -> list[str]:
    """What the lab could leave behind, one line each; empty when nothing is left."""
    left = [f"mount {m}" for m in instance_mounts(inst, host)]
    left += [f"namespace {ns}" for ns in instance_namespaces(inst, host)]
    if host.link_exists(inst.bridge):
        left.append(f"bridge {inst.bridge}")
    left += [f"link {veth}" for _, veth in inst.nodes if host.link_exists(veth)]
    left += [f"process {pid} {line}" for pid, line in lab_processes(inst, host) if "scripts/lab" not in line]
    left += [f"benchmark process {pid}" for pid in bench_pids(inst.lab, host, Path(inst.state).parent)]
    if host.exists(f"{inst.state}/lab"):
        left.append(f"files {inst.state}/lab")
    left += [f"cgroup {path}" for path in inst.cgroups() if host.exists(path)]
    if host.exists(inst.run_root):
        left.append(f"files {inst.run_root}")
    if host.is_dir(inst.mount):
        left.append(f"directory {inst.mount}")
    return left


# ---- this machine --------------------------------------------------------------------

class LiveHost:
    def __init__(self) -> None:
        self._self = _ancestry(os.getpid())

    def pids(self) -> list[int]:
        return sorted(int(p.name) for p in Path("/proc").glob("[0-9]*") if int(p.name) not in self._self)

    def environ(self, pid: int) -> list[bytes]:
        try:
            return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            return []

    def cmdline(self, pid: int) -> str | None:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace") or None

    def kill(self, pids: Iterable[int]) -> None:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def namespaces(self) -> list[str]:
        try:
            # Directory order, as ip netns list prints them.
            return os.listdir("/run/netns")
        except OSError:
            return []

    def namespace_pids(self, ns: str) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False).stdout
        return [int(p) for p in out.split() if p.isdigit()]

    def mounts(self) -> list[str]:
        return mounts.mount_points()

    def unmount(self, target: str) -> None:
        mounts.unmount_bounded(target, UNMOUNT_GRACE_S, TAG)

    def link_exists(self, name: str) -> bool:
        return bool(name) and os.path.lexists(f"/sys/class/net/{name}")

    def link_ports(self, bridge: str) -> list[str]:
        out = subprocess.run(["ip", "-o", "link", "show", "master", bridge], capture_output=True, text=True,
                             check=False).stdout
        return [line for line in out.splitlines() if line.strip()]

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def run(self, argv: Sequence[str]) -> int:
        sys.stdout.flush()
        return subprocess.run(list(argv), stdout=sys.stderr, check=False).returncode

    def records(self) -> list[BridgeClaim]:
        return [BridgeClaim.from_json(r) for r in instance._records(names.RUN_BASE)]

    def remove_cgroup(self, path: str) -> None:
        parent = Path(path).parent / "cgroup.procs"
        try:
            pids = (Path(path) / "cgroup.procs").read_text().split()
        except OSError:
            pids = []
        for pid in pids:
            try:
                parent.write_text(pid)
            except OSError:
                pass
        try:
            os.rmdir(path)
        except OSError as err:
            log(TAG, f"could not remove cgroup {path}: {err.strerror}")

    def remove(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def _ancestry(pid: int) -> set[int]:
    """``pid`` and its ancestors (scripts/lab, which runs this command)."""
    found = set()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        # The command name in parentheses may hold spaces: the parent is after its last ')'.
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return found


# ---- command line ---------------------------------------------------------------------

def main(action: str, argument: str, host: Host | None = None) -> int:
    """``stop-bench LAB``; ``sweep LAB_JSON``: stop the bench, remove what is left, then
    list what still is (stdout, exit 1); ``leftovers LAB_JSON``: only the list."""
    live = host or LiveHost()
    if action == "stop-bench":
        check_lab_name(argument)
        stop_bench(argument, live)
        return 0
    inst = Instance.load(argument)
    if action == "sweep":
        sweep(inst, live)
    left = leftovers(inst, live)
    if left:
        print("\n".join(left), flush=True)
    return 1 if left else 0
