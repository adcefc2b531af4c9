"""Workloads of the lab files, expanded into test cases and rendered into commands.

A lab file's workload holds the source's own argument templates (``steps``) and the
sizes they use. A *case* is one workload at one thread count in one mode. Rendering
a case gives the exact shell lines a job script runs: no ReFrame here, so the
rendering is unit-tested against the seeds' command lines.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from pfslab import distribution, labs
from pfslab.units import format_size, parse_size

MODES: tuple[str, ...] = ("quick", "full")
MPI_TOOLS: frozenset[str] = frozenset({"ior", "mdtest"})


class WorkloadError(ValueError):
    """A workload cannot be rendered (bad mode, unknown placeholder ...)."""


@dataclass(frozen=True)
class Case:
    """One workload of one lab at one thread count, in one mode."""

    lab: str
    workload: str
    threads: int
    mode: str

    @property
    def name(self) -> str:
        return f"{self.lab}/{self.workload}/{self.threads}"


def lab_mode(lab: dict[str, Any]) -> str:
    """quick or full: ``PFSLAB_MODE`` if set, else the lab's default (full for seed labs)."""
    mode = os.environ.get("PFSLAB_MODE") or lab.get("benchmark", {}).get("default_mode", "full")
    if mode not in MODES:
        raise WorkloadError(f"PFSLAB_MODE={mode!r} is not allowed; allowed: {', '.join(MODES)}")
    return str(mode)


def find(lab: dict[str, Any], workload_id: str) -> dict[str, Any]:
    for workload in lab.get("workloads", []):
        if workload["id"] == workload_id:
            found: dict[str, Any] = workload
            return found
    raise WorkloadError(f"lab {lab['name']} has no workload {workload_id!r}")


def threads_for(workload: dict[str, Any], mode: str) -> list[int]:
    if mode == "quick" and "threads" in workload.get("quick", {}):
        return list(workload["quick"]["threads"])
    return list(workload["threads"])


def sizes_for(workload: dict[str, Any], mode: str) -> dict[str, Any]:
    sizes = dict(workload.get("sizes", {}))
    if mode == "quick":
        sizes.update(workload.get("quick", {}).get("sizes", {}))
    return sizes


def cases(tool: str, lab_names: list[str] | None = None) -> list[Case]:
    """Every case of ``tool`` over the given labs (default: all shipped labs)."""
    out: list[Case] = []
    for name in lab_names if lab_names is not None else labs.lab_names():
        lab = labs.load(name)
        mode = lab_mode(lab)
        for workload in lab.get("workloads", []):
            if workload["tool"] != tool:
                continue
            out.extend(Case(name, workload["id"], t, mode) for t in threads_for(workload, mode))
    return out


# ---- rendering ------------------------------------------------------------------

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


@dataclass
class Step:
    """One line of the job: a tool run (with the file it prints to) or a cache drop."""

    kind: str  # "run" or "drop-caches"
    command: str = ""
    output: str = ""
    measures: list[str] = field(default_factory=list)
    prepare: bool = False


@dataclass
class Rendered:
    steps: list[Step]
    files: dict[str, str]  # name in work_dir -> content (hostfiles, thread lists)


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def _values(workload: dict[str, Any], sizes: dict[str, Any], threads: int, ctx: Context) -> dict[str, str]:
    values: dict[str, str] = {
        "dir": ctx.scratch_dir,
        "file": f"{ctx.scratch_dir}/{workload['tool']}.file",
        "threads": str(threads),
        "threadlist": f"{ctx.work_dir}/threadlist.{threads}",
    }
    for key, raw in sizes.items():
        values[key] = str(raw) if isinstance(raw, int) else raw
    if "aggregate" in sizes and "file_size" not in sizes:
        per_thread = parse_size(sizes["aggregate"]) // threads
        values["file_size"] = format_size(per_thread)
    if "total_files" in sizes:
        items = int(sizes.get("items", 1))
        dirs = int(sizes["total_files"]) // items // threads
        if dirs < 1:
            raise WorkloadError(
                f"workload {workload['id']}: {sizes['total_files']} files in directories of {items} "
                f"leave no directory for each of {threads} threads"
            )
        values["dirs"] = str(dirs)
    return values


def render_args(template: str, values: dict[str, str], workload_id: str) -> str:
    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            known = ", ".join(sorted(values))
            raise WorkloadError(f"workload {workload_id}: unknown placeholder {{{key}}}; known: {known}")
        return values[key]

    return _PLACEHOLDER.sub(substitute, template)


def _mpirun(line: str, np: int, hostfile: str) -> str:
    return line.replace("{np}", str(np)).replace("{hostfile}", hostfile)


def render(lab: dict[str, Any], case: Case, ctx: Context) -> Rendered:
    """The steps of one case and the files they need."""
    workload = find(lab, case.workload)
    sizes = sizes_for(workload, case.mode)
    values = _values(workload, sizes, case.threads, ctx)
    tool = workload["tool"]
    hosts = [c.address for c in ctx.clients]
    files: dict[str, str] = {}
    launcher = ctx.mpirun or workload.get("launcher") or lab.get("launcher", {}).get("mpirun")
    steps: list[Step] = []
    for index, spec in enumerate(workload["steps"]):
        if spec == "drop-caches":
            steps.append(Step("drop-caches"))
            continue
        args = render_args(spec["args"], values, workload["id"])
        output = f"{ctx.work_dir}/step{index + 1}.{tool}.out"
        if tool in MPI_TOOLS:
            if not launcher:
                raise WorkloadError(f"lab {lab['name']} has no launcher.mpirun line for {tool}")
            hostfile = f"{ctx.work_dir}/hosts.{case.threads}"
            files[f"hosts.{case.threads}"] = distribution.hostfile(case.threads, hosts, slots=ctx.hostfile_slots)
            command = f"{_mpirun(launcher, case.threads, hostfile)} {ctx.tool_path} {args}"
        elif tool == "iozone":
            files[f"threadlist.{case.threads}"] = distribution.iozone_threadlist(
                case.threads, hosts, ctx.scratch_dir, ctx.tool_path
            )
            # -+h: the master's address for the children to connect back to. Only the
            # local lab needs it: there the host's name resolves to loopback.
            master = f" -+h {ctx.iozone_master}" if ctx.iozone_master else ""
            command = f"{ctx.tool_path} {args}{master}"
        elif tool == "fio":
            if not launcher:
                raise WorkloadError(f"lab {lab['name']} has no launcher.mpirun line for fio")
            nodes = min(case.threads, len(hosts))
            hostfile = f"{ctx.work_dir}/nodes.{nodes}"
            files[f"nodes.{nodes}"] = distribution.hostfile(nodes, hosts, slots=ctx.hostfile_slots)
            # One fio per node; node r runs its round-robin share of the threads as jobs.
            per_node = (
                f"r=${{OMPI_COMM_WORLD_RANK:-${{PMI_RANK:-0}}}}; "
                f"exec {ctx.tool_path} --numjobs=$(( {case.threads} / {nodes} + (r < {case.threads} % {nodes}) )) "
                f"--output={ctx.work_dir}/step{index + 1}.fio.$r.json {args}"
            )
            command = f"{_mpirun(launcher, nodes, hostfile)} sh -c {shlex.quote(per_node)}"
            output = f"{ctx.work_dir}/step{index + 1}.fio.*.json"
        else:
            command = f"{ctx.tool_path} {args}"
        steps.append(Step("run", command, output, list(spec.get("measures", [])), bool(spec.get("prepare", False))))
    return Rendered(steps, files)
