"""A lab's batch scheduler as ReFrame and the job scripts see it (the lab's ``scheduler``).

A lab without one runs its jobs on this machine (ReFrame's ``local`` scheduler) and
starts each step's ranks with its own mpirun line, hostfile and rsh agent. A lab with
Slurm submits each test as one batch job that asks for the lab's access options, and
each step starts its ranks through Slurm inside that allocation: ``srun`` with the
case's task and node counts, or the lab's mpirun line without its hostfile.
"""

from __future__ import annotations

import re
from typing import Any

from pfslab import labs

#: The lab's access fields and the sbatch option each one becomes, in this order.
ACCESS_OPTIONS: dict[str, str] = {
    "partition": "--partition",
    "account": "--account",
    "qos": "--qos",
    "constraint": "--constraint",
}

#: Launcher settings by which Open MPI starts its daemons itself (over the kit's rsh
#: agent into each node). Inside an allocation Slurm starts them, on the nodes it gave.
RSH_LAUNCH_ENV: frozenset[str] = frozenset({"OMPI_MCA_plm_rsh_agent", "OMPI_MCA_plm_rsh_no_tree_spawn"})

#: A hostfile option of an mpirun line with its value (Open MPI's spellings).
_HOSTFILE_OPTION = re.compile(r"\s+--?(?:hostfile|machinefile)(?:=|\s+)\S+")


def kind(lab: dict[str, Any]) -> str | None:
    """The lab's scheduler type (``slurm``), or None when jobs run on this machine."""
    sched = lab.get("scheduler") or {}
    value = sched.get("type")
    return str(value) if value else None


def launcher(lab: dict[str, Any]) -> str | None:
    """How the lab's jobs start ranks under its scheduler (``srun`` or ``mpirun``), or
    None when the lab has no scheduler (the lab's own mpirun line does)."""
    if kind(lab) is None:
        return None
    return str(labs.setting(lab, "scheduler.launcher"))


def access(lab: dict[str, Any]) -> list[str]:
    """The sbatch options of every job: the access fields the lab gives, in a fixed order."""
    sched = lab.get("scheduler") or {}
    return [f"{option}={sched[field]}" for field, option in ACCESS_OPTIONS.items() if sched.get(field)]


def reframe_scheduler(lab: dict[str, Any]) -> str:
    """ReFrame's scheduler backend for the lab's partition.

    Slurm: ``squeue``, ReFrame's sbatch backend that follows its jobs with squeue. Its
    ``slurm`` backend follows them with sacct, which answers only where slurmdbd runs;
    the kit's Slurm keeps its records in the job-completion log instead (no slurmdbd),
    so under ``slurm`` every job's poll would fail ("Slurm accounting storage is disabled").
    """
    return "squeue" if kind(lab) == "slurm" else "local"


#: ReFrame's launcher of a partition whose ranks start with the lab's mpirun line
#: (pfslab/rfm_launcher.py; its name here so that this module needs no ReFrame).
LAB_MPIRUN = "lab-mpirun"


def reframe_launcher(lab: dict[str, Any]) -> str:
    """ReFrame's launcher for the lab's partition: ReFrame's ``srun`` under Slurm, else
    the lab's own mpirun line (with its hostfile, or inside the allocation without)."""
    return "srun" if launcher(lab) == "srun" else LAB_MPIRUN


def job_env(lab: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """The launcher environment a job of the lab exports: without the rsh agent under a
    scheduler (Slurm starts Open MPI's daemons in the allocation)."""
    if kind(lab) is None:
        return dict(env)
    return {k: v for k, v in env.items() if k not in RSH_LAUNCH_ENV}


def without_hostfile(line: str) -> str:
    """An mpirun line template with its hostfile option removed (``--hostfile {hostfile}``,
    ``--hostfile={hostfile}``, ``-machinefile {hostfile}``), the rest as written: inside
    an allocation, mpirun takes its hosts and slots from Slurm."""
    return _HOSTFILE_OPTION.sub("", line)


def srun_line(tasks: int, nodes: int, per_node: int | None = None) -> str:
    """The srun that starts one step's ranks inside the job's allocation: ``tasks`` ranks
    over ``nodes`` nodes, placed round robin over the nodes as the kit's hostfiles place
    them (rank i on node i mod nodes), or exactly ``per_node`` on each."""
    line = f"srun --ntasks={tasks} --nodes={nodes}"
    if per_node is not None:
        line += f" --ntasks-per-node={per_node}"
    return line + " --distribution=cyclic"
