"""The health of a site lab during a run, as its scheduler sees it.

A site lab's daemons are the site's: the kit, an ordinary user there, can neither
look at them nor restart them. What it can ask is the scheduler: Slurm's controller
pings every slurmd (every SlurmdTimeout/3 seconds) and marks a node that stopped
answering NOT_RESPONDING (``*`` after its state in sinfo), then DOWN. A node of the
lab in such a state cannot run its share of a job, so the run's watchdog
(scripts/watchdog) ends the run on it, as it does on a lab whose file system stopped
serving.

Which nodes count: the ones the lab names (its target's section's ``nodes``, e.g.
``targets.site.nodes``, as a list), each of them; with a count only, the partition's
nodes, of which fewer usable than the count is fatal (a site's large partition always
has a node or two down, and the scheduler places the jobs elsewhere). Every target that
provisions nothing (target.json ``provisions`` false) gives its nodes so (pfslab.labs
checks them against the node groups); this module reads them by that, never by the
target's name, and the target's own checks (targets/site/checks.py) read them here.

Parsing and judging are pure functions of sinfo's text, tested with fabricated
outputs; :func:`problems` runs sinfo.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from pfslab.errors import KitError

#: sinfo's fields, one node a line: name, long state (with its flag characters), reason.
SINFO_FORMAT = "%N|%T|%E"

#: Base states in which a node runs no job of the lab (sinfo's long names, lower case;
#: "drained"/"draining": an administrator took it out; "unknown": never registered).
UNUSABLE_STATES: frozenset[str] = frozenset(
    {"down", "drained", "draining", "drain", "fail", "failing", "unknown", "future", "inval", "power_down",
     "powered_down", "powering_down"}
)

#: Characters sinfo appends to a state: ``*`` the node does not respond; the others
#: (power saving, maintenance, reboot) say nothing about whether it is alive.
NOT_RESPONDING_FLAG = "*"
STATE_FLAGS = "*~#!%$@^-"

#: Seconds one sinfo may take: its controller's answer, which a busy site may delay.
SINFO_TIMEOUT_S = 20


def settings(lab: dict[str, Any]) -> dict[str, Any]:
    """The lab's ``targets.<its target>`` section (defaults filled by the resolver)."""
    section: dict[str, Any] = lab.get("targets", {}).get(lab["target"], {})
    return section


def node_names(lab: dict[str, Any]) -> list[str] | None:
    """The nodes the lab names, or None when it gives a count only."""
    given = settings(lab)["nodes"]
    return list(given) if isinstance(given, list) else None


def node_count(lab: dict[str, Any]) -> int:
    given = settings(lab)["nodes"]
    return given if isinstance(given, int) else len(given)


def scheduler(lab: dict[str, Any]) -> str:
    return str((lab.get("scheduler") or {}).get("type", "none"))


class UnansweredError(KitError):
    """The scheduler gave no judgement (sinfo failed or timed out): the watch is blind."""


@dataclass(frozen=True)
class NodeState:
    node: str
    state: str
    responding: bool
    reason: str

    @property
    def usable(self) -> bool:
        return self.responding and self.state not in UNUSABLE_STATES

    def why(self) -> str:
        what = [] if self.responding else ["not responding to the Slurm controller (its slurmd is gone or unreachable)"]
        if self.state in UNUSABLE_STATES:
            what.append(f"state {self.state}")
        reason = f"; reason: {self.reason}" if self.reason and self.reason != "none" else ""
        return f"node {self.node}: {', '.join(what)} (sinfo: {self.state}{'' if self.responding else '*'}{reason})"


def sinfo_command(lab: dict[str, Any]) -> list[str]:
    """sinfo for the lab's nodes: the ones it names, else its partition's (else all)."""
    cmd = ["sinfo", "--noheader", "--Node", f"--format={SINFO_FORMAT}"]
    names = node_names(lab)
    partition = (lab.get("scheduler") or {}).get("partition")
    if names:
        cmd.append(f"--nodes={','.join(names)}")
    elif partition:
        cmd.append(f"--partition={partition}")
    return cmd


def parse(text: str) -> dict[str, NodeState]:
    """sinfo's lines (SINFO_FORMAT) per node; a node listed once per partition is kept once."""
    out: dict[str, NodeState] = {}
    for line in text.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) < 2 or not parts[0]:
            continue
        node, raw = parts[0].strip(), parts[1].strip().lower()
        base = raw.rstrip(STATE_FLAGS)
        # "mixed+drain"-like combined names: any unusable part makes the node unusable.
        state = next((p for p in base.split("+") if p in UNUSABLE_STATES), base)
        out.setdefault(node, NodeState(node, state, NOT_RESPONDING_FLAG not in raw[len(base):],
                                       parts[2].strip() if len(parts) > 2 else ""))
    return out


def judge(lab: dict[str, Any], states: dict[str, NodeState]) -> list[str]:
    """What keeps the run from going on, one line each naming the node; [] when healthy."""
    names = node_names(lab)
    if names is not None:
        out = [f"node {n}: not in the Slurm controller's node list (sinfo lists no such node)"
               for n in names if n not in states]
        return out + [states[n].why() for n in names if n in states and not states[n].usable]
    bad = [s for s in states.values() if not s.usable]
    usable = len(states) - len(bad)
    if usable >= node_count(lab):
        return []
    partition = (lab.get("scheduler") or {}).get("partition") or "(default)"
    return [f"partition {partition}: {usable} usable node(s), the lab needs {node_count(lab)}; "
            + "; ".join(s.why() for s in bad)]


def problems(lab: dict[str, Any]) -> list[str]:
    """Ask the scheduler; the lines of :func:`judge`. Raises UnansweredError when it
    did not answer (a judgement of the controller differs from none: the watchdog acts
    on the first at once, on the second only when it lasts)."""
    if scheduler(lab) != "slurm":
        return []
    cmd = sinfo_command(lab)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=SINFO_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise UnansweredError(f"the Slurm controller did not answer sinfo within {SINFO_TIMEOUT_S} s") from None
    except OSError as err:
        raise UnansweredError(f"sinfo could not run: {err}") from None
    if done.returncode != 0:
        why = next((ln for ln in done.stderr.splitlines() if ln.strip()), f"exit status {done.returncode}")
        raise UnansweredError(f"the Slurm controller did not answer: sinfo: {why}")
    return judge(lab, parse(done.stdout))
