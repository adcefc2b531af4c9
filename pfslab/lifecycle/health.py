"""One health engine for a lab: what preflight and the run's watchdog check, and how
each answer is judged.

The checks run through the lab's transport (:mod:`pfslab.transport`): the role
scripts' ``health`` steps on each node (daemons up, targets mounted, devices as the lab
file says, each client's mount answering, slurmd and slurmctld up), the file system's
``health service`` / ``health cluster``, and, for a remote lab, the fabric and the
node tuning. A site lab's nodes are judged by its scheduler (:mod:`pfslab.site_health`).
The judging functions (``judge_*``) take recorded results, so each is tested without a
lab.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from pfslab import KIT_ROOT, registry
from pfslab.model import Inventory, Placement
from pfslab.transport.base import TIMED_OUT, Result, Transport, bounded
from pfslab.transport.ssh import SSH_FAILED, SshTransport, unreachable_reason

#: fabric-probe's exit status when the login node has no MPI to probe with (pfslab/cli.py).
PROBE_UNAVAILABLE = 3
#: A role's ``health service`` status for "serving, but degraded" (an OSD down, pools available).
SERVICE_DEGRADED = 3


# ---- the lab's roles ----------------------------------------------------------------

@dataclass(frozen=True)
class RoleOnNode:
    node: str
    role: str

    @property
    def family(self) -> str:
        return self.role.split("-", 1)[0]

    @property
    def component(self) -> str:
        return self.role.split("-", 1)[1]


def phase_table(inventory: Inventory) -> list[list[RoleOnNode]]:
    """The lab's roles phase by phase, in start order: the phases the lab plan derived
    (an inventory written before it had phases: one phase, its roles in node order)."""
    phases = inventory.phases or ((tuple(Placement(n.name, r) for n in inventory.nodes for r in n.roles)),)
    return [[RoleOnNode(e.node, e.role) for e in phase if e.node] for phase in phases]


def role_table(inventory: Inventory) -> list[RoleOnNode]:
    """Every role of the lab in start order (:func:`phase_table`)."""
    return [at for phase in phase_table(inventory) for at in phase]


def is_client_role(role: str) -> bool:
    return role in registry.client_roles()


def is_scheduler_role(role: str) -> bool:
    return any(role in s.role_names() for s in registry.schedulers().values())


def clients(inventory: Inventory) -> list[str]:
    """The inventory's clients, else the nodes with a client role."""
    if inventory.clients is not None:
        return list(inventory.clients)
    return [n.name for n in inventory.nodes if any(is_client_role(r) for r in n.roles)]


def client_pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """The clients in pairs, every client in one (an odd last one with the first)."""
    pairs = [(names[i], names[i + 1]) for i in range(0, len(names) - 1, 2)]
    if len(names) % 2 and len(names) > 1:
        pairs.append((names[-1], names[0]))
    return pairs


# ---- preflight: one PASS/FAIL/SKIP line per check -------------------------------------

@dataclass(frozen=True)
class Check:
    status: str
    where: str
    what: str
    detail: str

    def line(self) -> str:
        return f"{self.status} {self.where:<10} {self.what:<16} {self.detail}"


def judge_check(node: str, address: str, what: str, result: Result) -> Check:
    """A node's check: its last line; ssh's own failure (255) is the node not answering."""
    last = result.last_line()
    if result.ok:
        return Check("PASS", node, what, last)
    if result.rc == SSH_FAILED:
        last = f"ssh to {node} ({address}) failed: {last}"
    elif result.rc == TIMED_OUT:
        last = f"{what} on {node} did not answer in time{': ' + last if last else ''}"
    return Check("FAIL", node, what, last or f"exit status {result.rc}")


def judge_probe(a: str, b: str, login: str, result: Result) -> Check:
    """The two-rank MPI probe of a client pair, run on the login node."""
    where, last = f"{a},{b}", result.last_line()
    if result.ok:
        return Check("PASS", where, "mpi-fabric", last)
    if result.rc == PROBE_UNAVAILABLE:
        # No MPI on the login node: no MPI job runs there either, so no transport to fall back.
        return Check("SKIP", where, "mpi-fabric", last)
    if result.rc == SSH_FAILED:
        last = f"ssh to the login node {login} failed: {last}"
    return Check("FAIL", where, "mpi-fabric", last or f"exit status {result.rc}")


def preflight_checks(lab: str, inventory: Inventory, ssh: SshTransport, timeout: float) -> Iterator[Check]:
    """Fabric on every node, tuning on servers, every role's health, the file system's
    cluster health on its first server, then MPI between each client pair."""
    first: tuple[str, str, str] | None = None
    for node in inventory.nodes:
        name, address, roles = node.name, node.address, node.roles

        def check(what: str, family: str, *args: str) -> Check:
            return judge_check(name, address, what, ssh.run(name, ssh.role_command(family, *args), timeout))

        yield check("fabric", "common", "health", "fabric")
        if any(not is_client_role(r) for r in roles):
            yield check("tuning", "common", "health", "tuning")
        for role in roles:
            on = RoleOnNode(name, role)
            yield check(role, on.family, "health", on.component)
            if first is None and not is_client_role(role):
                first = (name, address, on.family)
    if first is not None:
        name, address, family = first
        yield judge_check(name, address, f"{family}-cluster",
                          ssh.run(name, ssh.role_command(family, "health", "cluster"), timeout))
    names = clients(inventory)
    login = inventory.login or (names[0] if names else "")
    pairs = client_pairs(names)
    if not login or not pairs:
        yield Check("SKIP", login or "-", "mpi-fabric",
                    f"lab {lab} has fewer than two clients: no pair for a two-rank test")
        return
    for a, b in pairs:
        script = f"cd {ssh.remote_root} && .venv/bin/pfslab fabric-probe {lab} {a} {b}"
        yield judge_probe(a, b, login, ssh.run_shell(login, script, timeout))


