"""Every job line of a lab, as the real run renders it, made small enough to run here.

``make smoke`` (pfslab/smoke_run.py) proves each command line against the tool that
runs it. This module plans that: each case of each workload is rendered by the kit's own
renderer (:func:`pfslab.workloads.render`, with the lab's client nodes, as a dry run
renders it), each step's exact line is checked against the option tables the kit keeps
(IOR/mdtest: spack/ior-options.json for the lab's IOR release and build features;
IOzone: the size suffixes it reads; mpirun and the launcher's MCA environment:
spack/openmpi-components.json for the lab's Open MPI), and then scaled down:

- only the values of options that are sizes, counts or times change (:data:`SCALE`),
  threads and ranks go to at most :data:`MAX_RANKS`, a job's iterations to its first
  (the others repeat its lines); every other option stays;
- options that need hardware absent here (BeeGFS striping, GPFS and Lustre hints: IOR
  option names with :data:`HARDWARE` in them; mpirun's ``--mca`` transport selections)
  are removed from the run; the table check above is what proves them, and the plan
  says which they were;
- the hostfiles and IOzone thread lists name this machine.

IOzone reads ``-s 8t`` as 8 KiB without a word, so running it cannot catch a wrong
suffix; the check of the exact line (pfslab/tools/iozone_options.py: k, m, g only) does.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from pfslab import distribution, labs, mpi_options, registry, state, toolchain, tools, workloads
from pfslab.tools import io500_config, iozone_options
from pfslab.tools.base import program_index
from pfslab.units import parse_size

#: Ranks (MPI) or threads (IOzone, fio jobs) a smoke runs at most.
MAX_RANKS = 2
#: IOR option names that need hardware or a file-system client absent here.
HARDWARE = re.compile(r"beegfs|gpfs|lustre", re.IGNORECASE)
#: mpirun options that select a fabric's transport (removed; table-checked).
MPI_FABRIC_OPTIONS = frozenset({"--mca", "-mca", "--gmca", "-gmca"})
#: The launcher's environment that selects a fabric (not set here; table-checked).
FABRIC_ENV = re.compile(r"^(OMPI_MCA_(pml|mtl|btl|osc)\b|FI_|UCX_)")

#: Per tool, the options whose value is a size, count or time, and the small value
#: each gets (a function of the old value and the other options).
Scaler = Any


def _at_most(limit: int) -> Scaler:
    return lambda value, _opts: str(min(int(value), limit))


def _fixed(small: str) -> Scaler:
    return lambda _value, _opts: small


def _ior_block(_value: str, opts: dict[str, str]) -> str:
    # One transfer per block: the smallest block IOR accepts with the line's -t.
    return opts.get("-t", "1m")


def _iozone_size(_value: str, opts: dict[str, str]) -> str:
    # Two records per file (the random test needs more than one), in IOzone's suffixes.
    return iozone_options.size(2 * parse_size(opts.get("-r", "64k")))


SCALE: dict[str, dict[str, Scaler]] = {
    "ior": {"-b": _ior_block, "-s": _at_most(1), "-i": _at_most(1), "-d": _fixed("0"), "-D": _at_most(2)},
    "mdtest": {"-b": _at_most(2), "-z": _at_most(2), "-I": _at_most(4), "-n": _at_most(8), "-i": _at_most(1)},
    "iozone": {"-s": _iozone_size, "-t": _at_most(MAX_RANKS)},
    "fio": {"--size": _fixed("1m"), "--runtime": _fixed("1"), "--ramp_time": _fixed("0"), "--io_size": _fixed("1m")},
}
#: Integer sizes of a workload's input files (LAMMPS) are divided by this, at least 1.
INPUT_DIVISOR = 50


@dataclass
class StepPlan:
    """One run step of one job: the exact line, what the tables say, and the line to run."""

    lab: str
    workload: str
    job: str  # the case's sweep point (threads, or nodes x processes)
    step: int
    tool: str
    version: str | None  # the version the lab's view runs (None: the view has no such tool)
    exact: str  # the command the real run renders
    run: str = ""  # the scaled command run here
    files: dict[str, str] = field(default_factory=dict)  # work_dir files for the scaled run
    output: str = ""  # where the run writes its output (a glob for fio's per-rank files)
    measures: list[str] = field(default_factory=list)
    prepare: bool = False
    problems: list[str] = field(default_factory=list)  # rejected by a table: the job fails
    table_checked: list[str] = field(default_factory=list)  # removed from the run, checked by table
    ranks: int = 1

    @property
    def where(self) -> str:
        return f"{self.lab} {self.workload} {self.job} step {self.step}"


# ---- scaling ----------------------------------------------------------------------

def _value_options(tool: str, tokens: list[str]) -> dict[str, str]:
    """Option -> value of separated ``-x value`` and ``--name=value`` tokens."""
    out: dict[str, str] = {}
    for i, token in enumerate(tokens):
        if token.startswith("--") and "=" in token:
            name, _, value = token.partition("=")
            out[name] = value
        elif token.startswith("-") and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
            out[token] = tokens[i + 1]
    return out


def scale_args(tool: str, tokens: list[str]) -> tuple[list[str], list[str]]:
    """(scaled tokens, removed hardware options) of a tool's arguments: the values of
    size, count and time options made small, hardware options taken out, nothing else."""
    rules = SCALE.get(tool, {})
    opts = _value_options(tool, tokens)
    out: list[str] = []
    removed: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if tool == "ior" and token == "-O" and i < len(tokens):
            value = tokens[i]
            i += 1
            kept = [d for d in value.split(",") if not HARDWARE.search(d.partition("=")[0])]
            removed.extend(f"-O {d}" for d in value.split(",") if d not in kept)
            if kept:
                out += ["-O", ",".join(kept)]
            continue
        if tool == "ior" and token.startswith("--") and HARDWARE.search(token):
            removed.append(token)
            continue
        if token.startswith("--") and "=" in token:
            name, _, value = token.partition("=")
            if name in rules:
                token = f"{name}={rules[name](value, opts)}"
            out.append(token)
            continue
        if token in rules and i < len(tokens):
            out += [token, rules[token](tokens[i], opts)]
            i += 1
            continue
        out.append(token)
    return out, removed


def scale_mpirun(tokens: list[str], ranks: int) -> tuple[list[str], list[str]]:
    """An mpirun line's tokens (up to its program) with ``ranks`` ranks, oversubscribed,
    without fabric selections (returned as removed). Root is allowed by the environment
    (pfslab/smoke_run.py), as on remote labs."""
    out: list[str] = []
    removed: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in ("-np", "-n", "-c", "--np", "--n") and i + 1 < len(tokens):
            out += [token, str(ranks)]
            i += 2
            continue
        if token in MPI_FABRIC_OPTIONS and i + 2 < len(tokens):
            removed.append(" ".join(tokens[i:i + 3]))
            i += 3
            continue
        out.append(token)
        i += 1
    if "--oversubscribe" not in out:
        out.append("--oversubscribe")
    return out, removed


# ---- planning ----------------------------------------------------------------------

def _view_version(lab: dict[str, Any], tool: str) -> str | None:
    try:
        return toolchain.tool_version(lab, tool)
    except KeyError:
        return None


def _mpi(lab: dict[str, Any]) -> mpi_options.OpenMPI | None:
    version = _view_version(lab, "openmpi")
    return next((m for m in mpi_options.locked() if m.version == version), None)


def _program_index(tokens: list[str], tool: str) -> int:
    return program_index(tokens, tools.executable(tool))


def table_problems(lab: dict[str, Any], tool: str, tokens: list[str], env: dict[str, str]) -> list[str]:
    problems = tools.module(tool).check_command(lab, tokens)
    mpi = _mpi(lab)
    if mpi is not None and tokens and PurePath(tokens[0]).name in ("mpirun", "mpiexec"):
        problems += mpi_options.check_command(mpi, tokens) + mpi_options.check_env(mpi, env)
    return problems


#: The IO500 stonewall of a smoke run, in seconds.
SMOKE_STONEWALL_S = 1


def _scaled_files(files: dict[str, str], ranks: int, threads: int, scratch: str, tool_path: str) -> dict[str, str]:
    out = dict(files)
    for name in files:
        if name.startswith(("hosts.", "nodes.")):
            out[name] = distribution.hostfile(ranks, ["localhost"])
        elif name.startswith("threadlist."):
            out[name] = distribution.iozone_threadlist(threads, ["localhost"], scratch, tool_path)
        elif name == io500_config.CONFIG_FILE:
            # A time, scaled as the others: on a fast local scratch the quick sizes ran out
            # before a 5 s stonewall (IO500 then marks the run invalid, rightly); 1 s ends
            # every write phase first and keeps the smoke short.
            out[name] = re.sub(r"(?m)^stonewall-time = \d+$", f"stonewall-time = {SMOKE_STONEWALL_S}", files[name])
    return out


def _scaled_inputs(lab: dict[str, Any], workload: dict[str, Any], case: workloads.Case,
                   ctx: workloads.Context) -> dict[str, str]:
    """A workload's input files (LAMMPS) rendered by the kit with its integer sizes
    divided by :data:`INPUT_DIVISOR` (ratios such as steps per dump kept)."""
    if not workload.get("inputs"):
        return {}
    small = dict(workload)
    sizes = workloads.sizes_for(workload, case.mode)
    small["sizes"] = {k: max(1, v // INPUT_DIVISOR) if isinstance(v, int) else v for k, v in sizes.items()}
    small.pop("quick", None)
    rendered = workloads.render_workload(lab, small, case, ctx)
    return {name: rendered.files[name] for name in workload["inputs"]}


def _scale_fio(script: str, threads: int, nodes: int) -> str:
    """fio's per-node ``sh -c`` script with ``threads`` jobs over ``nodes`` ranks."""
    script = re.sub(r"--numjobs=\$\(\( \d+ / \d+ \+ \(r < \d+ % \d+\) \)\)",
                    f"--numjobs=$(( {threads} / {nodes} + (r < {threads} % {nodes}) ))", script)
    for name, rule in SCALE["fio"].items():
        script = re.sub(rf"(?<=\s){re.escape(name)}=\S+", f"{name}={rule('', {})}", script)
    return script


