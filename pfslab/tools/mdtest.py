"""Parse mdtest text outputs (3.3.0 and 4.0.0).

Figures come from mdtest's ``SUMMARY rate`` table, one operation per row, named as
printed in snake case (``File creation`` -> ``file_creation``, ``Tree removal`` ->
``tree_removal``), unit ``ops/s``; max/min/mean/stddev are mdtest's own, over the
``-i`` iterations.

What the statistics span differs between versions (read from the sources,
``summarize_results`` in mdtest.c): 4.0.0 takes them over the iterations; 3.3.0 over
iterations x ranks, where every rank reports the whole job's rate timed by its own
clock (``items*size/(t[1] - t[0])``). So a 3.3.0 run with ``-i 1`` shows max and min a
hair apart; the mean is the job's rate in both versions.

Layouts handled, because the versions and options print the table differently:

* 3.3.0 puts a colon after the operation name (``File creation     :  14256.484 ...``);
  4.0.0 does not.
* ``--showRankStatistics`` (4.0.0) prints seven figures per row: ``per Rank: Max Min
  Mean`` then ``per Iteration: Max Min Mean Std Dev``. The per-iteration ones are the
  operation's figures (the same meaning as the plain table); the per-rank ones go to
  ``details["per_rank"]``.
* ``-P`` adds a ``SUMMARY time`` table (seconds); it goes to ``details["time"]``.
* ``-v`` interleaves ``V-1: ...`` lines, some with ``ops/sec`` figures of single
  phases; only the SUMMARY tables are read.

A run is accepted only if mdtest printed its SUMMARY table and its closing
``-- finished at ... --`` line and no ``ERROR:``/``FAILED`` line: mdtest goes on after
some failed creates (the ``-z 2 -b 3 -L`` fixture shows ``ERROR: open64(...)`` and no
summary), and figures of such a run are not a measurement.

Rendering: an MPI program, its ranks round-robin over the case's clients (``pfslab.tools.base.mpi_step``).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from pfslab.results import Operation, ParseError, ParseResult
from pfslab.tools import ior_options
from pfslab.tools.base import JobInput, Step, StepInput, mpi_step
from pfslab.units import format_size

TOOL = "mdtest"
#: The program the nodes run.
EXECUTABLE = "mdtest"
#: What the tool leaves in work_dir besides its output, kept with the run.
KEEP: tuple[str, ...] = ()
#: A per-thread file size in the syntax the tool reads.
size_text = format_size

_LAUNCH = re.compile(r"^mdtest-(\S+) was launched with (\d+) total task\(s\) on (\d+) node\(s\)", re.M)
_COMMAND = re.compile(r"^Command line used: (.*?)\s*$", re.M)
_ERRORS = (
    re.compile(r"^\s*ERROR:?\s.*$", re.M),
    re.compile(r"^.*\bFAILED in .*$", re.M),
    re.compile(r"^MPI_ABORT was invoked.*$", re.M),
)
_ITEMS = re.compile(r"^(\d+) tasks, (\d+) (files/directories|files|directories)\s*$", re.M)
_TABLE = re.compile(r"^SUMMARY (rate|time): \(of (\d+) iterations?\)\s*$", re.M)
_ROW = re.compile(r"^\s+([A-Za-z][A-Za-z ]*?)\s*:?((?:\s+-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)+)\s*$")
_FINISHED = re.compile(r"^-- finished at (.*?) --\s*$", re.M)
_PATH = re.compile(r"^Path\s*: ?(.*?)\s*$", re.M)
_WARNING = re.compile(r"^WARNING: (.*?)\s*$", re.M)


def parse(text: str) -> ParseResult:
    """Parse one mdtest output (stdout, with or without stderr merged in)."""
    if not text.strip():
        raise ParseError("mdtest output is empty")
    for pattern in _ERRORS:
        error = pattern.search(text)
        if error:
            raise ParseError(f"mdtest reported an error: {error.group(0).strip()}")
    launch = _LAUNCH.search(text)
    if launch is None:
        raise ParseError("not an mdtest output: no 'mdtest-x.y.z was launched with N total task(s)' line")
    version, tasks, nodes = launch.group(1), int(launch.group(2)), int(launch.group(3))
    command = _COMMAND.search(text)
    result = ParseResult(tool=TOOL, version=version, command=command.group(1) if command else None)
    result.details.update(_details(text, tasks, nodes, command.group(1) if command else None))

    tables = {m.group(1): m for m in _TABLE.finditer(text)}
    if "rate" not in tables:
        raise ParseError("mdtest output is truncated: no 'SUMMARY rate' table (the run did not finish)")
    iterations = int(tables["rate"].group(2))
    rates = _read_table(text, tables["rate"].end())
    if not rates:
        raise ParseError("mdtest output is truncated: the 'SUMMARY rate' table has no rows")
    if not _FINISHED.search(text[tables["rate"].end() :]):
        raise ParseError("mdtest output is truncated: no '-- finished at ... --' line after the summary")

    per_rank: dict[str, dict[str, float]] = {}
    for name, figures in rates.items():
        if len(figures) == 7:  # --showRankStatistics: per rank (3), then per iteration (4)
            per_rank[name] = dict(zip(("max", "min", "mean"), figures[:3]))
            figures = figures[3:]
        if len(figures) != 4:
            raise ParseError(
                f"mdtest SUMMARY row {name!r} has {len(figures)} figures; expected 4 (or 7 with rank statistics)"
            )
        result.operations[name] = Operation(
            name, "ops/s", figures[0], figures[1], figures[2], iterations, tasks, figures[3]
        )
    if per_rank:
        result.details["per_rank"] = per_rank
    if "time" in tables:
        times = _read_table(text, tables["time"].end())
        result.details["time"] = {
            name: dict(zip(("max", "min", "mean", "stddev"), figures[-4:])) for name, figures in times.items()
        }
        result.details["time_unit"] = "s"
    return result


def _details(text: str, tasks: int, nodes: int, command: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {"tasks": tasks, "nodes": nodes}
    launch = _LAUNCH.search(text)
    if launch:
        details["launch"] = launch.group(0).strip()
    if command:
        try:
            details["argv"] = shlex.split(command)
        except ValueError:
            pass
    path = _PATH.search(text)
    if path:
        details["path"] = path.group(1)
    items = _ITEMS.search(text)
    if items:
        total, kind = int(items.group(2)), items.group(3)
        per_task = total // tasks if tasks else total
        details.update({"total_items": total, "item_kind": kind, "items_per_task": per_task})
        details["files_per_task"] = per_task if "files" in kind else 0
        details["dirs_per_task"] = per_task if "directories" in kind else 0
    warnings = sorted(set(_WARNING.findall(text)))
    if warnings:
        details["warnings"] = warnings
    finished = _FINISHED.search(text)
    if finished:
        details["finished"] = finished.group(1)
    return details


def _read_table(text: str, start: int) -> dict[str, list[float]]:
    """Rows of the table whose title ends at ``start``: header, dashes, then rows up to a non-row."""
    rows: dict[str, list[float]] = {}
    lines = text[start:].splitlines()[1:]  # the rest of the title line
    body = [line for line in lines[:2] if line.strip().startswith(("Operation", "-"))]
    for line in lines[len(body) :]:
        match = _ROW.match(line)
        if not match:
            break
        name = "_".join(match.group(1).lower().split())
        rows[name] = [float(v) for v in match.group(2).split()]
    return rows


# ---- rendering ------------------------------------------------------------------

def prepare(job: JobInput) -> None:
    """Nothing to add to the job before its steps."""


def render_step(inp: StepInput) -> Step:
    return mpi_step(inp)


def check_command(lab: dict[str, Any], tokens: list[str]) -> list[str]:
    """What the option tables of the lab's IOR release reject in the rendered line ``tokens``."""
    return ior_options.check_command(ior_options.for_lab(lab), tokens, TOOL)
