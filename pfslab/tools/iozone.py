"""Parse IOzone outputs: throughput mode (``-t N``) and the table of single-process runs.

Operation names are the same in both modes, so a test asks for ``write`` whatever
mode ran: ``write`` (initial writers), ``rewrite``, ``read``, ``reread``,
``random_read``, ``random_write``, ``backward_read``, ``record_rewrite``,
``stride_read``, ``fwrite``, ``frewrite``, ``fread``, ``freread``, ``mixed_workload``,
``pwrite``, ``pread`` (the throughput-mode names are the 13 ``Children see throughput
for ...`` strings in the iozone 3.489 binary). IOzone labels its figures ``kB/sec``
but counts 1024-byte kB ("File size set to 65536 kB" for ``-s 64m``), so the unit
reported is ``KiB/s``; runs with ``-O`` report ``ops/s``.

Throughput mode, the mode the kit benchmarks with. For each test IOzone prints::

    Children see throughput for  2 initial writers  =  206768.28 kB/sec
    Parent sees throughput for  2 initial writers   =  201956.40 kB/sec
    Min throughput per process                      =  101397.07 kB/sec
    Max throughput per process                      =  105371.21 kB/sec
    Avg throughput per process                      =  103384.14 kB/sec

The aggregate ("children see") is the figure that measures the file system, and
the per-process min/max/avg are a different quantity (one process's share), so
putting them into the Operation's min/max would mix two meanings. Decision: the
Operation holds the aggregate only, max = min = mean = children-see for a single
run (iterations = 1, tasks = N); if a test appears several times in one output,
max/min/mean/stddev are over its aggregates. The parent-sees figure and the
per-process min/max/avg and ``Min xfer`` are kept per operation in
``details["throughput"]``. (Real outputs show why the per-process figures cannot
stand in for the aggregate: tiny runs print ``Min throughput per process = 0.00``
or a min equal to the max while the avg is half of it.)

Table mode (no ``-t``): one row per (file size, record size) with a column per test.
Columns are found by position under the two-line header, because skipped tests
leave blank columns (``-i 0 -i 2`` prints write, rewrite, then two blanks, then the
random columns). Each operation's max/min/mean/stddev are over the rows (one row:
all equal), iterations = number of rows, tasks = 1. In ``-a`` (auto) mode the rows
span many file and record sizes, so these statistics summarise a sweep, not
repetitions; the rows themselves are in ``details["table"]``.

A run counts only if it ends with ``iozone test complete.``; IOzone's error lines
(``Can not open temp file``, ``iozone: interrupted``, ``Error ...``) refuse it.

Rendering: IOzone's cluster mode, the master here and one child per thread on the clients
(its thread list a file of the job); sizes in k, m and g (pfslab/tools/iozone_options.py).
"""

from __future__ import annotations

import re
from typing import Any

from pfslab import distribution
from pfslab.results import ParseError, ParseResult, operation_from_values
from pfslab.tools import iozone_options
from pfslab.tools.base import JobInput, Step, StepInput, program_index

TOOL = "iozone"
#: The program the nodes run.
EXECUTABLE = "iozone"
#: What the tool leaves in work_dir besides its output, kept with the run.
KEEP: tuple[str, ...] = ()
#: IOzone reads k, m and g only (-s 8t would be 8 KiB): its sizes in those.
size_text = iozone_options.size
#: IOzone's distributed mode (-+m) before any child measured: the master's connection
#: to a child's port, opened while the child was still coming up, was refused. Seen in
#: 2 of 18 IOzone tests of one quick suite on 2 loaded cores (exit 25), each time with
#: 2 children per client; the same test passed when run again.
START_FAILURE = r"^(Master|Child): connect failed"

