"""What every tool module shares: where a case runs (:class:`Context`), the step a tool
renders (:class:`Step`) from what the workload gives it (:class:`StepInput`), and how
ranks are started (the lab's mpirun line with a hostfile, or srun / mpirun inside a
batch job). No tool module imports :mod:`pfslab.workloads`; it imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from pfslab import distribution, scheduler
from pfslab.errors import KitError


class WorkloadError(KitError, ValueError):
    """A workload cannot be rendered (bad mode, unknown placeholder ...)."""


@dataclass(frozen=True)
class Client:
    name: str
    address: str


@dataclass
class Context:
    """Where a case runs: everything rendering needs that is not in the lab file."""

    clients: list[Client]
    scratch_dir: str  # benchmark directory inside the file system (unique per run)
    work_dir: str  # the job's own directory (hostfiles, outputs); visible to all nodes
    tool_path: str  # the tool's executable as the nodes see it
    mpirun: str | None = None  # overrides the lab's launcher line (e.g. for a remote system)
    iozone_master: str | None = None  # local lab: address IOzone children connect back to
    hostfile_slots: bool = True
    # Where each rank writes its own output when work_dir is on the launching node only
    # (a remote lab's login node): a directory every client sees (the run's scratch in
    # the file system); the job moves the outputs to work_dir after the step.
    rank_dir: str | None = None
    # How each step starts its ranks inside a batch job of the lab's scheduler (srun, or
    # mpirun without a hostfile; pfslab/scheduler.py), None: the lab's mpirun line and a hostfile.
    scheduler_launcher: str | None = None


@dataclass
class Step:
    """One line of the job: a tool run (with the file it prints to) or a cache drop."""

    kind: str  # "run" or "drop-caches"
    command: str = ""
    output: str = ""
    measures: list[str] = field(default_factory=list)
    prepare: bool = False
    iteration: int = 1
    collect: str = ""  # per-rank outputs written elsewhere (Context.rank_dir), moved to work_dir
    # An extended regex of the tool's own message for a failure to start (nothing
    # measured): the job tries such a step again, up to twice, keeping each failed output.
    transient: str = ""
    # What starts the step's ranks, the head of ``command`` (the lab's mpirun line with
    # its hostfile, or srun / mpirun inside an allocation); empty: the tool runs as it is.
    launch: str = ""

    @property
    def program(self) -> str:
        """``command`` without what starts its ranks: the tool (or its per-rank shell) and its options."""
        assert self.command.startswith(self.launch), (self.launch, self.command)
        return self.command[len(self.launch):].strip()


@dataclass
class JobInput:
    """What a tool may add to a case's job before its steps render: placeholder values
    and files in work_dir (IO500's config, for one)."""

    lab: dict[str, Any]
    workload: dict[str, Any]
    sizes: dict[str, Any]
    mode: str
    ctx: Context
    values: dict[str, str]
    files: dict[str, str]


@dataclass
class StepInput:
    """One step of one case, as the workload hands it to its tool: arguments filled in."""

    lab: dict[str, Any]
    workload: dict[str, Any]
    ctx: Context
    hosts: list[str]  # the case's client addresses
    threads: int
    nodes: int | None  # the case's nodes, None: threads spread over all its clients
    point: str  # the case's sweep point (``4`` or ``8x2``), naming its hostfile
    spec: dict[str, Any]  # the workload's step
    iteration: int
    args: str  # the step's arguments, placeholders filled in
    tag: str  # step<n>[.it<k>]: names the step's output
    launcher: str | None  # the lab's mpirun line for this case
    files: dict[str, str]  # the job's files (name in work_dir -> content); a tool adds its own

    @property
    def output(self) -> str:
        return f"{self.ctx.work_dir}/{self.tag}.{self.workload['tool']}.out"

    def step(self, command: str, output: str | None = None, **extra: Any) -> Step:
        """A run step of ``command`` with the spec's measures and prepare flag."""
        return Step("run", command, self.output if output is None else output, list(self.spec.get("measures", [])),
                    bool(self.spec.get("prepare", False)), self.iteration, **extra)


def nodes_used(point: tuple[int, int | None], clients: int) -> int:
    """The client nodes a point (threads, nodes) runs on: its nodes, else one per thread up to every client."""
    threads, nodes = point
    return nodes if nodes is not None else min(threads, clients)


def program_index(tokens: list[str], executable: str) -> int:
    """Where the program ``executable`` is among a command's tokens (after what starts its ranks)."""
    for index, token in enumerate(tokens):
        if PurePath(token).name == executable:
            return index
    raise ValueError(f"no {executable} in {' '.join(tokens)}")


def no_table(lab: dict[str, Any], tokens: list[str]) -> list[str]:
    """A tool whose options the kit keeps no table of: nothing to check."""
    return []


def _mpirun(line: str, np: int, hostfile: str) -> str:
    return line.replace("{np}", str(np)).replace("{hostfile}", hostfile)


def start(ctx: Context, line: str | None, np: int, nodes: int, hostfile: str, per_node: int | None = None) -> str:
    """What starts ``np`` ranks over ``nodes`` clients: srun or mpirun inside the job's
    allocation, or the lab's mpirun line with ``hostfile`` (written by the caller)."""
    if ctx.scheduler_launcher == "srun":
        return scheduler.srun_line(np, nodes, per_node)
    assert line is not None
    if ctx.scheduler_launcher == "mpirun":
        return _mpirun(scheduler.without_hostfile(line), np, "")
    return _mpirun(line, np, hostfile)


def need_launcher(inp: StepInput) -> None:
    """A tool started by mpirun needs the lab's line (srun inside a batch job does not)."""
    if not inp.launcher and inp.ctx.scheduler_launcher != "srun":
        raise WorkloadError(f"lab {inp.lab['name']} has no launcher.mpirun line for {inp.workload['tool']}")


def mpi_step(inp: StepInput) -> Step:
    """An MPI program: ``threads`` ranks round-robin over the case's clients, from a hostfile."""
    need_launcher(inp)
    hostfile = f"{inp.ctx.work_dir}/hosts.{inp.point}"
    if inp.ctx.scheduler_launcher is None:  # inside a batch job, Slurm knows the nodes: no hostfile
        inp.files[f"hosts.{inp.point}"] = distribution.hostfile(inp.threads, inp.hosts, slots=inp.ctx.hostfile_slots)
    head = start(inp.ctx, inp.launcher, inp.threads, nodes_used((inp.threads, inp.nodes), len(inp.hosts)), hostfile)
    return inp.step(f"{head} {inp.ctx.tool_path} {inp.args}", launch=head)