def plan_step(lab: dict[str, Any], workload: dict[str, Any], case: workloads.Case, n: int,
              step: workloads.Step, rendered: workloads.Rendered, ctx: workloads.Context,
              env: dict[str, str]) -> StepPlan:
    tool = workload["tool"]
    tokens = shlex.split(step.command)
    plan = StepPlan(case.lab, case.workload, case.sweep_point, n, tool, _view_version(lab, tool), step.command,
                    output=step.output, measures=list(step.measures), prepare=step.prepare)
    plan.problems = table_problems(lab, tool, tokens, env)
    threads = min(case.threads, MAX_RANKS)
    at = _program_index(tokens, "sh" if tool == "fio" else tool)
    head, args = tokens[:at], tokens[at + 1:]
    if tool == "fio":
        nodes = min(case.nodes or case.threads, MAX_RANKS, threads)
        plan.ranks = nodes
        args = ["-c", _scale_fio(args[1], threads, nodes)]
        removed: list[str] = []
    else:
        plan.ranks = threads if head or tool == "iozone" else 1
        args, removed = scale_args(tool, args)
    if tool == "iozone":
        # The children connect back to the master here, whatever address the lab gives it.
        at_h = args.index("-+h") if "-+h" in args else None
        args = (args[:at_h] + args[at_h + 2:] if at_h is not None else args) + ["-+h", "127.0.0.1"]
    if head:
        head, dropped = scale_mpirun(head, plan.ranks)
        removed += dropped
        removed += [f"{k}={v}" for k, v in sorted(env.items()) if FABRIC_ENV.match(k)]
    plan.table_checked = removed
    plan.run = shlex.join([*head, tokens[at], *args])
    if step.collect:
        plan.output = step.collect
    plan.files = _scaled_files(rendered.files, plan.ranks, threads, ctx.scratch_dir, ctx.tool_path)
    plan.files.update(_scaled_inputs(lab, workload, case, ctx))
    return plan


