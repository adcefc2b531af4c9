"""``pfslab labctl ACTION [LAB]``: the work behind scripts/lab (``make lab-up``,
``lab-down``, ``lab-status``, ``calibrate``, ``expired``), with its lines and exit statuses:

  up [LAB]          validate, provision (Terraform), repair, wait until healthy (up.py)
  down [LAB]        destroy, then prove nothing of the lab is left (down.py)
  status [LAB]      nodes, roles, health and mounts
  calibrate [LAB]   measure the lab again for its calibrated thresholds
  active            the name of the lab that is up (exit 1 if none)
  stop-bench LAB    end a benchmark run of the lab still running here
  expired           the user's cloud labs past their expiry tag (ALL=1: everyone's)
  terraform LAB TARGET ARGS...   Terraform in a remote lab's root (the adapters' tf_cloud)

LAB defaults to the active lab (down, status, calibrate) or to ``local`` (up)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from pfslab import names
from pfslab.lifecycle import Refusal, check_lab_name, lock
from pfslab.lifecycle.adapter import Exit, Shell
from pfslab.lifecycle.labstate import TAG, Command, Kit, say, target_flags, use_target

ACTIONS = ("up", "down", "status", "calibrate", "active", "stop-bench", "expired")


def cmd_status(cmd: Command, lab: str | None) -> int:
    lab = lab or cmd.kit.recorded_lab()
    if not lab:
        raise Refusal("no lab is up; run 'make lab-up' first")
    inventory = cmd.kit.inventory(lab)
    if not (inventory.is_file() and inventory.stat().st_size > 0):
        raise Refusal(f"lab {lab} is not up (no {inventory}); run 'make lab-up LAB={lab}'")
    import json

    target = str(json.loads(inventory.read_text()).get("target"))
    flags = target_flags(target)
    if not flags.provisions:
        return use_target(cmd.kit, target).run("target_status", lab, str(cmd.kit.state_dir(lab)))
    # A cloud or bare-metal lab's nodes are remote: their health comes over SSH.
    if not flags.namespaces:
        from pfslab.lifecycle import remote_up

        return remote_up.remote_preflight(lab)
    # Every role's health, the cluster's view and the lab's mounts (pfslab/lifecycle/status.py).
    return cmd.kit.pfslab("health", "status", lab)


def cmd_calibrate(cmd: Command, lab: str | None) -> int:
    from pfslab.lifecycle import remote_up, up

    lab = lab or cmd.kit.recorded_lab()
    if not lab:
        raise Refusal("no lab is up; run 'make lab-up' first")
    inventory = cmd.kit.inventory(lab)
    if not (inventory.is_file() and inventory.stat().st_size > 0):
        raise Refusal(f"lab {lab} is not up; run 'make lab-up LAB={lab}'")
    resolved = cmd.resolved_or_resolve(lab)
    if resolved.field("benchmark.calibrate") is not True:
        raise Refusal(f"lab {lab} does not calibrate (its file has no benchmark.calibrate: true); its references "
                      "judge it")
    lock.take_or_refuse(cmd.kit.build, lab, "calibrate")
    sys.stderr.flush()
    quiet = subprocess.run([cmd.kit.cli(), "labctl", "status", lab], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
    if quiet.returncode != 0:
        raise Refusal(f"lab {lab} is not healthy; 'make lab-up' repairs it before a calibration")
    if Shell("", cmd.kit.root).run("login_launches_here", lab) == 0:
        up.calibrate(cmd, lab, force=True)
    else:
        remote_up.login_calibrate(lab, force=True)
    return cmd.kit.pfslab("calibrate", lab, "--show")


def cmd_expired(cmd: Command) -> int:
    """Every cloud lab of the user that is past its expiry tag and still holds resources,
    from each target whose adapter can ask (target_expired)."""
    targets = sorted(p.parent.name for p in (cmd.kit.root / "targets").glob("*/target.json"))
    for target in targets:
        # Only targets whose labs carry an expiry tag (a cloud's: expiry_hours in its settings).
        if not target_flags(target).remote or \
                '"expiry_hours"' not in (cmd.kit.root / "targets" / target / "target.json").read_text():
            continue
        shell = use_target(cmd.kit, target)
        if not shell.has("target_expired"):
            say(f"target {target}: not asked (its adapter, targets/{target}/adapter.sh, cannot list expired labs yet)")
            continue
        status = shell.run("eval", f'target_credentials "" "make expired ({target})" "nothing was listed" && '
                                   "target_expired")
        if status != 0:
            raise Exit(status)
    return 0


def cmd_terraform(cmd: Command, args: Sequence[str]) -> int:
    """Terraform in a lab's remote root with its state (scripts/lab's tf_cloud, which the
    adapters call: bare metal's leftovers and boot scripts)."""
    from pfslab.lifecycle import up

    if len(args) < 2:
        raise Refusal("usage: pfslab labctl terraform LAB TARGET ARGS...")
    lab, target = args[0], args[1]
    check_lab_name(lab)
    shell = use_target(cmd.kit, target)
    return up.cloud_terraform(cmd, shell, lab, target).run(list(args[2:]))


