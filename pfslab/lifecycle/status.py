"""A local lab's health for scripts/lab: lab-up's wait until it is healthy (inside its
repair, :mod:`pfslab.lifecycle.repair`), and the table and mounts of lab-status, judged by
:mod:`pfslab.lifecycle.health` through the lab's transport."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from pfslab import KIT_ROOT
from pfslab.lifecycle import Refusal, build_dir, check_lab_name, health, inventory_at
from pfslab.model import Inventory
from pfslab.transport import Result, Transport, bounded, for_lab

#: Seconds one role's health check may take before it counts as not answering.
CALL_TIMEOUT_S = 120


def lab_of(lab: str) -> tuple[Inventory, Transport]:
    check_lab_name(lab)
    path = build_dir() / lab / "inventory.json"
    if not path.is_file():
        raise Refusal(f"lab {lab} is not up (no {path}); run 'make lab-up LAB={lab}'")
    inventory = inventory_at(path)
    # The kit and the node config on a remote lab's nodes, as scripts/preflight takes them.
    return inventory, for_lab(lab, inventory, KIT_ROOT, build_dir(), os.environ.get("PFSLAB_REMOTE_ROOT") or "/opt/pfslab",
                              os.environ.get("PFSLAB_REMOTE_CONFIG") or "/etc/pfslab/node.json")


def wait_ready(lab: str, inventory: Inventory, transport: Transport, seconds: int, quiet: bool,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic) -> tuple[int, Result]:
    """Until the file system is healthy and every client mounted: 0; after ``seconds``,
    1 when ``quiet`` (the caller repairs), else the cluster's answer and a refusal. With
    the cluster check's last answer."""
    start = clock()
    while True:
        ok, cluster = health.ready(inventory, transport, CALL_TIMEOUT_S)
        if ok:
            return 0, cluster
        if clock() - start >= seconds:
            if quiet:
                return 1, cluster
            sys.stderr.write(cluster.output)
            raise Refusal(f"lab {lab} is not healthy after {seconds}s; 'make lab-status' shows what is wrong")
        sleep(1)


def status(lab: str, show: bool = True) -> int:
    """Every role's health, one line each, the file system's own view, then the lab's
    mounts; 1 if any check fails. ``show=False`` judges the same without printing (make
    bench's check before a run)."""
    inventory, transport = lab_of(lab)
    if show:
        print(f"lab {lab} ({inventory.title}), target {inventory.target}")
        print(f"{'NODE':<8} {'ADDRESS':<14} {'ROLE':<12} STATE")
    rc = 0
    for at in health.role_table(inventory):
        done = transport.run(at.node, transport.role_command(at.family, "health", at.component), CALL_TIMEOUT_S)
        state = "ok" if done.ok else "FAILED: " + "; ".join(done.output.strip("\n").splitlines())
        rc |= not done.ok
        if show:
            print(f"{at.node:<8} {inventory.address(at.node):<14} {at.role:<12} {state}", flush=True)
    first = health.cluster_role(inventory)
    if first is not None:
        cluster = transport.run(first.node, transport.role_command(first.family, "health", "cluster"), CALL_TIMEOUT_S)
        if show:
            print(cluster.output, end="", flush=True)
        rc |= not cluster.ok
    if show:
        print(f"mounts (each client's own, seen by benchmark ranks at {inventory.require_mount()}):")
        for line in lab_mounts(lab):
            print(f"  {line}")
    return rc


def lab_mounts(lab: str) -> list[str]:
    """findmnt's "TARGET SOURCE FSTYPE" lines of the mounts under the lab's files
    (build/<lab>/lab/: its clients' mounts, its servers' devices)."""
    listed = bounded(["findmnt", "-rn", "-o", "TARGET,SOURCE,FSTYPE"], CALL_TIMEOUT_S)
    under = f"{build_dir() / lab}/lab/"
    return [line for line in listed.output.splitlines() if line.startswith(under)]
