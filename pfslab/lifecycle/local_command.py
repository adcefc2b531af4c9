"""``pfslab local ACTION ARGS...`` and ``pfslab throttle ...``: the local lab's plumbing on
this machine, behind the script names Terraform's local-exec provisioners, scripts/lab
and the tests call (scripts/local/<action>, scripts/throttle: thin wrappers).

Each action speaks as its script did: messages ``[<action>] ...`` on stderr, a refusal
one line ``[<action>] error: ...`` with status 2, a failed command its own status."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pfslab.errors import KitError
from pfslab.lifecycle import Refusal, local_dirs, throttle
from pfslab.transport import local_net, local_node


def _root(what: str) -> None:
    if os.geteuid() != 0:
        raise Refusal(f"{what} needs root (it creates network namespaces, mounts and daemons); "
                      "run it as root or with sudo")


def _args(action: str, args: Sequence[str], usage: str) -> list[str]:
    """``args`` when there are as many as ``usage`` names, else the usage as a refusal."""
    if len(args) != len(usage.split()):
        raise Refusal(f"usage: {action} {usage}")
    return list(args)


def _netns(args: Sequence[str]) -> None:
    _root("the local lab's network")
    problem = local_net.usage_problem(args)
    if problem:
        raise Refusal(problem)
    local_net.main(args)


def _prepare(args: Sequence[str]) -> None:
    local_dirs.prepare(*_args("prepare", args, "STATE_ROOT RUN_ROOT MOUNT_PATH"))


def _cleanup(args: Sequence[str]) -> None:
    local_dirs.cleanup(*_args("cleanup", args, "STATE_ROOT RUN_ROOT MOUNT_PATH"))


def _bind_mount(args: Sequence[str]) -> None:
    local_dirs.bind_mount(*_args("bind-mount", args, "SOURCE TARGET"))


def _unmount(args: Sequence[str]) -> None:
    local_dirs.unmount(*_args("unmount", args, "TARGET"))


def _node_config(args: Sequence[str]) -> None:
    if len(args) != 2:
        raise Refusal("usage: NODE_CONFIG=JSON NODE_RECORD=LINE node-config CONFIG RECORD")
    local_node.write_node_files(Path(args[0]), Path(args[1]), os.environ)


def _cluster_files(args: Sequence[str]) -> None:
    source, config = _args("cluster-files", args, "SOURCE CONFIG")
    local_node.cluster_files(Path(source), Path(config))


ACTIONS: dict[str, Callable[[Sequence[str]], None]] = {
    "netns": _netns, "prepare": _prepare, "cleanup": _cleanup, "bind-mount": _bind_mount,
    "unmount": _unmount, "node-config": _node_config, "cluster-files": _cluster_files,
}


def _speaking_as(tag: str, step: Callable[[], object]) -> int:
    """Run ``step``; its failure as the script's: one line and its status."""
    try:
        step()
    except local_net.CommandFailed as err:
        return err.rc  # the command said why on stderr
    except local_dirs.StepFailed as err:
        print(f"[{tag}] error: {err}", file=sys.stderr, flush=True)
        return 1
    except KitError as err:
        print(f"[{tag}] error: {err}", file=sys.stderr, flush=True)
        return 2
    except OSError as err:
        print(f"[{tag}] error: {err.strerror}: {err.filename}", file=sys.stderr, flush=True)
        return 1
    return 0


def main(args: Sequence[str]) -> int:
    """``pfslab local ACTION ARGS...``."""
    action = args[0] if args else ""
    if action not in ACTIONS:
        print(f"[local] error: action '{action}' is not one of {', '.join(ACTIONS)}", file=sys.stderr)
        return 2
    return _speaking_as(action, lambda: ACTIONS[action](args[1:]))


def throttle_main(args: Sequence[str]) -> int:
    """``pfslab throttle on [PERCENT] [DAEMON] | off | status``."""
    def step() -> None:
        _root("scripts/throttle")
        throttle.main(args)

    return _speaking_as(throttle.TAG, step)