_VERSION = re.compile(r"Version \$Revision: (\S+) \$")
_COMMAND = re.compile(r"^\s*Command line used: (.*?)\s*$", re.M)
_COMPLETE = "iozone test complete."
# Prefixes of the error messages in the iozone binary (``strings /usr/bin/iozone``, 3.489).
_ERRORS = (
    re.compile(r"^\s*Can not (?:open|create|fdopen|run) .*$", re.M),
    re.compile(r"^\s*(?:Error[: ]|error returned from ).*$", re.M),
    re.compile(r"^\s*Unable to .*$", re.M),
    re.compile(r"^\s*iozone: interrupted.*$", re.M),
    re.compile(r"^\s*exiting iozone.*$", re.M),
)
_CHILDREN = re.compile(
    r"^\s*Children see throughput for\s+(\d+)\s+(.+?)\s*=\s*([\d.]+)\s+(kB/sec|ops/sec)\s*$", re.M
)
_PER_PROCESS = {
    "parent_sees": re.compile(r"^\s*Parent sees throughput for\s+\d+\s+.+?=\s*([\d.]+)", re.M),
    "min_per_process": re.compile(r"^\s*Min throughput per process\s*=\s*([\d.]+)", re.M),
    "max_per_process": re.compile(r"^\s*Max throughput per process\s*=\s*([\d.]+)", re.M),
    "avg_per_process": re.compile(r"^\s*Avg throughput per process\s*=\s*([\d.]+)", re.M),
    "min_xfer": re.compile(r"^\s*Min xfer\s*=\s*([\d.]+)", re.M),
}
#: Cluster mode (-+m) prints no "Parent sees" line: the parent is not timing children.
_OPTIONAL_PER_PROCESS = frozenset({"parent_sees"})
_UNITS = {"kB/sec": "KiB/s", "ops/sec": "ops/s"}

#: Test names as IOzone prints them in throughput mode -> the kit's operation names
#: (an unknown name becomes its snake case).
_THROUGHPUT_NAMES = {
    "initial writers": "write",
    "rewriters": "rewrite",
    "readers": "read",
    "re-readers": "reread",
    "reverse readers": "backward_read",
    "stride readers": "stride_read",
    "random readers": "random_read",
    "mixed workload": "mixed_workload",
    "random writers": "random_write",
    "pwrite writers": "pwrite",
    "pread readers": "pread",
    "fwriters": "fwrite",
    "freaders": "fread",
}
#: Table columns (two header lines joined) -> the kit's operation names.
_TABLE_NAMES = {
    "write": "write",
    "rewrite": "rewrite",
    "read": "read",
    "reread": "reread",
    "random read": "random_read",
    "random write": "random_write",
    "bkwd read": "backward_read",
    "record rewrite": "record_rewrite",
    "stride read": "stride_read",
    "fwrite": "fwrite",
    "frewrite": "frewrite",
    "fread": "fread",
    "freread": "freread",
}


def parse(text: str) -> ParseResult:
    """Parse one IOzone output (throughput mode or table mode)."""
    if not text.strip():
        raise ParseError("IOzone output is empty")
    for pattern in _ERRORS:
        error = pattern.search(text)
        if error:
            raise ParseError(f"IOzone reported an error: {error.group(0).strip()}")
    version = _VERSION.search(text)
    if version is None and "Iozone: Performance Test of File I/O" not in text:
        raise ParseError("not an IOzone output: no 'Iozone: Performance Test of File I/O' header")
    command = _COMMAND.search(text)
    result = ParseResult(
        tool=TOOL,
        version=version.group(1) if version else None,
        command=command.group(1) if command else None,
    )
    result.details.update(_details(text))
    if _CHILDREN.search(text):
        _parse_throughput(text, result)
    else:
        _parse_table(text, result)
    if _COMPLETE not in text:
        raise ParseError("IOzone output is truncated: no 'iozone test complete.' line (the run did not finish)")
    result.details["tests"] = list(result.operations)
    return result


