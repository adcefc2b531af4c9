"""Parse fio outputs: ``--output-format=json``, ``json+``, ``normal,json`` and terse (v3).

Operations, summed over every job entry of the JSON (and, for ``fio --client`` runs,
over every client in ``client_stats``):

* ``read`` / ``write`` (and ``trim`` when a job trimmed): bandwidth in ``KiB/s``, fio's
  own ``bw`` field, not converted, so the figure matches ``fio`` output and fio users.
* ``read_iops`` / ``write_iops`` (``trim_iops``): unit ``IOPS``.

An operation appears only if some job moved bytes in that direction (a ``rw=write``
job also carries an all-zero ``read`` object).

The sum is the one figure a run gives, so max = min = mean = the sum, iterations = 1,
stddev = None. fio's per-interval samples (``bw_min``, ``bw_max``, ``bw_mean``,
``bw_dev``, ``iops_*``) are per job and cannot be added up across jobs; they are kept
per job in ``details["jobs"]``. ``tasks`` counts processes: a ``group_reporting`` entry
stands for ``numjobs`` of them.

Client/server runs: fio's own ``All clients`` entry is not part of the sum (it would
count every client twice); it is kept in ``details["all_clients"]``. Note that fio
computes it as total bytes over the longest client runtime, so it is lower than the
sum when clients did not run for the same time.

Formats: ``normal,json`` writes the JSON document first and the normal text after it
(with the job banner lines before it), so the parser decodes the first JSON document
in the text and ignores the rest. fio prints errors as ``fio: ...`` lines and as a
non-zero ``error`` in a job; either refuses the output. fio does not print its command
line, so ``command`` is None.

``details`` has the job's ``rw``, ``bs``, ``iodepth``, ``numjobs``, ``direct`` (global
options overlaid by the first job's), counts as integers; an option the job did not
set gets fio's default (``rw=read``, ``bs=4k``, ``iodepth=1``, ``numjobs=1``,
``direct=0``) and is named in ``details["defaults_used"]``.

Rendering: one fio per client node under the lab's launcher, each running its share of the
threads as jobs and writing its own JSON output (the figures are their sum).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any

from pfslab import distribution
from pfslab.results import Operation, ParseError, ParseResult
from pfslab.tools.base import JobInput, Step, StepInput, need_launcher, no_table, start
from pfslab.units import format_size

TOOL = "fio"
#: The program the nodes run.
EXECUTABLE = "fio"
#: What the tool leaves in work_dir besides its output, kept with the run.
KEEP: tuple[str, ...] = ()
#: A per-thread file size in the syntax the tool reads.
size_text = format_size

_FIO_ERROR = re.compile(r"^fio: .*$", re.M)
_JSON_START = re.compile(r"^\{", re.M)
_DIRECTIONS = ("read", "write", "trim")
_OPTION_KEYS = ("rw", "bs", "iodepth", "numjobs", "direct", "ioengine", "size", "runtime", "rwmixread")
_INT_OPTIONS = ("iodepth", "numjobs", "direct", "rwmixread")
#: fio's own defaults, reported when a job did not set the option (listed in ``defaults_used``).
_DEFAULTS: dict[str, Any] = {"rw": "read", "bs": "4k", "iodepth": 1, "numjobs": 1, "direct": 0}
_SAMPLE_KEYS = (
    "bw_min",
    "bw_max",
    "bw_mean",
    "bw_dev",
    "bw_samples",
    "iops_min",
    "iops_max",
    "iops_mean",
    "iops_stddev",
    "iops_samples",
)
_ALL_CLIENTS = "All clients"


def parse(text: str) -> ParseResult:
    """Parse one fio output (see the module docstring for the formats)."""
    if not text.strip():
        raise ParseError("fio output is empty")
    error = _FIO_ERROR.search(text)
    if error:
        raise ParseError(f"fio reported an error: {error.group(0).strip()}")
    start = _JSON_START.search(text)
    if start:
        return _parse_json(text, start.start())
    terse = [line for line in text.splitlines() if re.match(r"^\d+;fio-", line)]
    if terse:
        return _parse_terse(terse)
    if "Run status group" in text:
        raise ParseError(
            "fio normal (text) output is not parsed; run fio with --output-format=json, json+ or normal,json"
        )
    raise ParseError("not a fio output: no JSON document and no terse lines")


# --------------------------------------------------------------------------- JSON


def _parse_json(text: str, start: int) -> ParseResult:
    try:
        document, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as err:
        raise ParseError(f"fio JSON output is truncated or malformed ({err.msg} at line {err.lineno})") from None
    if not isinstance(document, dict):
        raise ParseError("fio JSON output is not a JSON object")
    client_mode = "client_stats" in document
    entries = document.get("client_stats" if client_mode else "jobs")
    if not isinstance(entries, list) or not entries:
        raise ParseError("fio JSON output has no jobs")
    jobs = [e for e in entries if isinstance(e, dict) and e.get("jobname") != _ALL_CLIENTS]
    for job in jobs:
        if job.get("error"):
            code = int(job["error"])
            raise ParseError(f"fio job {job.get('jobname')!r} failed with error {code} ({os.strerror(code)})")

    plus = any("bins" in (job.get(d) or {}).get("clat_ns", {}) for job in jobs for d in _DIRECTIONS)
    normal = bool(re.search(r"^Run status group", text[start:], re.M))
    result = ParseResult(tool=TOOL, version=document.get("fio version"), command=None)
    result.details["format"] = "json+" if plus else "normal,json" if normal else "json"
    global_options: dict[str, Any] = document.get("global options") or {}
    options = dict(global_options, **(jobs[0].get("job options") or {})) if jobs else {}
    for key in _OPTION_KEYS:
        if key in options:
            value = options[key]
            result.details[key] = int(value) if key in _INT_OPTIONS and str(value).isdigit() else value
    defaulted = [key for key in _DEFAULTS if key not in result.details]
    result.details.update({key: _DEFAULTS[key] for key in defaulted})
    if defaulted:
        result.details["defaults_used"] = defaulted
    tasks = _count_tasks(jobs, global_options)
    result.details["tasks"] = tasks
    if client_mode:
        result.details["clients"] = len(jobs)
        hosts = sorted({str(job["hostname"]) for job in jobs if "hostname" in job})
        if hosts:
            result.details["hosts"] = hosts
        everyone = [e for e in entries if isinstance(e, dict) and e.get("jobname") == _ALL_CLIENTS]
        if everyone:
            result.details["all_clients"] = {d: _direction_details(everyone[0].get(d) or {}) for d in _DIRECTIONS}
    result.details["jobs"] = [_job_details(job) for job in jobs]

    for direction in _DIRECTIONS:
        stats = [job.get(direction) or {} for job in jobs]
        if not any(s.get("io_bytes", 0) for s in stats):
            continue
        try:
            bw = float(sum(float(s["bw"]) for s in stats))
            iops = float(sum(float(s["iops"]) for s in stats))
        except (KeyError, TypeError, ValueError):
            raise ParseError(f"fio JSON {direction!r} figures lack 'bw' or 'iops'") from None
        result.operations[direction] = Operation(direction, "KiB/s", bw, bw, bw, 1, tasks)
        name = f"{direction}_iops"
        result.operations[name] = Operation(name, "IOPS", iops, iops, iops, 1, tasks)
    if not result.operations:
        raise ParseError("fio JSON output shows no I/O in any job (nothing was read or written)")
    return result


def _count_tasks(jobs: list[dict[str, Any]], global_options: dict[str, Any]) -> int:
    """Processes behind the entries: a group_reporting entry stands for ``numjobs`` of them."""
    entries: dict[str, int] = {}
    numjobs: dict[str, int] = {}
    for job in jobs:
        key = f"{job.get('hostname', '')}/{job.get('jobname')}"
        entries[key] = entries.get(key, 0) + 1
        options = dict(global_options, **(job.get("job options") or {}))
        try:
            numjobs[key] = int(options.get("numjobs", 1))
        except (TypeError, ValueError):
            numjobs[key] = 1
    return sum(max(entries[key], numjobs[key]) for key in entries)


def _job_details(job: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = {"jobname": job.get("jobname"), "error": job.get("error", 0)}
    for key in ("hostname", "groupid", "elapsed", "job_runtime", "usr_cpu", "sys_cpu"):
        if key in job:
            details[key] = job[key]
    if job.get("job options"):
        details["options"] = job["job options"]
    for direction in _DIRECTIONS:
        stats = job.get(direction) or {}
        if stats.get("io_bytes", 0):
            details[direction] = _direction_details(stats)
    return details


def _direction_details(stats: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = {
        key: stats[key] for key in ("io_bytes", "bw", "iops", "runtime", "total_ios") if key in stats
    }
    details.update({key: stats[key] for key in _SAMPLE_KEYS if key in stats})
    for latency in ("clat_ns", "lat_ns"):
        figures = stats.get(latency) or {}
        if "mean" in figures:
            details[f"{latency}_mean"] = figures["mean"]
        percentiles = figures.get("percentile") or {}
        if "99.000000" in percentiles:
            details[f"{latency}_p99"] = percentiles["99.000000"]
    return details


# --------------------------------------------------------------------------- terse

# Terse v3 fields (1-based in fio's documentation; 0-based here).
_T_VERSION, _T_FIO, _T_JOB, _T_ERROR = 0, 1, 2, 4
_T_READ_BW, _T_READ_IOPS = 6, 7
_T_WRITE_BW, _T_WRITE_IOPS = 47, 48


def _parse_terse(lines: list[str]) -> ParseResult:
    fields = [line.split(";") for line in lines]
    versions = {f[_T_VERSION] for f in fields}
    if versions != {"3"}:
        raise ParseError(f"fio terse version {', '.join(sorted(versions))} is not parsed; use terse v3 or JSON")
    result = ParseResult(tool=TOOL, version=fields[0][_T_FIO], command=None)
    result.details["format"] = "terse"
    sums = {"read": 0.0, "read_iops": 0.0, "write": 0.0, "write_iops": 0.0}
    jobs: list[dict[str, Any]] = []
    for number, f in enumerate(fields, start=1):
        if len(f) <= _T_WRITE_IOPS:
            raise ParseError(f"fio terse line {number} is truncated ({len(f)} fields)")
        if f[_T_ERROR] != "0":
            code = int(f[_T_ERROR])
            raise ParseError(f"fio job {f[_T_JOB]!r} failed with error {code} ({os.strerror(code)})")
        try:
            figures = {
                "read": float(f[_T_READ_BW]),
                "read_iops": float(f[_T_READ_IOPS]),
                "write": float(f[_T_WRITE_BW]),
                "write_iops": float(f[_T_WRITE_IOPS]),
            }
        except ValueError:
            raise ParseError(f"fio terse line {number} has a non-numeric bandwidth or IOPS field") from None
        for key, value in figures.items():
            sums[key] += value
        jobs.append({"jobname": f[_T_JOB], **figures})
    tasks = len(fields)
    for direction in ("read", "write"):
        if sums[direction] or sums[f"{direction}_iops"]:
            bw, iops = sums[direction], sums[f"{direction}_iops"]
            result.operations[direction] = Operation(direction, "KiB/s", bw, bw, bw, 1, tasks)
            name = f"{direction}_iops"
            result.operations[name] = Operation(name, "IOPS", iops, iops, iops, 1, tasks)
    result.details.update({"tasks": tasks, "jobs": jobs})
    if not result.operations:
        raise ParseError("fio terse output shows no I/O in any job")
    return result


# ---- rendering ------------------------------------------------------------------

def prepare(job: JobInput) -> None:
    """Nothing to add to the job before its steps."""


def render_step(inp: StepInput) -> Step:
    """One fio per node, started by the lab's launcher; node r runs its round-robin share
    of the threads as jobs, each writing its own JSON output."""
    ctx = inp.ctx
    need_launcher(inp)
    nodes = min(inp.threads, len(inp.hosts))
    hostfile = f"{ctx.work_dir}/nodes.{nodes}"
    if ctx.scheduler_launcher is None:  # inside a batch job, Slurm knows the nodes: no hostfile
        inp.files[f"nodes.{nodes}"] = distribution.hostfile(nodes, inp.hosts, slots=ctx.hostfile_slots)
    rank_dir = ctx.rank_dir or ctx.work_dir
    # srun sets no MPI rank variable, only Slurm's own.
    rank = "${SLURM_PROCID:-0}" if ctx.scheduler_launcher == "srun" else "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
    per_node = (
        f"r={rank}; "
        f"exec {ctx.tool_path} --numjobs=$(( {inp.threads} / {nodes} + (r < {inp.threads} % {nodes}) )) "
        f"--output={rank_dir}/{inp.tag}.fio.$r.json {inp.args}"
    )
    head = start(ctx, inp.launcher, nodes, nodes, hostfile, per_node=1)
    step = inp.step(f"{head} sh -c {shlex.quote(per_node)}", f"{ctx.work_dir}/{inp.tag}.fio.*.json", launch=head)
    if rank_dir != ctx.work_dir:
        step.collect = f"{rank_dir}/{inp.tag}.fio.*.json"
    return step


#: No option table of its own to check a rendered line against.
check_command = no_table