def plan_lab(name: str, work_dir: str, scratch_dir: str, tool_paths: dict[str, str]) -> list[StepPlan]:
    """Every run step of every case of every workload of lab ``name`` (its imports too),
    rendered with ``work_dir`` and ``scratch_dir`` as the job's directories and each
    tool at ``tool_paths[tool]`` (its executable name when absent)."""
    from pfslab import launcher as launcher_of

    lab = state.lab(name)
    launcher = launcher_of.for_dry_run(lab)
    clients = [workloads.Client(n["name"], n["name"]) for n in labs.client_nodes(lab)]
    used = sorted({w["tool"] for w in lab.get("workloads", [])}
                   | {w["tool"] for imported in lab.get("imports", []) for w in labs.load(imported).get("workloads", [])})
    plans: list[StepPlan] = []
    for tool in used:
        for case in workloads.cases(tool, [name]):
            workload = workloads.find(lab, case.workload)
            fs_type = lab["filesystem"]["type"]
            if fs_type not in workload.get("filesystems", [fs_type]):
                continue  # the real run skips it too (reframe/pfslab/rfm.py)
            ctx = workloads.Context(
                clients=clients, scratch_dir=scratch_dir, work_dir=work_dir,
                tool_path=tool_paths.get(tool, tools.executable(tool)),
                iozone_master=launcher.get("master_address"),
                hostfile_slots=lab.get("launcher", {}).get("hostfile_slots", True),
                rank_dir=None if registry.target_of(lab).namespaces else scratch_dir,
            )
            rendered = workloads.render(lab, case, ctx)
            for n, step in enumerate(rendered.steps, start=1):
                # Iterations are a count: the first is run (the others repeat its lines).
                if step.kind == "run" and step.iteration == 1:
                    plans.append(plan_step(lab, workload, case, n, step, rendered, ctx, launcher.get("env", {})))
    return plans
