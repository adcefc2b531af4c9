"""Parse the output of SEACAS ``io_shell`` (IOSS), copying an Exodus II database.

Written from the source (sandialabs/seacas, ``packages/seacas/libraries/ioss/src``)
and checked against real runs of io_shell 7.3 built from it (see
``tests/fixtures/README.md``). The kit captures stdout and stderr together; io_shell
prints its timing on stderr and its region summaries on stdout, so their order in
a file depends on buffering and the parser never relies on it.

Operations:

* ``execution_time`` (unit ``s``): ``Total Execution Time = X seconds[ on N
  processors].`` printed by ``main()`` in ``main/io_shell.C`` around the whole copy
  (open, define, transfer, close). One figure; ``tasks`` = N (1 when not printed).
* ``read`` / ``write`` (unit ``MiB/s``), only when io_shell ran with ``--debug``:
  that sets the ``LOGGING`` property and ``DatabaseIO::verify_and_log`` ->
  ``log_field`` (``Ioss_DatabaseIO.C``) prints a line with the field's size in bytes
  before each ``get_field`` (``>``, input) and ``put_field`` (``<``, output) and a
  time stamp after it. The figure is bytes / time summed over those calls: the
  library's field I/O, without opening, defining and closing the files, so it is a
  throughput of the data path, not of the whole run.
* ``state_read_time`` / ``state_write_time`` (unit ``ms``), only with
  ``IOSS_PROPERTIES=TIME_STATE_INPUT_OUTPUT=on``: ``log_time`` prints ``Time to read
  state S ...`` / ``Time to write state S ...`` per time step; max/min/mean/stddev
  are over the steps (iterations = steps). io_shell opens the output state inside the
  input state, so both brackets hold the whole copy of a step and are nearly equal.
  With several ranks, the slowest rank's time is taken.

``details``: input/output files and types, nodes, elements, time steps, the largest
field, memory (``--memory_statistics``: ``Current Memory`` / ``High Water Memory``,
MiB) and the ``--memory_statistics`` trace of phases. io_shell prints neither its
version (only ``--version`` does) nor its command line, so both are None.

Refused: outputs without ``io_shell execution successful.`` (cut short or still
running), with ``execution failed``, ``terminated due to exception`` or an
``ERROR:`` line (Exodus and IOSS errors are printed that way).

Rendering: ``io_shell`` run as it is, on the launching node.
"""

from __future__ import annotations

import re
from typing import Any

from pfslab.results import Operation, ParseError, ParseResult, operation_from_values
from pfslab.tools.base import JobInput, Step, StepInput, no_table
from pfslab.units import format_size

TOOL = "ioshell"
#: The program the nodes run.
EXECUTABLE = "io_shell"
#: What the tool leaves in work_dir besides its output, kept with the run.
KEEP: tuple[str, ...] = ()
#: A per-thread file size in the syntax the tool reads.
size_text = format_size

_ERROR = re.compile(r"^\s*(?:IOSS WARNING: )?ERROR:?\s.*$", re.M)
_FAILED = re.compile(r"^(\S+) (?:execution failed|terminated due to exception)\.?\s*$", re.M)
_SUCCESS = re.compile(r"^(\S+) execution successful\.\s*$", re.M)
_TOTAL = re.compile(r"Total Execution Time = ([\d.eE+-]+) seconds(?: on (\d+) processors)?\.")
_FILES = re.compile(r"^(Input|Output):\s+'(.*?)', Type: (\S+)\s*$", re.M)
_COUNT = re.compile(r"^\s*Number of ([A-Za-z ]+?)\s*=\s*([\d,]+)\s*$", re.M)
_STEPS = re.compile(r"Number of time steps on database = ([\d,]+)")
_MAX_FIELD = re.compile(r"Maximum Field size = ([\d,]+) bytes .*? for field '(.*?)'")
_MEMORY = re.compile(r"^\s*(Current|High Water) Memory:\s+((?:[\d,]+M\s*)+)$", re.M)
_TRACE = re.compile(r"^\s*\[([\d.]+)\] \(([\d,]+)MiB\s+([\d,]+)MiB\s+([\d,]+)MiB\)\t(.*?)\s*$", re.M)
_FIELD_LOG = re.compile(r"([<>]) \[(\d+\.\d+)\](?:\t([^\t\n]*)\t([^\n]*))?\n")
_STATE_TIME = re.compile(r"^IOSS: \[(.*?)\] Time to (read |write) state (\d+), time (\S+) is (.*?)\s*$", re.M)


