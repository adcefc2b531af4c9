"""Parse LAMMPS logs (``log.lammps`` or the screen output, which carry the same lines).

The kit runs LAMMPS as an application-level I/O workload (dumps every N steps), so
the figures that matter are times, unit ``s`` (lower is better):

* ``wall_time``: ``Total wall time: H:MM:SS``, the completion time of the whole run;
  one figure (max = min = mean), iterations = 1. Its resolution is one second.
* ``loop_time``: the ``Loop time of X on P procs for N steps`` lines; with several
  ``run`` commands it is their sum (iterations = number of runs, each run is in
  ``details["runs"]``).
* ``output_time``: the ``Output`` row of the ``MPI task timing breakdown``, the time
  spent writing dumps, thermo and restart files, summed over runs. Here max/min/mean
  are LAMMPS's own "max/min/avg time" *across MPI ranks*, not across iterations.

``tasks`` is the MPI process count ``P``. ``details`` holds the timestep count (summed
over runs), atoms, performance lines, the whole timing breakdown, the ``dump``
commands echoed in the log and, for a single run, the dump snapshots to expect
(``steps // every + 1``: LAMMPS writes step 0 and every N-th step). That count is
derived from the echoed commands; the log does not count written snapshots.

LAMMPS does not print its command line, so ``command`` is None; ``version`` is the
release in the first line (``LAMMPS (29 Sep 2021 - Update 2)``). A log is refused if
it holds an ``ERROR:`` line (the run stopped at that command) or lacks ``Total wall
time`` (it was killed or is still running: a killed run's log ends after its last
flushed thermo line).

Rendering: ``lmp``, an MPI program, its ranks round-robin over the case's clients; its input
files are the workload's ``inputs`` (pfslab/workloads.py renders them).
"""

from __future__ import annotations

import re
from typing import Any

from pfslab.results import Operation, ParseError, ParseResult
from pfslab.tools.base import JobInput, Step, StepInput, mpi_step, no_table
from pfslab.units import format_size

TOOL = "lammps"
#: The program the nodes run.
EXECUTABLE = "lmp"
#: What the tool leaves in work_dir besides its output, kept with the run.
KEEP: tuple[str, ...] = ()
#: A per-thread file size in the syntax the tool reads.
size_text = format_size

_VERSION = re.compile(r"^LAMMPS \((.+?)\)\s*$", re.M)
_ERROR = re.compile(r"^ERROR(?: on proc \d+)?: .*$", re.M)
_WALL = re.compile(r"^Total wall time: (\d+):(\d\d):(\d\d)\s*$", re.M)
_LOOP = re.compile(
    r"^Loop time of ([\d.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms\s*$", re.M
)
_PERFORMANCE = re.compile(r"^Performance: (.*?)\s*$", re.M)
_CPU = re.compile(r"^([\d.]+)% CPU use with (\d+) MPI tasks x (\d+) OpenMP threads\s*$", re.M)
_SECTION = re.compile(
    r"^(\w+)\s*\|\s*([\d.eE+-]*)\s*\|\s*([\d.eE+-]+)\s*\|\s*([\d.eE+-]*)\s*\|\s*([\d.eE+-]*)\s*\|\s*([\d.eE+-]+)\s*$",
    re.M,
)
_DUMP = re.compile(r"^dump\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)", re.M)
_THERMO_ROW = re.compile(r"^[ \t]*(\d+)(?:[ \t]+[-\d.eE+]+)+[ \t]*$", re.M)
_WARNING = re.compile(r"^WARNING: (.*?)\s*$", re.M)


