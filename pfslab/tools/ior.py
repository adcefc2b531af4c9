"""Parse IOR outputs: text (3.3.0 and 4.0.0), ``summaryFormat=JSON`` and ``summaryFormat=CSV``.

Figures come from IOR's own summary (``Summary of all tests`` in text, ``"summary"``
in JSON), never recomputed, so they match what IOR users quote. Operations:

* ``write`` / ``read``: bandwidth, unit ``MiB/s`` (IOR's ``Max(MiB) Min(MiB) Mean(MiB)
  StdDev`` columns, over the repetitions ``-i``).
* ``write_iops`` / ``read_iops``: IOR's ``Max(OPs) ...`` columns, unit ``IOPS`` (one
  operation is one transfer of ``-t`` bytes).

The summary table is read by its header names, not by position, because the two
versions differ elsewhere (3.3.0 prints ``remove`` rows and ``Max Write:`` lines, 4.0.0
prints ``ERROR:`` instead of ``ior ERROR:``, its JSON ``Results`` is a flat list where
3.3.0 nests one list per iteration). The per-iteration rows go to
``details["results"]``.

Formats and why each is handled the way it is:

* JSON (``-O summaryFormat=JSON``, stdout or the ``summaryFile`` itself). IOR writes
  it by hand, so a warning printed during the run can land inside the document
  (``"StartTime": "..."WARNING: Backend returned error during statfs``); such
  warnings are cut out and kept in ``details["warnings"]``.
* ``summaryFile=...``: stdout then only says ``Writing output to FILE``; that is
  refused with a message naming FILE, which is the document to parse.
* CSV (4.0.0): one row per operation and iteration and no summary, so max, min,
  mean and the population standard deviation (as IOR computes it) are taken over
  the rows. IOR 3.3.0's CSV mode prints only the header values run together and
  no figures; that is refused as such.

Rendering: an MPI program, its ranks round-robin over the case's clients; a BeeGFS lab's
``{beegfs_striping}`` in the syntax of the lab's IOR (pfslab/tools/ior_options.py).
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from pfslab.results import Operation, ParseError, ParseResult, operation_from_values
from pfslab.tools import ior_options
from pfslab.tools.base import JobInput, Step, StepInput, mpi_step
from pfslab.units import UnitError, parse_size
from pfslab.units import format_size

TOOL = "ior"
#: The program the nodes run.
EXECUTABLE = "ior"
#: What the tool leaves in work_dir besides its output, kept with the run.
KEEP: tuple[str, ...] = ()
#: A per-thread file size in the syntax the tool reads.
size_text = format_size

_HEADER = re.compile(r"^IOR-(\S+): MPI Coordinated Test of Parallel I/O", re.M)
# 3.3.0: "ior ERROR: open64(...) failed, errno 2, ..."; 4.0.0: "ERROR: open64(...) failed. ..."
_ERROR = re.compile(r"^\s*(?:ior )?ERROR:?\s.*$", re.M)
_MPI_ABORT = re.compile(r"^MPI_ABORT was invoked.*$", re.M)
_SUMMARY_FILE = re.compile(r"^Writing output to (.+?)\s*$", re.M)
_CSV_HEADER = "access,bw(MiB/s),IOPS"
_JSON_START = re.compile(r"^\{\s*$", re.M)
_JSON_WARNING = re.compile(r"(?:ior )?WARNING:[^\n]*")
_ROW_OPS = ("write", "read")

# Options block key -> details key; sizes are converted to bytes as well.
_OPTION_KEYS: dict[str, str] = {
    "api": "api",
    "apiVersion": "api_version",
    "test filename": "test_file",
    "access": "access",
    "type": "type",
    "segments": "segments",
    "ordering in a file": "ordering_in_a_file",
    "ordering inter file": "ordering_inter_file",
    "task offset": "task_offset",
    "nodes": "nodes",
    "tasks": "tasks",
    "clients per node": "clients_per_node",
    "repetitions": "repetitions",
    "xfersize": "transfer_size",
    "blocksize": "block_size",
    "aggregate filesize": "aggregate_size",
}
_INT_OPTIONS = {"segments", "task_offset", "nodes", "tasks", "clients_per_node", "repetitions"}
_SIZE_OPTIONS = {"transfer_size", "block_size", "aggregate_size"}


def parse(text: str) -> ParseResult:
    """Parse one IOR output (any of the formats in the module docstring)."""
    if not text.strip():
        raise ParseError("IOR output is empty")
    _raise_on_error(text)
    stripped = text.lstrip()
    # JSON, possibly after lines other processes printed first (mpirun banners)
    if stripped.startswith("{") or (_JSON_START.search(text) and not _HEADER.search(text)):
        return _parse_json(text)
    if stripped.startswith(_CSV_HEADER):
        return _parse_csv(stripped)
    match = _SUMMARY_FILE.search(text)
    if match and not _HEADER.search(text):
        raise ParseError(
            f"IOR wrote its figures to the summary file {match.group(1)} (-O summaryFile); "
            "parse that file instead of stdout"
        )
    if re.match(r"\d+\.\d+\.\d+\S*[A-Z][a-z]{2} [A-Z][a-z]{2} ", stripped):
        raise ParseError(
            "this looks like IOR 3.3.0's summaryFormat=CSV output, which holds no figures "
            "(only header values run together); use summaryFormat=JSON or the text output"
        )
    if not _HEADER.search(text):
        raise ParseError("not an IOR output: no 'IOR-x.y.z: MPI Coordinated Test of Parallel I/O' header")
    return _parse_text(text)


def _raise_on_error(text: str) -> None:
    """Refuse outputs of failed runs, quoting IOR's own first error line."""
    error = _ERROR.search(text)
    if error:
        raise ParseError(f"IOR reported an error: {error.group(0).strip()}")
    abort = _MPI_ABORT.search(text)
    if abort:
        raise ParseError("IOR run was aborted (MPI_ABORT) before it finished")