def parse(text: str) -> ParseResult:
    """Parse one io_shell output (stdout and stderr together)."""
    if not text.strip():
        raise ParseError("io_shell output is empty")
    error = _ERROR.search(text)
    if error:
        raise ParseError(f"io_shell reported an error: {error.group(0).strip()}")
    failed = _FAILED.search(text)
    if failed:
        raise ParseError(f"io_shell run failed: {failed.group(0).strip()}")
    if not _FILES.search(text) and not _TOTAL.search(text):
        raise ParseError("not an io_shell output: no 'Input: ... Output: ...' lines and no execution time")
    total = _TOTAL.search(text)
    if total is None or not _SUCCESS.search(text):
        raise ParseError(
            "io_shell output is truncated: no 'Total Execution Time' and 'execution successful' lines "
            "(the run did not finish)"
        )
    tasks = int(total.group(2)) if total.group(2) else 1
    seconds = float(total.group(1))
    result = ParseResult(tool=TOOL, version=None, command=None)
    result.operations["execution_time"] = Operation("execution_time", "s", seconds, seconds, seconds, 1, tasks)
    result.details.update(_details(text, tasks))
    _field_throughput(text, result, tasks)
    _state_times(text, result, tasks)
    return result


def _details(text: str, tasks: int) -> dict[str, Any]:
    details: dict[str, Any] = {"processors": tasks}
    for kind, name, file_type in _FILES.findall(text):
        details[f"{kind.lower()}_file"] = name
        details[f"{kind.lower()}_type"] = file_type
    for label, value in _COUNT.findall(text):
        key = "_".join(label.lower().split())
        if not key.startswith("time_steps"):  # read below, from its own line
            details.setdefault(key, int(value.replace(",", "")))
    steps = _STEPS.search(text)
    if steps:
        details["time_steps"] = int(steps.group(1).replace(",", ""))
    largest = _MAX_FIELD.search(text)
    if largest:
        details["max_field_bytes"] = int(largest.group(1).replace(",", ""))
        details["max_field"] = largest.group(2)
    for kind, values in _MEMORY.findall(text):
        figures = [int(v.replace(",", "")) for v in re.findall(r"([\d,]+)M", values)]
        key = "memory_mib" if kind == "Current" else "high_water_memory_mib"
        details[key] = figures[0] if len(figures) == 1 else dict(zip(("min", "max", "avg"), figures))
    trace = [
        {"t": float(t), "label": label}
        for t, _low, _high, _avg, label in _TRACE.findall(text)
        if "DatabaseIO::" not in label
    ]
    if trace:
        details["trace"] = trace
    return details


def _field_throughput(text: str, result: ParseResult, tasks: int) -> None:
    """Sum bytes and time of the ``--debug`` field log: ``>`` input (get), ``<`` output (put)."""
    totals = {">": [0, 0.0, 0], "<": [0, 0.0, 0]}  # bytes, seconds, calls
    open_calls: dict[str, tuple[float, int]] = {}
    for match in _FIELD_LOG.finditer(text):
        symbol, stamp = match.group(1), float(match.group(2))
        if match.group(3) is not None:  # start of a call: sizes and entity/field
            open_calls[symbol] = (stamp, _field_bytes(match.group(3)))
        elif symbol in open_calls:
            began, size = open_calls.pop(symbol)
            entry = totals[symbol]
            entry[0] = int(entry[0]) + size
            entry[1] = float(entry[1]) + (stamp - began)
            entry[2] = int(entry[2]) + 1
    for symbol, name in ((">", "read"), ("<", "write")):
        size, seconds, calls = int(totals[symbol][0]), float(totals[symbol][1]), int(totals[symbol][2])
        if not calls:
            continue
        result.details[f"{name}_bytes"] = size
        result.details[f"{name}_seconds"] = round(seconds, 6)
        result.details[f"{name}_calls"] = calls
        if seconds > 0:
            rate = size / seconds / 2**20
            result.operations[name] = Operation(name, "MiB/s", rate, rate, rate, 1, tasks)


def _field_bytes(sizes: str) -> int:
    """Bytes of one logged field: the ``T:`` total on several ranks, else the rank sizes."""
    total = re.search(r"T:\s*(\d+)", sizes)
    if total:
        return int(total.group(1))
    return sum(int(v) for v in re.findall(r"(\d+):", sizes))


def _state_times(text: str, result: ParseResult, tasks: int) -> None:
    times: dict[str, list[float]] = {"read": [], "write": []}
    for _region, kind, _state, _time, figures in _STATE_TIME.findall(text):
        peak = re.search(r"Max:\s*([\d.eE+-]+)", figures)
        if peak:
            value = float(peak.group(1))
        else:
            numbers = [float(v) for v in re.findall(r"([\d.eE+-]+)\s*:", figures)]
            value = max(numbers) if numbers else float(figures.split()[0])
        times[kind.strip()].append(value)
    for kind, values in times.items():
        if values:
            name = f"state_{kind}_time"
            result.operations[name] = operation_from_values(name, "ms", values, tasks)


# ---- rendering ------------------------------------------------------------------

def prepare(job: JobInput) -> None:
    """Nothing to add to the job before its steps."""


def render_step(inp: StepInput) -> Step:
    """io_shell as it is (one process: it starts no ranks of its own here)."""
    return inp.step(f"{inp.ctx.tool_path} {inp.args}")


#: No option table of its own to check a rendered line against.
check_command = no_table