# ---- the watchdog's readings -----------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    #: Fatal: the lab does not serve (I/O stops); else serving but degraded.
    fatal: bool
    detail: str


@dataclass
class Reading:
    problems: list[Problem] = field(default_factory=list)
    #: The scheduler's own judgement (its pings already failed): acted on at once.
    certain: bool = False

    def fatal(self) -> str:
        return "; ".join(p.detail for p in self.problems if p.fatal)

    def degraded(self) -> str:
        return "; ".join(p.detail for p in self.problems if not p.fatal)


@dataclass(frozen=True)
class RoleAnswer:
    at: RoleOnNode
    result: Result


def why_failed(answer: RoleAnswer, lab: str, timeout: float) -> str:
    """One line for a failing role check: its output, or why it gave none."""
    at, result = answer.at, answer.result
    if result.rc == TIMED_OUT:
        return f"{at.role} on {at.node}: its health check did not answer in {timeout:g}s"
    if result.rc == SSH_FAILED:
        return (f"host {at.node} stopped answering over SSH ({unreachable_reason(result.output)}): bring it back, "
                f"run 'make lab-up LAB={lab}', then run the benchmarks again")
    return "; ".join(ln for ln in result.output.strip("\n").splitlines())


def judge_roles(answers: Iterable[RoleAnswer], essential: set[str], service: RoleAnswer, lab: str,
                timeout: float) -> list[Problem]:
    """A full reading from every role's ``health`` answer and the file system's
    ``health service``:
    - a failing client (its mount gone or hung) or scheduler daemon (its node's jobs
      cannot run): fatal; another failing role: degraded;
    - every instance of an essential role (the family's ``essential`` list) failing: fatal;
    - the service: status 3 degraded (still serving), any other failure fatal."""
    found: list[Problem] = []
    instances: dict[str, int] = {}
    failed: dict[str, int] = {}
    for answer in answers:
        role = answer.at.role
        instances[role] = instances.get(role, 0) + 1
        if answer.result.ok:
            continue
        failed[role] = failed.get(role, 0) + 1
        fatal = is_client_role(role) or is_scheduler_role(role)
        found.append(Problem(fatal, f"{answer.at.node}: {why_failed(answer, lab, timeout)}"))
    for role, count in failed.items():
        if count == instances[role] and RoleOnNode("", role).component in essential:
            found.append(Problem(True, f"every {role} of the lab is down"))
    result = service.result
    if not result.ok:
        first = next(iter(result.output.splitlines()), "")
        if result.rc == SSH_FAILED:
            first = why_failed(service, lab, timeout)
        if result.rc == SERVICE_DEGRADED:
            found.append(Problem(False, first))
        else:
            found.append(Problem(True, first if first and result.rc != TIMED_OUT else
                                 f"the service check of the file system did not answer in {timeout:g}s"))
    return found


def essential_roles(family: str, node_config: str) -> set[str]:
    """The components the family cannot serve without (its role script's ``essential``),
    asked on this machine with a node config of the lab."""
    env = dict(os.environ, PFSLAB_NODE_CONFIG=node_config)
    done = bounded([str(registry.role_script(family)), "essential"], 30, env=env)
    return set(done.output.split()) if done.ok else set()


def full_reading(lab: str, inventory: Inventory, transport: Transport, essential_config: str,
                 timeout: float) -> Reading:
    """Every role's health check and the file system's service, through the transport."""
    table = role_table(inventory)
    if not table:
        return Reading()
    answers = [RoleAnswer(at, transport.run(at.node, transport.role_command(at.family, "health", at.component),
                                            timeout)) for at in table]
    first = table[0]
    service = RoleAnswer(first, transport.run(first.node, transport.role_command(first.family, "health", "service"),
                                              timeout))
    return Reading(judge_roles(answers, essential_roles(first.family, essential_config), service, lab, timeout))



# ---- lab-up's health wait and lab-status (a local lab) --------------------------------

def cluster_role(inventory: Inventory) -> RoleOnNode | None:
    """Whose view of the whole file system counts (``health cluster``): the first server role."""
    table = role_table(inventory)
    return next((r for r in table if not is_client_role(r.role)), table[-1] if table else None)


def ready(inventory: Inventory, transport: Transport, timeout: float) -> tuple[bool, Result]:
    """One look: the file system healthy (its cluster check) and every client mounted.
    Gives the cluster check's answer, to show when the wait runs out."""
    first = cluster_role(inventory)
    if first is None:
        return True, Result(0, "")
    cluster = transport.run(first.node, transport.role_command(first.family, "health", "cluster"), timeout)
    if not cluster.ok:
        return False, cluster
    for at in role_table(inventory):
        if is_client_role(at.role) and not transport.run(
                at.node, transport.role_command(at.family, "health", "client"), timeout).ok:
            return False, cluster
    return True, cluster
