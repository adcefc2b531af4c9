"""Preflight of a running remote lab, before any benchmark touches it (scripts/preflight).

One line per check (PASS/FAIL/SKIP node what detail), a summary, exit 1 when any
check failed; the checks and their judging are :mod:`pfslab.lifecycle.health`'s. A
local lab has nothing remote to check: ``scripts/lab status`` checks it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pfslab.lifecycle import Refusal, build_dir, check_lab_name, health, inventory_at
from pfslab.transport.ssh import SshTransport

#: Seconds one check may take on a node (a cluster's health, a two-rank MPI job).
CHECK_TIMEOUT_S = 600


def preflight(args: Sequence[str]) -> int:
    if len(args) > 1:
        raise Refusal("usage: scripts/preflight [LAB]")
    build = build_dir()
    lab = args[0] if args else (os.environ.get("PFSLAB_LAB") or _recorded(build))
    if not lab:
        raise Refusal("no lab is up; run 'make lab-up LAB=<lab>' first or name the lab")
    check_lab_name(lab)
    inv_path = build / lab / "inventory.json"
    if not inv_path.is_file() or inv_path.stat().st_size == 0:
        raise Refusal(f"lab {lab} is not up (no {inv_path}); run 'make lab-up LAB={lab}'")
    inventory = inventory_at(inv_path)
    target = inventory.target
    if inventory.registry_target().namespaces:
        print(f"lab {lab}: local target; nothing remote to check (the nodes are namespaces of this host, "
              "'scripts/lab status' checks them)")
        return 0
    config = build / lab / "ssh" / "config"
    if not config.is_file() or config.stat().st_size == 0:
        raise Refusal(f"lab {lab} has no SSH config ({config}); run 'make remote-up LAB={lab}'")
    ssh = SshTransport(config, os.environ.get("PFSLAB_REMOTE_ROOT") or "/opt/pfslab",
                       os.environ.get("PFSLAB_REMOTE_CONFIG") or "/etc/pfslab/node.json")
    print(f"lab {lab} ({target}): preflight of {len(inventory.nodes)} nodes over ssh", flush=True)
    failed = 0
    for check in health.preflight_checks(lab, inventory, ssh, CHECK_TIMEOUT_S):
        print(check.line(), flush=True)
        failed += check.status == "FAIL"
    if failed:
        print(f"preflight: {failed} check(s) failed; fix them before benchmarking lab {lab}")
        return 1
    print(f"preflight: every check passed on lab {lab}")
    return 0



def _recorded(build: Path) -> str:
    """The lab `make lab-up` recorded (build/active-lab), under PFSLAB_BUILD when set."""
    path = build / "active-lab"
    return path.read_text().strip() if path.is_file() else ""
