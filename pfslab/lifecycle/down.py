"""``scripts/lab down [LAB]``: destroy, then prove nothing of the lab is left.

A local lab: its bench stopped, Terraform's destroy, then pfslab/lifecycle/teardown.py's
sweep of what is left by name (``pfslab lab sweep``). A cloud or bare-metal lab: existing
hosts' roles stopped and what the lab wrote on them removed, what the Terraform state lost
swept by the lab's tags, destroy, then the target asked what is still tagged with the
lab. A site lab: its adapter removes the kit's scratch only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from pfslab.lifecycle import Refusal, lock
from pfslab.lifecycle.adapter import Exit, Shell
from pfslab.lifecycle.labstate import Command, require_cmd, require_root, say, target_flags, use_target
from pfslab.lifecycle.terraform import lab_vars, said, stop_orphan_providers, tail
from pfslab.lifecycle.up import cloud_init, cloud_terraform, cloud_vars, local_init, local_terraform, nonempty

#: Seconds a tag query may lag a deletion: lab-down asks again for this long before failing.
LEFTOVER_WAIT_VAR, LEFTOVER_WAIT_DEFAULT = "PFSLAB_LEFTOVER_WAIT", 120
LEFTOVER_POLL_S = 15


def checked_down(cmd: Command, shell: Shell) -> int:
    lab = cmd.lab().name
    state_dir = cmd.kit.state_dir(lab)
    shell.call("target_down", lab)
    previous_file = state_dir / "previous-active"
    previous = previous_file.read_text().rstrip("\n") if nonempty(previous_file) else ""
    shutil.rmtree(state_dir, ignore_errors=True)
    if cmd.kit.recorded_lab() == lab:
        if previous and nonempty(cmd.kit.inventory(previous)):
            cmd.kit.write_env(previous)
            say(f"lab {previous} is the active lab again")
        else:
            cmd.kit.active_file.unlink(missing_ok=True)
            cmd.kit.env_file.unlink(missing_ok=True)
    try:
        cmd.kit.build.rmdir()
    except OSError:
        pass
    say(f"lab {lab} is down in {cmd.seconds()} s; only the kit's scratch directory and {state_dir} were removed")
    return 0


def cloud_leftovers(cmd: Command, shell: Shell, lab: str, target: str) -> list[str]:
    """What of a cloud lab is still there, one per entry; empty: nothing is left. A listing
    that failed proves nothing: one line naming why, and build/<lab> (what lab-down needs
    to try again) is kept."""
    rc, out, err = shell.output("target_leftovers", lab, stderr=subprocess.PIPE)
    if rc == 0:
        return [ln for ln in out.rstrip("\n").split("\n") if ln] if out.strip("\n") else []
    # The tool's own reason: its first line saying error, else its last line.
    lines = err.split("\n")
    why = next((ln for ln in lines if "error" in ln.lower()), "") or \
        next((ln for ln in reversed(lines) if ln.strip()), "")
    while why and not why[0].isalnum():
        why = why[1:]
    raise Refusal(f"lab {lab}: asking {target} what is left failed ({why or 'no reason given'}), so it is not "
                  f"known to be down; {cmd.kit.state_dir(lab)} is kept: run 'make lab-down LAB={lab}' again")


def cloud_sweep(shell: Shell, lab: str, *args: str) -> None:
    """What the Terraform state lost, found by the lab's tags (targets with target_sweep)."""
    if not shell.has("target_sweep"):
        return
    with subprocess.Popen(shell.argv("target_sweep", [lab, *args]), env=shell.env(), stdout=subprocess.PIPE,
                          text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            say(line.rstrip("\n"))
    if proc.returncode != 0:
        raise Refusal(f"lab {lab}: removing what its tags name failed (above); run 'make lab-down LAB={lab}' again")


def existing_hosts(inventory: dict[str, object]) -> bool:
    baremetal = inventory.get("baremetal")
    hosts = baremetal.get("hosts") if isinstance(baremetal, dict) else None
    return bool(hosts)


def cloud_down(cmd: Command, shell: Shell, target: str) -> int:
    from pfslab.lifecycle import remote_up

    lab = cmd.lab().name
    state_dir = cmd.kit.state_dir(lab)
    wait = int(os.environ.get(LEFTOVER_WAIT_VAR) or LEFTOVER_WAIT_DEFAULT)
    # A target that sweeps asks its API directly and waits out its own deletions: what it
    # still lists afterwards stays (made by others), and waiting for it is time lost.
    if shell.has("target_sweep"):
        wait = 0
    require_cmd("terraform", "jq")
    shell.call("target_credentials", lab, f"lab {lab}", "nothing was destroyed")
    purge = os.environ.get("PFSLAB_PURGE", "")
    if nonempty(state_dir / "terraform.tfstate"):
        tf = cloud_terraform(cmd, shell, lab, target)
        cloud_init(cmd, tf)
        inventory = state_dir / "inventory.json"
        if nonempty(inventory) and existing_hosts(json.loads(inventory.read_text())):
            remote_up.hosts_down(lab)
        done = subprocess.run(tf.argv(["state", "list"]), env=tf.env(), stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, check=False)
        removed = done.stdout if done.returncode == 0 else ""
        # What an apply killed part way made after the state was last written holds on to
        # what the state has (an instance on an interface): it goes first.
        cloud_sweep(shell, lab, str(tf.state))
        say(f"destroying lab {lab} (target {target})")
        variables = cloud_vars(cmd, shell, lab, target)
        destroy_log = state_dir / "terraform-destroy.log"
        if tf.run(["destroy", "-auto-approve", "-input=false", "-no-color", *variables], to=destroy_log,
                  stderr=subprocess.STDOUT) != 0:
            tail(destroy_log)
            raise Refusal(f"terraform destroy failed for lab {lab}; full log: {destroy_log}")
        said(destroy_log, "Destroy complete")
        for line in removed.rstrip("\n").split("\n") if removed.strip("\n") else []:
            if not (line.startswith("data.") or ".data." in line):
                say(f"removed: {line}")
    else:
        say(f"lab {lab} has no Terraform state; checking for leftovers only")
    cloud_sweep(shell, lab, "", purge)
    left = cloud_leftovers(cmd, shell, lab, target)
    waited = 0
    while left and waited < wait:
        time.sleep(LEFTOVER_POLL_S)
        waited += LEFTOVER_POLL_S
        left = cloud_leftovers(cmd, shell, lab, target)
    if left:
        for line in left:
            say(f"left behind: {line}")
        hint = "" if purge or not shell.has("target_sweep") else \
            f"; check them, then remove them yourself or with 'make lab-down LAB={lab} PURGE=1'"
        raise Refusal(f"lab {lab} is not completely down; the lines above are still tagged lab={lab} "
                      f"owner={cmd.lab().text('instance.owner')}{hint}")
    stop_orphan_providers(lab, state_dir)
    cmd.kit.forget(lab)
    gone = shell.output("target_gone", lab)[1].rstrip("\n")
    say(f"lab {lab} is down in {cmd.seconds()} s; {gone}")
    return 0


def local_down(cmd: Command, target: str) -> int:
    resolved = cmd.lab()
    lab = resolved.name
    require_root("make lab-down (local target)")
    state_dir = cmd.kit.state_dir(lab)
    if cmd.kit.recorded_lab() == lab:
        # Daemons starved by a test leave with the lab.
        status = subprocess.run([str(cmd.kit.root / "scripts" / "throttle"), "off"], stdout=subprocess.DEVNULL,
                                check=False).returncode
        if status != 0:
            raise Exit(status)
    if nonempty(state_dir / "terraform.tfstate"):
        # A run still going would hold the file system open through the destroy.
        status = cmd.kit.pfslab("lab", "stop-bench", lab)
        if status != 0:
            raise Exit(status)
        tf = local_terraform(cmd, target)
        local_init(cmd, tf)
        say(f"destroying lab {lab} (target {target})")
        variables = lab_vars(state_dir, resolved.path, cmd.kit.root)
        destroy_log = state_dir / "terraform-destroy.log"
        if tf.logged(["destroy", "-auto-approve", "-input=false", *variables], destroy_log) != 0:
            tail(destroy_log)
            # What the destroy left, the sweep below removes by name; the check after it
            # says whether anything is still there.
            say(f"terraform destroy failed for lab {lab} (full log: {destroy_log}); removing what is left by name")
        said(destroy_log, "Destroy complete")
    else:
        say(f"lab {lab} has no Terraform state; removing what its lab-up made, by name")
    # Exit 1 with a list: something is left. Any other failure (a crash is 1 with no list)
    # proves nothing: build/<lab>, which a second lab-down needs, is kept.
    sys.stderr.flush()
    done = subprocess.run([cmd.kit.cli(), "lab", "sweep", str(resolved.path)], stdout=subprocess.PIPE, text=True,
                          check=False)
    left = done.stdout.rstrip("\n")
    if done.returncode != 0 and (done.returncode != 1 or not left):
        raise Refusal(f"lab {lab}: removing what is left failed (above), so it is not known to be down; run "
                      f"'make lab-down LAB={lab}' again")
    if left:
        for line in left.split("\n"):
            say(f"left behind: {line}")
        raise Refusal(f"lab {lab} is not completely down; the lines above say what is left")
    cmd.kit.forget(lab)
    say(f"lab {lab} is down in {cmd.seconds()} s; nothing is left (checked mounts, namespaces, bridge, processes, "
        "files)")
    return 0


def cmd_down(cmd: Command, lab: str | None) -> int:
    lab = lab or cmd.kit.recorded_lab()
    if not lab:
        say("no lab is up; nothing to take down")
        return 0
    resolved = cmd.resolved_or_resolve(lab)
    lock.take_or_refuse(cmd.kit.build, lab, "lab-down")
    target = resolved.target
    shell = use_target(cmd.kit, target)
    flags = target_flags(target)
    if not flags.provisions:
        return checked_down(cmd, shell)
    if not flags.namespaces:
        return cloud_down(cmd, shell, target)
    return local_down(cmd, target)