# --------------------------------------------------------------------------- text


def _parse_text(text: str) -> ParseResult:
    header = _HEADER.search(text)
    assert header is not None
    result = ParseResult(tool=TOOL, version=header.group(1), command=_field(text, "Command line"))
    result.details.update(_text_options(text))
    for key, label in (("path", "Path"), ("machine", "Machine"), ("began", "Began"), ("finished", "Finished")):
        value = _field(text, label)
        if value is not None:
            result.details[key] = value
    result.details["results"] = _text_rows(text)

    if "Summary of all tests:" not in text:
        raise ParseError("IOR output is truncated: no 'Summary of all tests' table (the run did not finish)")
    summary = text.split("Summary of all tests:", 1)[1]
    lines = summary.splitlines()
    header_at = next((i for i, line in enumerate(lines) if line.startswith("Operation")), None)
    if header_at is None:
        raise ParseError("IOR output is truncated: the summary table has no header line")
    columns = _summary_columns(lines[header_at])
    rows: list[dict[str, str]] = []
    for line in lines[header_at + 1 :]:
        tokens = line.split()
        if not tokens or tokens[0] not in _ROW_OPS:
            break
        if len(tokens) != len(columns):
            raise ParseError(
                f"IOR summary row for {tokens[0]!r} has {len(tokens)} fields but the header has "
                f"{len(columns)}: the output is truncated or of an unknown layout"
            )
        rows.append(dict(zip(columns, tokens)))
    if not rows:
        raise ParseError("IOR output is truncated: the summary table has no write or read row")
    if not re.search(r"^Finished\s*:", text, re.M):
        raise ParseError("IOR output is truncated: no 'Finished' line after the summary")
    for row in rows:
        _add_summary_row(result, row)
    return result


def _field(text: str, label: str) -> str | None:
    """Value of a ``Label   : value`` header line (IOR pads labels to 20 characters)."""
    match = re.search(rf"^{re.escape(label)}\s*: ?(.*)$", text, re.M)
    return match.group(1).strip() if match else None


def _text_options(text: str) -> dict[str, Any]:
    """The ``Options:`` block, with sizes also in bytes and counts as integers."""
    if "\nOptions:" not in text:
        return {}
    block = text.split("\nOptions:", 1)[1].split("\n\n", 1)[0]
    raw: dict[str, str] = {}
    for line in block.splitlines():
        if ":" in line:
            key, _, value = line.partition(":")
            raw[key.strip()] = value.strip()
    return _normalise_options(raw)


