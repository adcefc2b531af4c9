"""Workloads of the lab files, expanded into test cases and rendered into commands.

A lab file's workload holds the source's own argument templates (``steps``) and the
sizes they use. A *case* is one workload at one thread count in one mode. Rendering
a case gives the exact shell lines a job script runs: no ReFrame here, so the
rendering is unit-tested against the seeds' command lines. What is the tool's own (its
command line, the files it needs) is its module's, in pfslab/tools/.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, labs, layout, state, tools
from pfslab.tools.base import Client, Context, JobInput, Step, StepInput, WorkloadError, nodes_used
from pfslab.units import parse_size

MODES: tuple[str, ...] = ("quick", "full")
#: Input templates a workload's `inputs` may name live here.
INPUTS_DIR: Path = KIT_ROOT / "reframe" / "inputs"


@dataclass(frozen=True)
class Case:
    """One workload of one lab at one thread count (over ``nodes`` clients, or all), in one mode."""

    lab: str
    workload: str
    threads: int
    mode: str
    nodes: int | None = None

    @property
    def name(self) -> str:
        if self.nodes is None:
            return f"{self.lab}/{self.workload}/{self.threads}"
        return f"{self.lab}/{self.workload}/{self.nodes}x{self.threads // self.nodes}"

    @property
    def sweep_point(self) -> str:
        """The thread count, or nodes x processes per node, as a label."""
        return self.name.rsplit("/", 1)[1]


def name_filter(case_name: str) -> str:
    """A ReFrame ``-n`` pattern selecting exactly one case (``lab/workload/4`` or ``.../8x2``)
    by its parameters. ReFrame matches a test's name without its spaces
    (``IOR_ior_n1%lab=local%workload=ior-n1%threads=4%mode=quick``): the ``%`` after the
    point keeps threads=4 from matching 48, and any mode, or a ``-P`` variable after it, matches."""
    lab, workload, threads, nodes = parse_case_name(case_name)
    point = f"%threads={threads}" if nodes is None else f"%nodes={nodes}%processes={threads // nodes}"
    return f"%lab={re.escape(lab)}%workload={re.escape(workload)}{point}%"


def tool_test(class_name: str) -> str:
    """The tool's test a ReFrame test class is of: its name up to the workload
    (``IOR_ior_n1`` is IOR's; pfslab.rfm.define_tests names them so)."""
    return class_name.split("_", 1)[0]


def demo_filters(lab: dict[str, Any]) -> list[str]:
    """ReFrame's arguments selecting the lab's ``benchmark.demo`` cases (``workload/point``): one ``-n`` each."""
    entries = labs.setting(lab, "benchmark.demo")
    if not entries:
        raise WorkloadError(f"lab {lab['name']} lists no demo cases (benchmark.demo)")
    return [arg for entry in entries for arg in ("-n", name_filter(f"{lab['name']}/{entry}"))]


def parse_case_name(name: str) -> tuple[str, str, int, int | None]:
    """(lab, workload, threads, nodes) from a case name: ``lab/workload/4`` or ``lab/lab2/workload/8x4``."""
    lab, _, rest = name.partition("/")
    workload, _, point = rest.rpartition("/")
    if not lab or not workload or not point:
        raise WorkloadError(f"{name!r} is not a case name (lab/workload/threads)")
    if "x" in point:
        nodes, per_node = (int(v) for v in point.split("x", 1))
        return lab, workload, nodes * per_node, nodes
    return lab, workload, int(point), None


def lab_mode(lab: dict[str, Any]) -> str:
    """quick or full: ``PFSLAB_MODE`` if set, else the lab's default (full for seed labs)."""
    mode = os.environ.get("PFSLAB_MODE") or labs.setting(lab, "benchmark.default_mode")
    if mode not in MODES:
        raise WorkloadError(f"PFSLAB_MODE={mode!r} is not allowed; allowed: {', '.join(MODES)}")
    return str(mode)


def find(lab: dict[str, Any], workload_id: str) -> dict[str, Any]:
    """A workload of the lab, or ``<lab>/<id>`` of a lab it imports."""
    owner, _, own_id = workload_id.rpartition("/")
    if owner:
        if owner not in lab.get("imports", []):
            raise WorkloadError(f"lab {lab['name']} does not import lab {owner!r}")
        lab = labs.load(owner)
    for workload in lab.get("workloads", []):
        if workload["id"] == own_id:
            found: dict[str, Any] = workload
            return found
    raise WorkloadError(f"lab {lab['name']} has no workload {own_id!r}")


def _quick_or_full(workload: dict[str, Any], key: str, mode: str) -> Any:
    if mode == "quick" and key in workload.get("quick", {}):
        return workload["quick"][key]
    return workload.get(key)


def threads_for(workload: dict[str, Any], mode: str) -> list[int]:
    """Thread counts of the sweep (for a nodes x processes sweep: every product)."""
    return [threads for threads, _ in sweep(workload, mode)]


def sweep(workload: dict[str, Any], mode: str) -> list[tuple[int, int | None]]:
    """(threads, nodes) of every point: nodes is None when threads spread over all clients."""
    if "threads" in workload:
        return [(t, None) for t in _quick_or_full(workload, "threads", mode)]
    return [
        (n * p, n)
        for n in _quick_or_full(workload, "nodes", mode)
        for p in _quick_or_full(workload, "per_node", mode)
    ]


def time_limit(lab: dict[str, Any], workload: dict[str, Any], mode: str) -> str:
    """The longest a test of this workload may run in ``mode``: the workload's own, the
    lab's, else the schema's default."""
    for limits in (workload.get("time_limit", {}), lab.get("benchmark", {}).get("time_limit", {})):
        if mode in limits:
            return str(limits[mode])
    return str(labs.schema_default("time_limits", mode))


def iterations_for(workload: dict[str, Any], mode: str) -> int:
    return int(_quick_or_full(workload, "iterations", mode) or 1)


def sizes_for(workload: dict[str, Any], mode: str) -> dict[str, Any]:
    sizes = dict(workload.get("sizes", {}))
    if mode == "quick":
        sizes.update(workload.get("quick", {}).get("sizes", {}))
    return sizes


def cases(tool: str, lab_names: list[str] | None = None) -> list[Case]:
    """Every case of ``tool`` over the given labs (default: all shipped labs).

    An imported lab's workloads run in quick mode on the importing lab (their full
    sizes belong to the hardware they were published on), named ``<lab>/<id>``.
    """
    out: list[Case] = []
    for name in lab_names if lab_names is not None else labs.lab_names():
        lab = state.lab(name)
        mode = lab_mode(lab)
        for workload in lab.get("workloads", []):
            if workload["tool"] == tool:
                out.extend(Case(name, workload["id"], t, mode, n) for t, n in sweep(workload, mode))
        for imported in lab.get("imports", []):
            for workload in labs.load(imported).get("workloads", []):
                if workload["tool"] == tool:
                    out.extend(
                        Case(name, f"{imported}/{workload['id']}", t, "quick", n)
                        for t, n in import_points(lab, workload)
                    )
    return out


def import_points(lab: dict[str, Any], workload: dict[str, Any]) -> list[tuple[int, int | None]]:
    """The points of an imported workload's quick sweep that ``lab`` runs.

    By default one: what an import proves is that the seed's command line runs through
    this lab's launcher and fabric, and one point that spans every client does that; the
    lab's own workloads carry the sweeps. Every point of every import made the local
    lab's quick suite 93 tests, over 12 minutes on 2 cores before IOR and mdtest ran.
    """
    points = sweep(workload, "quick")
    how = lab.get("benchmark", {}).get("import_sweep", labs.schema_default("benchmark", "import_sweep"))
    if how == "quick" or not points:
        return points
    clients = sum(1 for node in layout.nodes(lab) if layout.is_client(node))
    spanning = [p for p in points if nodes_used(p, clients) >= clients]
    return [spanning[0] if spanning else max(points, key=lambda p: (nodes_used(p, clients), p[0]))]


# ---- rendering ------------------------------------------------------------------

@dataclass
class Rendered:
    steps: list[Step]
    files: dict[str, str]  # name in work_dir -> content (hostfiles, thread lists)


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def _lab_values(lab: dict[str, Any]) -> dict[str, str]:
    """Placeholders that come from the lab itself, so labs that extend one another share workloads."""
    values: dict[str, str] = {}
    beegfs = lab.get("filesystem", {}).get("beegfs", {})
    if "storage_pool_targets" in beegfs:
        values["beegfs_targets"] = str(beegfs["storage_pool_targets"])
    if "chunk_size" in beegfs.get("stripe", {}):
        values["beegfs_chunk"] = str(beegfs["stripe"]["chunk_size"])
    return values


def _values(workload: dict[str, Any], sizes: dict[str, Any], threads: int, ctx: Context, nodes: int | None = None) -> dict[str, str]:
    used = nodes or min(threads, len(ctx.clients))
    values: dict[str, str] = {
        "dir": ctx.scratch_dir,
        "file": f"{ctx.scratch_dir}/{workload['tool']}.file",
        "workdir": ctx.work_dir,
        "threads": str(threads),
        "nodes": str(used),
        "per_node": str(-(-threads // used)),
        "threadlist": f"{ctx.work_dir}/threadlist.{threads}",
    }
    for key, raw in sizes.items():
        values[key] = str(raw) if isinstance(raw, int) else raw
    if "aggregate" in sizes and "file_size" not in sizes:
        per_thread = parse_size(sizes["aggregate"]) // threads
        # In the syntax the tool reads (IOzone: k, m and g only).
        values["file_size"] = tools.module(workload["tool"]).size_text(per_thread)
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


def render(lab: dict[str, Any], case: Case, ctx: Context) -> Rendered:
    """The steps of one case (repeated for each iteration) and the files they need."""
    return render_workload(lab, find(lab, case.workload), case, ctx)


def render_workload(lab: dict[str, Any], workload: dict[str, Any], case: Case, ctx: Context) -> Rendered:
    """:func:`render` for a workload that is not in the lab file (a calibration probe)."""
    sizes = sizes_for(workload, case.mode)
    if case.nodes is not None and case.nodes > len(ctx.clients):
        raise WorkloadError(
            f"workload {workload['id']}: {case.nodes} client nodes asked for, the lab has {len(ctx.clients)}"
        )
    clients = ctx.clients[: case.nodes] if case.nodes is not None else ctx.clients
    values = {**_lab_values(lab), **_values(workload, sizes, case.threads, ctx, case.nodes)}
    files = {name: render_args((INPUTS_DIR / template).read_text(), values, workload["id"])
             for name, template in workload.get("inputs", {}).items()}
    # The tool's own values and files (IOR's BeeGFS striping, IO500's config).
    tools.module(workload["tool"]).prepare(JobInput(lab, workload, sizes, case.mode, ctx, values, files))
    iterations = iterations_for(workload, case.mode)
    drops = lab.get("os_tuning", {}).get("drop_caches", "never") != "never"
    steps: list[Step] = []
    for iteration in range(1, iterations + 1):
        if iteration > 1 and drops:
            steps.append(Step("drop-caches"))
        for index, spec in enumerate(workload["steps"]):
            if spec == "drop-caches":
                steps.append(Step("drop-caches"))
                continue
            if spec.get("prepare") and iteration > 1:
                continue  # what a prepare step creates serves every iteration
            step = _render_step(lab, workload, case, ctx, clients, values, files, spec, index, iteration)
            steps.append(step)
    return Rendered(steps, files)


def _render_step(
    lab: dict[str, Any],
    workload: dict[str, Any],
    case: Case,
    ctx: Context,
    clients: list[Client],
    values: dict[str, str],
    files: dict[str, str],
    spec: dict[str, Any],
    index: int,
    iteration: int,
) -> Step:
    args = render_args(spec["args"], values, workload["id"])
    tag = f"step{index + 1}" + (f".it{iteration}" if iterations_for(workload, case.mode) > 1 else "")
    # A seed's own mpirun line belongs to its fabric; on a lab that imports the shape,
    # that lab's line runs it.
    own_launcher = None if "/" in case.workload else workload.get("launcher")
    launcher = ctx.mpirun or own_launcher or lab.get("launcher", {}).get("mpirun")
    inp = StepInput(lab, workload, ctx, [c.address for c in clients], case.threads, case.nodes, case.sweep_point,
                    spec, iteration, args, tag, launcher, files)
    return tools.module(workload["tool"]).render_step(inp)


# What rendering shares with the tool modules, kept importable from here, where callers met it.
__all__ = ["Client", "Context", "Step", "WorkloadError", "nodes_used"]