def cmd_remote(action: str, args: Sequence[str]) -> int:
    """scripts/remote-up and remote-down (``remote-up LAB``, ``remote-down LAB``), and the
    steps the kit's shell still calls by name (``remote STEP LAB``, with its caller's tag)."""
    from pfslab.lifecycle import remote_up

    if action == "remote":
        if len(args) != 2:
            raise Refusal(f"usage: pfslab labctl remote {'|'.join(remote_up.STEPS)} LAB")
        check_lab_name(args[1])
        return remote_up.step(args[0], args[1], os.environ.get("PFSLAB_LOG_TAG") or "pfslab")
    if len(args) != 1:
        raise Refusal(f"usage: scripts/{action} LAB")
    check_lab_name(args[0])
    return remote_up.step(action.removeprefix("remote-"), args[0], "remote")


def dispatch(cmd: Command, action: str, args: Sequence[str]) -> int:
    from pfslab.lifecycle import down, up

    if action == "terraform":
        return cmd_terraform(cmd, args)
    if action in ("remote", "remote-up", "remote-down"):
        return cmd_remote(action, args)
    # LAB becomes a path (build/<lab>, removed by lab-down): checked before anything else.
    if args:
        check_lab_name(args[0])
    lab = args[0] if args else None
    if action == "up":
        problem = names.checkout_path_problem(cmd.kit.root.resolve())
        if problem:
            raise Refusal(problem)
        return up.cmd_up(cmd, lab)
    if action == "down":
        return down.cmd_down(cmd, lab)
    if action == "status":
        return cmd_status(cmd, lab)
    if action == "calibrate":
        return cmd_calibrate(cmd, lab)
    if action == "active":
        recorded = cmd.kit.recorded_lab()
        if recorded is None:
            return 1
        print(recorded)
        return 0
    if action == "stop-bench":
        if lab is None:
            raise Refusal("usage: scripts/lab stop-bench LAB")
        return cmd.kit.pfslab("lab", "stop-bench", lab)
    if action == "expired":
        return cmd_expired(cmd)
    raise Refusal(f"action '{action}' is not one of {', '.join(ACTIONS[:-1])}, {ACTIONS[-1]}")


def main(args: Sequence[str], kit: Kit | None = None) -> int:
    action, rest = (args[0], list(args[1:])) if args else ("", [])
    cmd = Command(kit or Kit())
    # Refusals read as those of the script that runs this (scripts/lab, remote-up, or the
    # shell function calling a remote step, with its own tag).
    tag = {"remote-up": "remote", "remote-down": "remote"}.get(action, TAG)
    if action == "remote":
        tag = os.environ.get("PFSLAB_LOG_TAG") or "pfslab"
    try:
        return dispatch(cmd, action, rest)
    except Refusal as err:
        print(f"[{tag}] error: {err}", file=sys.stderr, flush=True)
        return 2
    except Exit as done:
        return done.status
    except KeyboardInterrupt:
        # Ctrl-C: what ran said what it was doing; no traceback (bash's status for SIGINT).
        return 130
    finally:
        cmd.cleanup()
