"""make bench (scripts/bench): where the run of the active lab goes, then the run.

  * a lab whose target says detached_runs (a site lab: the user runs the kit on the submit
    node over their own SSH): the run is scripts/bench again in a session of its own, and
    this process follows it (:mod:`pfslab.lifecycle.detached`);
  * otherwise the lab's lock is taken (build/<lab>/lock, :mod:`pfslab.lifecycle.lablock`)
    for this process's life, and the run starts here (the local lab, a remote lab's login
    node: :func:`pfslab.lifecycle.bench.run`, ReFrame started once and no second start of
    the kit's CLI) or on a remote lab's login node, followed and brought home
    (:mod:`pfslab.lifecycle.login_run`).

Every run directory holds a junit.xml: ReFrame's, else (the run ended before ReFrame
reported) one error saying so, for a CI system that reads it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.lifecycle import Refusal, check_lab_name, inventory_at

MODES = ("quick", "full")


def mode_of_args(args: Sequence[str]) -> str | None:
    """The mode ReFrame's --mode names among the arguments, if any: it picks the sweep as
    MODE does (pfslab/rfmconfig.py), so the run's provenance must record it too."""
    previous = ""
    for arg in args:
        if previous == "--mode":
            return arg
        if arg.startswith("--mode="):
            return arg[len("--mode="):]
        previous = arg
    return None


def active_lab() -> str:
    """The lab make lab-up recorded (build/active-lab), as `scripts/lab active` says it."""
    path = KIT_ROOT / "build" / "active-lab"
    lab = path.read_text().strip() if path.is_file() else ""
    if not lab:
        raise Refusal("no lab is up; run 'make lab-up' first (LAB=local by default)")
    check_lab_name(lab)
    return lab


def main(args: Sequence[str]) -> int:
    """The run of make bench; its exit status (the verdict's, 2 when it could not be made)."""
    from pfslab.lifecycle import bench, detached, lablock, login_run

    lab = active_lab()
    mode = mode_of_args(args)
    if mode is not None:
        os.environ["PFSLAB_MODE"] = mode
    mode = os.environ.get("PFSLAB_MODE") or ""
    if mode and mode not in MODES:
        raise Refusal(f"MODE={mode} is not allowed; allowed: {', '.join(MODES)}")
    inventory_path = KIT_ROOT / "build" / lab / "inventory.json"
    if not inventory_path.is_file() or not inventory_path.stat().st_size:
        raise Refusal(f"lab {lab} is not up (no inventory); run 'make lab-up LAB={lab}'")
    inventory = inventory_at(inventory_path)
    target = inventory.registry_target()
    given = os.environ.get(detached.DETACHED_VAR) or None
    if given is None and target.detached_runs:
        return detached.run(lab, args)
    if not lablock.acquire(lab, "bench"):
        raise Refusal(lablock.busy(lab))
    if target.namespaces or inventory.inside:
        # Where the run starts: in this process, whose pid the lock names and the
        # watchdog watches.
        return bench.run(lab, args, given)
    return _remote(lab, args)


def _remote(lab: str, args: Sequence[str]) -> int:
    from pfslab import junit
    from pfslab.lifecycle import login_run

    rc = 2
    try:
        rc = login_run.run(lab, args, KIT_ROOT / "build" / "runs" / lab)
        return rc
    except login_run.Failed as failed:
        rc = failed.status
        return rc
    finally:
        if login_run.RUN_DIR and login_run.RUN_DIR[-1].is_dir():
            run_dir: Path = login_run.RUN_DIR[-1]
            junit.write_error(run_dir, f"the run ended with exit status {rc} before ReFrame wrote its JUnit report; "
                                       "see reframe.out and the messages of make bench")