def _normalise_options(raw: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = {}
    for key, value in raw.items():
        name = _OPTION_KEYS.get(key)
        if name is None:
            continue
        if name in _INT_OPTIONS:
            try:
                details[name] = int(value)
            except (TypeError, ValueError):
                details[name] = value
        elif name in _SIZE_OPTIONS:
            details[name] = _bytes(str(value))
            details[name + "_text"] = str(value)
        else:
            details[name] = value
    if "access" in details:
        details["file_per_process"] = details["access"] == "file-per-process"
    return details


def _bytes(value: str) -> int | str:
    try:
        return parse_size(value.replace(" ", ""))
    except UnitError:
        return value


def _text_rows(text: str) -> list[dict[str, Any]]:
    """Per-iteration rows of the ``Results:`` table (``remove`` rows carry no figures)."""
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        tokens = line.split()
        if len(tokens) != 11 or tokens[0] not in _ROW_OPS:
            continue
        try:
            numbers = [float(t) for t in tokens[1:10]]
            iteration = int(tokens[10])
        except ValueError:
            continue
        rows.append(
            {
                "access": tokens[0],
                "bw_mib_s": numbers[0],
                "iops": numbers[1],
                "latency_s": numbers[2],
                "block_kib": numbers[3],
                "xfer_kib": numbers[4],
                "open_s": numbers[5],
                "wrrd_s": numbers[6],
                "close_s": numbers[7],
                "total_s": numbers[8],
                "iteration": iteration,
            }
        )
    return rows


def _summary_columns(header: str) -> list[str]:
    """Header names; the two ``StdDev`` columns become ``StdDev(MiB)`` and ``StdDev(OPs)``."""
    names: list[str] = []
    for name in header.split():
        if name == "StdDev":
            name = "StdDev(OPs)" if "StdDev(MiB)" in names else "StdDev(MiB)"
        names.append(name)
    required = {"Operation", "Max(MiB)", "Min(MiB)", "Mean(MiB)", "StdDev(MiB)", "#Tasks", "reps"}
    missing = required - set(names)
    if missing:
        raise ParseError(f"IOR summary header lacks {', '.join(sorted(missing))}: unknown layout")
    return names


def _add_summary_row(result: ParseResult, row: dict[str, str]) -> None:
    def num(key: str) -> float:
        try:
            return float(row[key])
        except (KeyError, ValueError):
            raise ParseError(f"IOR summary row for {row['Operation']!r} has a bad {key} value") from None

    op = row["Operation"]
    tasks, reps = int(num("#Tasks")), int(num("reps"))
    name = _unique_name(result, op, row.get("Test#", "0"))
    result.operations[name] = Operation(
        name, "MiB/s", num("Max(MiB)"), num("Min(MiB)"), num("Mean(MiB)"), reps, tasks, num("StdDev(MiB)")
    )
    if "Max(OPs)" in row:
        iops = f"{name}_iops" if name == op else name.replace(op, f"{op}_iops", 1)
        result.operations[iops] = Operation(
            iops, "IOPS", num("Max(OPs)"), num("Min(OPs)"), num("Mean(OPs)"), reps, tasks, num("StdDev(OPs)")
        )
    summary = result.details.setdefault("summary", {})
    summary[name] = {k: _scalar(v) for k, v in row.items() if k != "Operation"}


def _unique_name(result: ParseResult, op: str, test: object) -> str:
    """``write`` for the first test, ``write_test<N>`` for further tests of a ``-f`` script."""
    return op if op not in result.operations else f"{op}_test{test}"


def _scalar(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


# --------------------------------------------------------------------------- JSON


def _parse_json(text: str) -> ParseResult:
    line = _JSON_START.search(text)
    start = text.find("{") if text.lstrip().startswith("{") or line is None else line.start()
    document, warnings = _load_json(text[start:])
    if not isinstance(document, dict):
        raise ParseError("IOR JSON output is not a JSON object")
    version = document.get("Version")
    result = ParseResult(
        tool=TOOL,
        version=str(version) if version is not None else None,
        command=document.get("Command line"),
    )
    if warnings:
        result.details["warnings"] = warnings
    tests = document.get("tests") or []
    if tests and isinstance(tests[0], dict):
        first = tests[0]
        result.details.update(_normalise_options(first.get("Options") or {}))
        if "Path" in first:
            result.details["path"] = first["Path"]
        result.details["results"] = _json_rows(tests)
    for key, label in (("machine", "Machine"), ("began", "Began"), ("finished", "Finished")):
        if label in document:
            result.details[key] = document[label]
    summary = document.get("summary")
    if not summary:
        raise ParseError("IOR JSON output has no 'summary' (no test completed)")
    for entry in summary:
        _add_json_summary(result, entry)
    return result


def _load_json(text: str) -> tuple[Any, list[str]]:
    """Decode IOR's hand-written JSON, removing warnings printed into the middle of it."""
    decoder = json.JSONDecoder()
    try:
        return decoder.raw_decode(text)[0], []
    except json.JSONDecodeError as err:
        first_error = err
    warnings = [w.strip() for w in _JSON_WARNING.findall(text)]
    if warnings:
        try:
            return decoder.raw_decode(_JSON_WARNING.sub("", text))[0], warnings
        except json.JSONDecodeError:
            pass
    raise ParseError(
        f"IOR JSON output is truncated or malformed ({first_error.msg} at line {first_error.lineno})"
    )


def _json_rows(tests: list[Any]) -> list[dict[str, Any]]:
    """Per-iteration results; 3.3.0 nests one list per iteration, 4.0.0 is one flat list."""
    rows: list[dict[str, Any]] = []
    for test in tests:
        results = (test.get("Results") or []) if isinstance(test, dict) else []
        seen: dict[str, int] = {}
        for index, item in enumerate(results):
            for entry in item if isinstance(item, list) else [item]:
                if isinstance(entry, dict) and entry.get("access") in _ROW_OPS:
                    access = str(entry["access"])
                    iteration = index if isinstance(item, list) else seen.get(access, 0)
                    seen[access] = seen.get(access, 0) + 1
                    rows.append(dict(entry, iteration=iteration))
    return rows


def _add_json_summary(result: ParseResult, entry: dict[str, Any]) -> None:
    op = str(entry.get("operation"))
    if op not in _ROW_OPS:
        return
    try:
        tasks, reps = int(entry["numTasks"]), int(entry["repetitions"])
        name = _unique_name(result, op, entry.get("TestID", 0))
        result.operations[name] = Operation(
            name,
            "MiB/s",
            float(entry["bwMaxMIB"]),
            float(entry["bwMinMIB"]),
            float(entry["bwMeanMIB"]),
            reps,
            tasks,
            float(entry["bwStdMIB"]),
        )
        if "OPsMax" in entry:
            iops = f"{name}_iops" if name == op else name.replace(op, f"{op}_iops", 1)
            result.operations[iops] = Operation(
                iops,
                "IOPS",
                float(entry["OPsMax"]),
                float(entry["OPsMin"]),
                float(entry["OPsMean"]),
                reps,
                tasks,
                float(entry["OPsSD"]),
            )
    except (KeyError, TypeError, ValueError) as err:
        raise ParseError(f"IOR JSON summary for {op!r} lacks a usable {err} field") from None
    summary = result.details.setdefault("summary", {})
    summary[name] = {k: v for k, v in entry.items() if k != "operation"}
    result.details.setdefault("tasks", tasks)
    result.details.setdefault("file_per_process", bool(entry.get("filePerProc")))


# --------------------------------------------------------------------------- CSV


def _parse_csv(text: str) -> ParseResult:
    reader = csv.DictReader(io.StringIO(text))
    values: dict[str, dict[str, list[float]]] = {}
    rows: list[dict[str, Any]] = []
    tasks: int | None = None
    for line_no, row in enumerate(reader, start=2):
        access = row.get("access")
        if access not in _ROW_OPS:
            continue
        try:
            bw, iops = float(row["bw(MiB/s)"]), float(row["IOPS"])
            tasks = int(row["numTasks"])
        except (KeyError, TypeError, ValueError):
            raise ParseError(f"IOR CSV output is truncated or malformed at line {line_no}") from None
        figures = values.setdefault(access, {"bw": [], "iops": []})
        figures["bw"].append(bw)
        figures["iops"].append(iops)
        rows.append({k: _scalar(v) for k, v in row.items() if k is not None and v is not None})
    if not values:
        raise ParseError("IOR CSV output has no write or read rows")
    result = ParseResult(tool=TOOL, version=None, command=None)
    for op, figures in values.items():
        result.operations[op] = operation_from_values(op, "MiB/s", figures["bw"], tasks)
        result.operations[f"{op}_iops"] = operation_from_values(f"{op}_iops", "IOPS", figures["iops"], tasks)
    first = rows[0]
    result.details.update(
        {
            "tasks": tasks,
            "block_size": int(float(first["block(KiB)"]) * 1024),
            "transfer_size": int(float(first["xfer(KiB)"]) * 1024),
            "results": rows,
        }
    )
    return result


# ---- rendering ------------------------------------------------------------------

def prepare(job: JobInput) -> None:
    if "beegfs_targets" in job.values and "beegfs_chunk" in job.values:
        # BeeGFS striping in the syntax of the IOR the lab runs (its toolchain view).
        job.values["beegfs_striping"] = ior_options.beegfs_striping(
            ior_options.for_lab(job.lab), job.values["beegfs_targets"], job.values["beegfs_chunk"])


def render_step(inp: StepInput) -> Step:
    return mpi_step(inp)


def check_command(lab: dict[str, Any], tokens: list[str]) -> list[str]:
    """What the option tables of the lab's IOR release reject in the rendered line ``tokens``."""
    return ior_options.check_command(ior_options.for_lab(lab), tokens, TOOL)