def parse(text: str) -> ParseResult:
    """Parse one LAMMPS log."""
    if not text.strip():
        raise ParseError("LAMMPS log is empty")
    error = _ERROR.search(text)
    if error:
        raise ParseError(f"LAMMPS run failed: {error.group(0).strip()}")
    version = _VERSION.search(text)
    if version is None:
        raise ParseError("not a LAMMPS log: no 'LAMMPS (version)' first line")
    wall = _WALL.search(text)
    if wall is None:
        last = _last_thermo_step(text)
        where = f" (last thermo step {last})" if last is not None else ""
        raise ParseError(f"LAMMPS log is truncated: no 'Total wall time' line, the run did not finish{where}")
    runs = _runs(text)
    if not runs:
        raise ParseError("LAMMPS log has no 'Loop time' line: no run command completed")

    result = ParseResult(tool=TOOL, version=version.group(1), command=None)
    procs = int(runs[-1]["procs"])
    seconds = float(int(wall.group(1)) * 3600 + int(wall.group(2)) * 60 + int(wall.group(3)))
    result.operations["wall_time"] = Operation("wall_time", "s", seconds, seconds, seconds, 1, procs)
    loop = sum(float(run["loop_time"]) for run in runs)
    result.operations["loop_time"] = Operation("loop_time", "s", loop, loop, loop, len(runs), procs)
    outputs = [run["timing"]["Output"] for run in runs if "Output" in run.get("timing", {})]
    if outputs:
        figures = {key: sum(float(o[key]) for o in outputs if o.get(key) is not None) for key in ("min", "avg", "max")}
        result.operations["output_time"] = Operation(
            "output_time", "s", figures["max"], figures["min"], figures["avg"], len(outputs), procs
        )

    steps = sum(int(run["steps"]) for run in runs)
    dumps: list[dict[str, Any]] = [
        {"id": m.group(1), "group": m.group(2), "style": m.group(3), "every": int(m.group(4)), "file": m.group(5)}
        for m in _DUMP.finditer(text)
    ]
    result.details.update({"timesteps": steps, "atoms": runs[-1]["atoms"], "procs": procs, "runs": runs})
    result.details["wall_time_text"] = f"{wall.group(1)}:{wall.group(2)}:{wall.group(3)}"
    if dumps:
        result.details["dumps"] = dumps
        if len(runs) == 1:
            result.details["dump_snapshots_expected"] = {str(d["id"]): steps // int(d["every"]) + 1 for d in dumps}
    cpu = _CPU.search(text)
    if cpu:
        result.details.update({"cpu_use_percent": float(cpu.group(1)), "openmp_threads": int(cpu.group(3))})
    warnings = sorted(set(_WARNING.findall(text)))
    if warnings:
        result.details["warnings"] = warnings
    return result


def _runs(text: str) -> list[dict[str, Any]]:
    """One entry per ``Loop time`` line, with the performance and timing lines after it."""
    loops = list(_LOOP.finditer(text))
    runs: list[dict[str, Any]] = []
    for index, loop in enumerate(loops):
        end = loops[index + 1].start() if index + 1 < len(loops) else len(text)
        block = text[loop.end() : end]
        run: dict[str, Any] = {
            "loop_time": float(loop.group(1)),
            "procs": int(loop.group(2)),
            "steps": int(loop.group(3)),
            "atoms": int(loop.group(4)),
        }
        performance = _PERFORMANCE.search(block)
        if performance:
            run["performance"] = performance.group(1)
            rate = re.search(r"([\d.]+) timesteps/s", performance.group(1))
            if rate:
                run["timesteps_per_s"] = float(rate.group(1))
        timing: dict[str, dict[str, float | None]] = {}
        for row in _SECTION.finditer(block):
            timing[row.group(1)] = {
                "min": _number(row.group(2)),
                "avg": _number(row.group(3)),
                "max": _number(row.group(4)),
                "varavg_percent": _number(row.group(5)),
                "total_percent": _number(row.group(6)),
            }
        if timing:
            run["timing"] = timing
        runs.append(run)
    return runs


def _number(text: str) -> float | None:
    return float(text) if text else None


def _last_thermo_step(text: str) -> int | None:
    steps = _THERMO_ROW.findall(text)
    return int(steps[-1]) if steps else None


# ---- rendering ------------------------------------------------------------------

def prepare(job: JobInput) -> None:
    """Nothing to add to the job before its steps."""


def render_step(inp: StepInput) -> Step:
    return mpi_step(inp)


#: No option table of its own to check a rendered line against.
check_command = no_table