def _details(text: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    records = [int(r) for r in re.findall(r"^\s*Record Size (\d+) kB", text, re.M)]
    if records:
        details["record_size_kb"] = records[0] if len(records) == 1 else records
    file_size = re.search(r"^\s*File size set to (\d+) kB", text, re.M)
    if file_size:
        details["file_size_kb"] = int(file_size.group(1))
    threads = re.search(r"^\s*Throughput test with (\d+) (processes|threads)", text, re.M)
    details["threads"] = int(threads.group(1)) if threads else 1
    if threads:
        details["thread_kind"] = threads.group(2)
    each = re.search(r"Each (?:process|thread) writes a (\d+) kByte file in (\d+) kByte records", text)
    if each:
        details["file_size_kb"] = int(each.group(1))
        details["record_size_kb"] = int(each.group(2))
    details["fsync"] = "Include fsync in write timing" in text
    details["o_direct"] = "O_DIRECT feature enabled" in text
    details["auto_mode"] = bool(re.search(r"^\s*Auto Mode", text, re.M))
    details["ops_mode"] = "OPS Mode" in text
    began = re.search(r"^\s*Run began: (.*?)\s*$", text, re.M)
    if began:
        details["began"] = began.group(1)
    return details


def _parse_throughput(text: str, result: ParseResult) -> None:
    matches = list(_CHILDREN.finditer(text))
    aggregates: dict[str, list[float]] = {}
    units: dict[str, str] = {}
    tasks: dict[str, int] = {}
    blocks: dict[str, list[dict[str, float]]] = {}
    for index, match in enumerate(matches):
        printed = match.group(2).strip()
        name = _THROUGHPUT_NAMES.get(printed, "_".join(printed.replace("-", " ").split()))
        aggregates.setdefault(name, []).append(float(match.group(3)))
        units[name] = _UNITS[match.group(4)]
        tasks[name] = int(match.group(1))
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        block = text[match.end() : end]
        figures: dict[str, float] = {}
        for key, pattern in _PER_PROCESS.items():
            found = pattern.search(block)
            if found:
                figures[key] = float(found.group(1))
        if set(_PER_PROCESS) - _OPTIONAL_PER_PROCESS - set(figures):
            raise ParseError(f"IOzone output is truncated inside the {printed!r} throughput block")
        blocks.setdefault(name, []).append(figures)
    for name, values in aggregates.items():
        operation = operation_from_values(name, units[name], values, tasks[name])
        result.operations[name] = operation
    result.details["mode"] = "throughput"
    result.details["throughput"] = {
        name: (figures[0] if len(figures) == 1 else figures) for name, figures in blocks.items()
    }
    result.details["unit"] = next(iter(units.values()))


def _parse_table(text: str, result: ParseResult) -> None:
    lines = text.splitlines()
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s+kB\s+reclen\s", line)), None)
    if header_at is None:
        if _COMPLETE not in text:
            raise ParseError("IOzone output is truncated: no results table and no throughput lines")
        raise ParseError("IOzone output has neither throughput lines nor a results table")
    columns = _table_columns(lines[header_at - 1] if header_at else "", lines[header_at])
    rows: list[dict[str, float]] = []
    for line in lines[header_at + 1 :]:
        if not line.strip() or not re.match(r"^\s+\d", line):
            break
        row: dict[str, float] = {}
        for value in re.finditer(r"\S+", line):
            column = min(columns, key=lambda c: abs(c[0] - value.end()))
            if abs(column[0] - value.end()) > 4:
                raise ParseError(f"IOzone table value {value.group()!r} lies under no column header")
            try:
                row[column[1]] = float(value.group())
            except ValueError:
                raise ParseError(f"IOzone table has a non-numeric value {value.group()!r}") from None
        if "kB" not in row or "reclen" not in row:
            raise ParseError("IOzone table row lacks its file size or record size")
        rows.append(row)
    if not rows:
        raise ParseError("IOzone output is truncated: the results table has no rows")
    unit = "ops/s" if "OPS Mode" in text else "KiB/s"
    for label, name in _TABLE_NAMES.items():
        values = [row[label] for row in rows if label in row]
        if values:
            result.operations[name] = operation_from_values(name, unit, values, 1)
    if not result.operations:
        raise ParseError("IOzone results table has sizes but no figures")
    result.details["mode"] = "table"
    result.details["unit"] = unit
    keys = dict(_TABLE_NAMES, kB="file_size_kb", reclen="record_size_kb")
    result.details["table"] = [{keys[k]: v for k, v in row.items()} for row in rows]


def _table_columns(top: str, bottom: str) -> list[tuple[int, str]]:
    """(end position, name) per column; a word of the upper header line joins the one under it."""
    prefixes = {m.end(): m.group() for m in re.finditer(r"\S+", top)}
    columns: list[tuple[int, str]] = []
    for word in re.finditer(r"\S+", bottom):
        prefix = prefixes.get(word.end())
        columns.append((word.end(), f"{prefix} {word.group()}" if prefix else word.group()))
    return columns


# ---- rendering ------------------------------------------------------------------

def prepare(job: JobInput) -> None:
    """Nothing to add to the job before its steps."""


def render_step(inp: StepInput) -> Step:
    """IOzone's master on the launching node, its children on the clients (-+m thread list)."""
    inp.files[f"threadlist.{inp.threads}"] = distribution.iozone_threadlist(
        inp.threads, inp.hosts, inp.ctx.scratch_dir, inp.ctx.tool_path
    )
    # -+h: the master's address for the children to connect back to. Only the
    # local lab needs it: there the host's name resolves to loopback.
    master = f" -+h {inp.ctx.iozone_master}" if inp.ctx.iozone_master else ""
    return inp.step(f"{inp.ctx.tool_path} {inp.args}{master}", transient=START_FAILURE)


def check_command(lab: dict[str, Any], tokens: list[str]) -> list[str]:
    """What IOzone would misread in the rendered line ``tokens`` (its size suffixes)."""
    return iozone_options.check_args(tokens[program_index(tokens, EXECUTABLE) + 1:])
