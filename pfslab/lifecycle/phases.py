"""A remote lab's roles started and stopped phase by phase (``pfslab lab phases LAB
up|down``; scripts/lib/remote.sh's remote_up and the remote lab-down call it).

``up``: every "node/role" of each phase (the inventory's ``phases``, the family's
order) runs its role's ``up`` step, one after the other; the first that fails ends
the bring-up naming it: a step that ran out of its time (``PFSLAB_ROLE_STEP_TIMEOUT``),
a node that went away in the middle (ssh's own status 255: a node that answers again
within ``PFSLAB_RESTART_WAIT`` seconds restarted, one that does not is lost, with why),
else the step's own failure and its exit status. ``down``: the same in reverse order,
``stop``; a stop that fails is logged and the others still run (existing hosts outlive
the lab).

Each step's output goes to stderr as it comes (a role's ``up`` may run for minutes).
The nodes are reached through the lab's transport and time through :class:`Clock`, so
each rule is tested with fakes (tests/unit/test_phases.py)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from pfslab.lifecycle import Refusal, build_dir, health, reach, status
from pfslab.model import Inventory
from pfslab.transport import TIMED_OUT, Result
from pfslab.transport.ssh import SSH_FAILED

STEP_VAR, STEP_DEFAULT = "PFSLAB_ROLE_STEP_TIMEOUT", 1800
WAIT_VAR, WAIT_DEFAULT = "PFSLAB_RESTART_WAIT", 30
#: Seconds between two probes of a node whose connection broke.
PROBE_EVERY_S = 3
#: Seconds one probe may take (ssh's own ConnectTimeout in the lab's config is 15).
PROBE_TIMEOUT_S = 60


class StepTransport(Protocol):
    """What the phases need of the lab's transport (pfslab/transport)."""

    def role_command(self, family: str, *args: str) -> list[str]: ...

    def run(self, node: str, command: Sequence[str], timeout: float) -> Result: ...

    def run_shown(self, node: str, command: Sequence[str], timeout: float) -> Result: ...


class Clock(Protocol):
    def sleep(self, seconds: float) -> None: ...

    def monotonic(self) -> float: ...


class RealClock:
    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def monotonic(self) -> float:
        return time.monotonic()


def seconds_setting(env: Mapping[str, str], var: str, default: int, zero: bool = False) -> int:
    """A number of seconds from the environment (empty or unset: ``default``)."""
    value = env.get(var) or str(default)
    if not (value.isascii() and value.isdigit()) or (value.startswith("0") and value != "0") or \
            (value == "0" and not zero):
        allowed = "a number of seconds" + ("" if zero else " above 0")
        raise Refusal(f"{var}={value} is not allowed; give {allowed} (default {default})")
    return int(value)


def out_of_time(lab: str, node: str, what: str, var: str, default: int, limit: int) -> Refusal:
    """A step on a node stopped at its limit, named with the variable that raises it."""
    return Refusal(f"{what} on node {node} of lab {lab} did not finish within {limit}s, its limit; if it needs "
                   f"longer, run the command again with {var}=<seconds> in its environment (default {default})")


def step_failed(lab: str, inventory: Inventory, transport: StepTransport, node: str, rc: int, what: str,
                wait: int, clock: Clock) -> Refusal:
    """Why a step on a node failed: ssh's own failure (255) is the node going away in the
    middle (restarted, powered off), not the step's fault (scripts/lib/remote.sh's
    remote_step_failed asks the same, ``pfslab lab step-failed``)."""
    if rc != SSH_FAILED:
        return Refusal(f"{what} failed on {node} of lab {lab} (exit status {rc}; its output is above); "
                       f"fix it, then run 'make lab-up LAB={lab}' again")
    # A host that restarts answers again within moments; one that is gone does not.
    waited = 0
    while True:
        probe = transport.run(node, ["true"], PROBE_TIMEOUT_S)
        if probe.ok:
            return Refusal(f"host {node} restarted during {what} (its SSH connection broke, and it answers "
                           f"again); run 'make lab-up LAB={lab}' again (it resumes)")
        if waited >= wait:
            why = reach.diagnose(lab, inventory, node, probe.output, build_dir() / lab / "ssh")
            return Refusal(f"lost {node} during {what}: {why}")
        clock.sleep(PROBE_EVERY_S)
        waited += PROBE_EVERY_S


def step_failed_main(lab: str, node: str, rc: str, what: str) -> int:
    """``pfslab lab step-failed``: the refusal for a failed step, always (exit 2)."""
    if not (rc.isascii() and rc.isdigit()):
        raise Refusal(f"exit status {rc!r} is not a number")
    inventory, transport = status.lab_of(lab)
    raise step_failed(lab, inventory, transport, node, int(rc), what,
                      seconds_setting(os.environ, WAIT_VAR, WAIT_DEFAULT, zero=True), RealClock())


class Phases:
    """The phases of one lab, stepped through its transport; lines on stderr with ``tag``."""

    def __init__(self, lab: str, inventory: Inventory, transport: StepTransport, tag: str,
                 env: Mapping[str, str], clock: Clock) -> None:
        self.lab, self.inventory, self.transport, self.tag, self.clock = lab, inventory, transport, tag, clock
        self.limit = seconds_setting(env, STEP_VAR, STEP_DEFAULT)
        self.wait = seconds_setting(env, WAIT_VAR, WAIT_DEFAULT, zero=True)

    def log(self, message: str) -> None:
        print(f"[{self.tag}] {message}", file=sys.stderr, flush=True)

    def step(self, at: health.RoleOnNode, action: str) -> Result:
        """One role step on its node, its output shown; out of time: a refusal naming
        node, step, limit and the variable that raises it."""
        start = self.clock.monotonic()
        done = self.transport.run_shown(at.node, self.transport.role_command(at.family, action, at.component),
                                        self.limit)
        if done.rc == TIMED_OUT and self.clock.monotonic() - start >= self.limit:
            raise out_of_time(self.lab, at.node, f"role step '{at.family} {action} {at.component}'", STEP_VAR,
                              STEP_DEFAULT, self.limit)
        return done

    def failed(self, node: str, rc: int, what: str) -> Refusal:
        return step_failed(self.lab, self.inventory, self.transport, node, rc, what, self.wait, self.clock)

    def up(self) -> None:
        """Every role's ``up``, phase by phase; the first failure is raised."""
        for i, phase in enumerate(health.phase_table(self.inventory)):
            for at in phase:
                self.log(f"phase {i}: {at.role} up on {at.node}")
                done = self.step(at, "up")
                if not done.ok:
                    raise self.failed(at.node, done.rc, f"{at.role} up (phase {i})")

    def down(self) -> None:
        """Every role's ``stop``, last phase first; a failure is logged and ignored."""
        for phase in reversed(health.phase_table(self.inventory)):
            for at in phase:
                try:
                    ok = self.step(at, "stop").ok
                except Refusal as err:
                    # Out of time: named, and the others still stop.
                    print(f"[{self.tag}] error: {err}", file=sys.stderr, flush=True)
                    ok = False
                if not ok:
                    self.log(f"could not stop {at.role} on {at.node} (ignored)")


def main(lab: str, action: str, clock: Clock | None = None) -> int:
    if action not in ("up", "down"):
        raise Refusal(f"'{action}' is not a phases action; give up or down")
    inventory, transport = status.lab_of(lab)
    phases = Phases(lab, inventory, transport, os.environ.get("PFSLAB_LOG_TAG") or "pfslab", os.environ,
                    clock or RealClock())
    if action == "up":
        phases.up()
    else:
        phases.down()
    return 0
