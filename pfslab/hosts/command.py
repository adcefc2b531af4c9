"""``pfslab hosts ACTION LAB [ARGS...]`` (scripts/hosts): the hosts of a lab on this
machine. Refusals are one line, ``[hosts] error: ...``, exit 2; a command that failed
ends it with its status."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.errors import KitError
from pfslab.hosts import TAG, CommandFailed, HostsRefusal, plan

ACTIONS = ("up", "down", "status", "exec", "stop-sshd", "restart", "poweroff")


def load(name: str, root: Path = KIT_ROOT) -> plan.HostsLab:
    """The lab, resolved as the kit resolves it, with this checkout's instance names."""
    from pfslab import instance, labs, layout
    from pfslab.lifecycle import Refusal, check_lab_name

    known = " ".join(plan.labs_with_hosts(root / "labs"))
    if not name:
        raise HostsRefusal(f"HOSTS is not set; give the lab whose hosts to start: HOSTS=<lab> (labs with hosts: {known})")
    try:
        check_lab_name(name)
    except Refusal as err:
        raise HostsRefusal(str(err)) from None
    try:
        resolved = instance.with_instance(layout.resolved(labs.load(name)))
    except KitError as err:
        raise HostsRefusal(f"lab '{name}' cannot be used: {err} (labs with hosts: {known})") from None
    if not plan.has_hosts(resolved):
        raise HostsRefusal(f"lab '{name}' has no existing hosts (target baremetal, targets.baremetal.hosts); "
                           f"labs with hosts: {known}")
    return plan.from_resolved(resolved, root)


def dispatch(argv: Sequence[str]) -> int:
    from pfslab.hosts import images, machine

    action, rest = (argv[0], list(argv[1:])) if argv else ("", [])
    if action == "_init":
        machine.host_init(Path(rest[0]), rest[1], rest[2], rest[3])
    if action == "_provision":
        base, tmp, role, family, kit, target, *steps = rest
        return images.provision(Path(base), Path(tmp), role, family, kit, target, steps)
    if action not in ACTIONS:
        raise HostsRefusal(f"action '{action}' is not one of {', '.join(ACTIONS)}")
    hosts = machine.Hosts(load(rest[0] if rest else ""))
    args = rest[1:]
    node = args[0] if args else ""
    if action == "up":
        hosts.up()
    elif action == "down":
        hosts.down()
    elif action == "status":
        return hosts.status()
    elif action == "exec":
        hosts.exec(node, args[1:])
    elif action == "stop-sshd":
        hosts.stop_sshd(node)
    elif action == "restart":
        hosts.restart(node)
    else:
        hosts.poweroff(node)
    return 0


def main(argv: Sequence[str]) -> int:
    try:
        return dispatch(argv)
    except CommandFailed as err:
        return err.status
    except KitError as err:
        print(f"[{TAG}] error: {err}", file=sys.stderr, flush=True)
        return 2
