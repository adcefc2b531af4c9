"""A local lab's repair at lab-up (``pfslab health converge LAB SECONDS``, scripts/lab up):
a second lab-up brings a lab whose daemon died back to healthy.

Two passes, judged by the roles' own ``health`` steps through the lab's transport. First
every unhealthy role runs ``up`` again (configure and start are idempotent: this starts
what died). If the lab is still not healthy in time, a role still unhealthy (a daemon
alive but not in the cluster maps) is restarted: ``stop``, then ``up``. Last, the host's
view of the file system, a bind of the first client's mount, is bound again when it no
longer answers (a client that was remounted leaves it on the dead connection).

The machine is reached through :class:`Host` and the nodes through the transport, so each
rule is tested with fakes (tests/unit/test_repair.py).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Protocol

from pfslab.lifecycle import Refusal, health, log, mounts, status
from pfslab.model import Inventory
from pfslab.transport import Result, Transport, bounded

TAG = "lab"
#: Seconds a role's ``stop`` or ``up`` may take (a start that hangs must not hang lab-up).
STEP_TIMEOUT_S = 600
#: Seconds the host's view may take to answer ``stat -f`` before it counts as stale.
ANSWER_TIMEOUT_S = 5


class Host(Protocol):
    """What the repair reads and changes on this machine."""

    def answers(self, target: str) -> bool:
        """Something is mounted at ``target`` and it answers (``stat -f`` in time)."""

    def rebind(self, source: str, target: str) -> None:
        """Unmount ``target`` (bounded, whatever its state), then bind ``source`` there."""

    def sleep(self, seconds: float) -> None: ...

    def monotonic(self) -> float: ...


def _why(result: Result) -> str:
    return "; ".join(result.output.strip("\n").splitlines())


def _step(transport: Transport, at: health.RoleOnNode, step: str) -> None:
    done = transport.run(at.node, transport.role_command(at.family, step, at.component), STEP_TIMEOUT_S)
    # The role's own lines, as when scripts/lab ran the step; the health wait after it judges.
    sys.stderr.write(done.output)
    sys.stderr.flush()


def repair_pass(inventory: Inventory, transport: Transport, how: str) -> int:
    """Every role whose health fails runs ``up`` (``how`` 'restarting': ``stop`` first);
    how many did."""
    count = 0
    for at in health.role_table(inventory):
        check = transport.run(at.node, transport.role_command(at.family, "health", at.component),
                              status.CALL_TIMEOUT_S)
        if check.ok:
            continue
        log(TAG, f"{how} {at.role} on {at.node}: {_why(check)}")
        if how == "restarting":
            _step(transport, at, "stop")
        _step(transport, at, "up")
        count += 1
    return count


def repair_head_mount(inventory: Inventory, host: Host) -> int:
    """The host's view of the file system bound again to the first client's mount when it
    no longer answers; 1 when it was."""
    names = health.clients(inventory)
    target = inventory.require_mount()
    if not names or host.answers(target):
        return 0
    head = names[0]
    config = Path(inventory.state_root) / "nodes" / head / "node.json"
    try:
        source = json.loads(config.read_text())["paths"]["mount"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise Refusal(f"cannot read {head}'s mount from its node config {config}: {err}") from None
    log(TAG, f"repairing the host's view of the file system at {target} (a bind of {head}'s mount)")
    host.rebind(source, target)
    return 1


def converge(lab: str, inventory: Inventory, transport: Transport, host: Host, seconds: int) -> Result:
    """Repair, wait until healthy, repair harder if not, then the host's view; the cluster's
    last answer. Not healthy after the second wait: a refusal (the cluster's answer on stderr)."""
    repaired = repair_pass(inventory, transport, "repairing")
    rc, cluster = status.wait_ready(lab, inventory, transport, seconds, True, host.sleep, host.monotonic)
    if rc:
        repaired += repair_pass(inventory, transport, "restarting")
        _, cluster = status.wait_ready(lab, inventory, transport, seconds, False, host.sleep, host.monotonic)
    repaired += repair_head_mount(inventory, host)
    if repaired:
        log(TAG, f"repaired {repaired} role(s)")
    else:
        log(TAG, f"every role of lab {lab} is running; nothing to repair")
    return cluster


class LiveHost:
    def answers(self, target: str) -> bool:
        # Looked up in the mount table first: stat on a path that is not a mount point
        # would answer for the directory under it.
        return target in mounts.mount_points() and bounded(["stat", "-f", target], ANSWER_TIMEOUT_S).ok

    def rebind(self, source: str, target: str) -> None:
        mounts.unmount_bounded(target, ANSWER_TIMEOUT_S, TAG)
        os.makedirs(target, exist_ok=True)
        done = bounded(["mount", "--bind", source, target], 30)
        if not done.ok:
            raise Refusal(f"binding {source} at {target} failed: {done.last_line() or f'exit status {done.rc}'}")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def monotonic(self) -> float:
        return time.monotonic()


def main(lab: str, seconds: int, host: Host | None = None) -> int:
    """Converge the local lab; print the first line of the cluster's health (lab-up's
    'up and healthy' line ends with it)."""
    inventory, transport = status.lab_of(lab)
    cluster = converge(lab, inventory, transport, host or LiveHost(), seconds)
    print(next(iter(cluster.output.splitlines()), ""), flush=True)
    return 0
