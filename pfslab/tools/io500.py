"""Parse IO500 outputs (io500-sc25 and later C releases): its stdout, result_summary.txt
or result.txt.

stdout and ``result_summary.txt`` carry the same lines (``dupprintf`` in src/main.c):
one ``[RESULT]`` per scored phase (``[      ]`` for a phase outside the score, such as
``ior-rnd4K-easy-read``), ``<phase> <value> GiB/s|kIOPS : time <s> seconds``, with
`` [INVALID]`` after it when the phase broke a rule, and one ``[SCORE ]`` line:
``Bandwidth <GiB/s> : IOPS <kIOPS> kiops : TOTAL <score>``. stdout adds an ``ERROR
INVALID (<file>:<line>) <reason>`` line per broken rule. ``result.txt`` is INI: one
section per phase with ``score``, ``t_delta`` and ``; ERROR INVALID <reason>``
comments, and ``[SCORE]`` with ``MD``, ``BW`` and ``SCORE``.

Figures: each phase under its name in snake case (``ior_easy_write`` in GiB/s,
``mdtest_easy_write`` in kIOPS) and the three scores: ``score_bw`` (GiB/s),
``score_md`` (kIOPS) and ``score`` (the total, the geometric mean of the two).

Validity. IO500 marks a run INVALID for any broken rule. Two rules a short stonewall
breaks by design: ``stonewall-time < 300s`` (src/phase_dbg.c) and, for each write
phase, ``Runtime is smaller than expected minimum runtime`` (300 s, src/main.c). A run
whose only reasons are these two, with the first present (the stonewall was shortened
on purpose), is a complete run that is *not list-valid* (``details["list_valid"]``
False): the kit's quick mode. Any other reason (IOR or find errors, a write phase
ending before its stonewall, ``files-per-dir``, a pause directory, a dry run), any
other ``ERROR`` line, a missing standard phase, a zero score or no ``[SCORE]`` line
is refused with a ParseError: such a run is never a figure.

Rendering: an MPI program reading the config the kit writes (pfslab/tools/io500_config.py);
its result directory is kept with the run.
"""

from __future__ import annotations

import re

from pfslab.results import Operation, ParseError, ParseResult
from pfslab.tools import io500_config
from pfslab.tools.base import JobInput, Step, StepInput, WorkloadError, mpi_step, no_table
from pfslab.units import format_size

TOOL = "io500"
#: The program the nodes run.
EXECUTABLE = "io500"
#: The longest its scaled-down run may take in make smoke (pfslab/smoke_run.py; other
#: tools: STEP_TIMEOUT there). Its write phases run for the stonewall time each, then
#: the read, stat, find and delete phases go through all they wrote: 30-40 s on a quiet
#: 2-core machine, over 45 s twice beside CI's other jobs.
SMOKE_STEP_TIMEOUT = 180
#: What the tool leaves in work_dir besides its output, kept with the run.
KEEP: tuple[str, ...] = (io500_config.RESULT_DIR,)
#: A per-thread file size in the syntax the tool reads.
size_text = format_size

#: The phases every standard-mode run scores (src/phase-definitions.h without the
#: optional ones), in the order IO500 runs them.
STANDARD_PHASES: tuple[str, ...] = (
    "ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write", "find",
    "ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat",
    "mdtest-easy-delete", "mdtest-hard-read", "mdtest-hard-delete",
)
#: The reasons a stonewall shorter than the list's 300 s gives, and only those.
SHORT_STONEWALL = "stonewall-time < 300s"
SHORT_RUNTIME = "Runtime is smaller than expected minimum runtime"
#: Phases that measure nothing (IO500_PHASE_DUMMY) but print a line: timestamp's
#: "0.000000 kIOPS" only marks the time find compares against.
DUMMY_PHASES: frozenset[str] = frozenset({"timestamp"})
#: IO500's units as the kit's unit table spells them.
UNITS: dict[str, str] = {"GiB/s": "GiB/s", "kIOPS": "kIOPS", "kiops": "kIOPS"}

_NUM = r"(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|nan|-?inf)"
_VERSION = re.compile(r"^IO500 version (\S+) \((\w+)\)\s*$", re.M)
_RESULT = re.compile(rf"^\[(RESULT|      )\]\s+(\S+)\s+{_NUM}\s+(GiB/s|kIOPS) : time {_NUM} seconds( \[INVALID\])?\s*$", re.M)
_SCORE = re.compile(rf"^\[SCORE(X| )\] Bandwidth {_NUM} GiB/s : IOPS {_NUM} kiops : TOTAL {_NUM}( \[INVALID\])?\s*$", re.M)
_STDOUT_INVALID = re.compile(r"^ERROR INVALID \(([^)]*)\) (.*?)\s*$", re.M)
_ERROR = re.compile(r"^.*\b(ERROR|MPI_ABORT|Segmentation fault)\b.*$", re.M)
# result.txt (INI)
_SECTION = re.compile(r"^\[([A-Za-z0-9-]+)\]\s*$", re.M)
_PAIR = re.compile(r"^([A-Za-z0-9_-]+)\s*=\s*(.*?)\s*$", re.M)
_INI_INVALID = re.compile(r"^; ERROR INVALID (.*?)\s*$", re.M)


def snake(phase: str) -> str:
    """A phase's figure name: ``ior-easy-write`` -> ``ior_easy_write``."""
    return phase.replace("-", "_").lower()


def parse(text: str) -> ParseResult:
    """Parse IO500's stdout, its result_summary.txt or its result.txt."""
    if not text.strip():
        raise ParseError("io500 output is empty")
    if re.search(r"^\[run\]\s*$", text, re.M):
        return _parse_result_txt(text)
    return _parse_summary(text)


def _parse_summary(text: str) -> ParseResult:
    version = _VERSION.search(text)
    if version is None:
        raise ParseError("not an IO500 output: no 'IO500 version <v> (<mode>)' line")
    result = ParseResult(TOOL, version.group(1), None)
    result.details["mode"] = version.group(2)
    reasons = [m.group(2) for m in _STDOUT_INVALID.finditer(text)]
    invalid_lines = {m.group(0).strip() for m in _STDOUT_INVALID.finditer(text)}
    for error in _ERROR.finditer(text):
        if error.group(0).strip() not in invalid_lines:
            raise ParseError(f"io500 reported an error: {error.group(0).strip()}")
    phases: dict[str, dict[str, object]] = {}
    for m in _RESULT.finditer(text):
        if m.group(2) in DUMMY_PHASES:
            continue
        phase, value, unit, seconds = m.group(2), float(m.group(3)), UNITS[m.group(4)], float(m.group(5))
        phases[phase] = {"value": value, "unit": unit, "seconds": seconds, "scored": m.group(1) == "RESULT",
                         "invalid": bool(m.group(6))}
    scores = [m for m in _SCORE.finditer(text) if m.group(1) == " "]
    if not scores:
        raise ParseError("io500 output is truncated: no '[SCORE ]' line (the run did not finish)")
    score = scores[-1]
    extended = [m for m in _SCORE.finditer(text) if m.group(1) == "X"]
    return _finish(result, phases, float(score.group(2)), float(score.group(3)), float(score.group(4)),
                   bool(score.group(5)), reasons, float(extended[-1].group(4)) if extended else None)


def _parse_result_txt(text: str) -> ParseResult:
    starts = list(_SECTION.finditer(text))
    sections: dict[str, str] = {}
    for i, m in enumerate(starts):
        sections[m.group(1)] = text[m.end(): starts[i + 1].start() if i + 1 < len(starts) else len(text)]
    pairs = {name: dict(_PAIR.findall(body)) for name, body in sections.items()}
    run = pairs.get("run", {})
    if "version" not in run:
        raise ParseError("not an IO500 result.txt: no 'version' in its [run] section")
    result = ParseResult(TOOL, run["version"], None)
    result.details["mode"] = run.get("mode")
    if "procs" in run:
        result.details["procs"] = int(run["procs"])
    reasons = _INI_INVALID.findall(text)
    phases: dict[str, dict[str, object]] = {}
    for name, values in pairs.items():
        if name in ("run", "SCORE", "SCOREX") or "score" not in values:
            continue
        invalid = bool(_INI_INVALID.search(sections[name]))
        phases[name] = {"value": float(values["score"]), "unit": "GiB/s" if name.startswith("i") else "kIOPS",
                        "seconds": float(values.get("t_delta", "nan")), "scored": None, "invalid": invalid}
        if "exe" in values:
            phases[name]["command"] = values["exe"]
    score = pairs.get("SCORE")
    if not score or "SCORE" not in score:
        raise ParseError("io500 result.txt is truncated: no [SCORE] section (the run did not finish)")
    total, _, flag = score["SCORE"].partition(" ")
    extended = pairs.get("SCOREX", {}).get("SCORE")
    return _finish(result, phases, float(score["BW"]), float(score["MD"]), float(total), "INVALID" in flag, reasons,
                   float(extended.split()[0]) if extended else None)


def _finish(result: ParseResult, phases: dict[str, dict[str, object]], bw: float, md: float, total: float,
            score_invalid: bool, reasons: list[str], extended: float | None) -> ParseResult:
    missing = [p for p in STANDARD_PHASES if p not in phases]
    if missing:
        raise ParseError(f"io500 output lacks the phases {', '.join(missing)} (every standard phase must run)")
    for phase in STANDARD_PHASES:
        value = float(str(phases[phase]["value"]))
        if not value > 0:
            raise ParseError(f"io500 phase {phase} scored {value}: it did not run (run = FALSE) or failed")
    unexplained = [r for r in dict.fromkeys(reasons) if r not in (SHORT_STONEWALL, SHORT_RUNTIME)]
    if unexplained:
        raise ParseError(f"io500 run is invalid: {unexplained[0]}")
    if reasons and SHORT_STONEWALL not in reasons:
        raise ParseError(f"io500 run is invalid: {reasons[0]} with the list's 300 s stonewall")
    flagged = [p for p, info in phases.items() if info["invalid"]]
    if (flagged or score_invalid) and not reasons:
        raise ParseError(f"io500 marks {', '.join(flagged) or 'the score'} [INVALID] and gives no reason")
    for phase, info in phases.items():
        value = float(str(info["value"]))
        result.operations[snake(phase)] = Operation(snake(phase), str(info["unit"]), value, value, value, 1)
    result.operations["score_bw"] = Operation("score_bw", "GiB/s", bw, bw, bw, 1)
    result.operations["score_md"] = Operation("score_md", "kIOPS", md, md, md, 1)
    result.operations["score"] = Operation("score", "score", total, total, total, 1)
    result.details.update({
        "phases": {p: dict(info) for p, info in phases.items()},
        "score": {"bandwidth_gib_s": bw, "metadata_kiops": md, "total": total},
        "list_valid": not reasons and not score_invalid,
        "invalid_reasons": list(dict.fromkeys(reasons)),
    })
    if extended is not None:
        result.details["score"]["extended_total"] = extended
    return result


# ---- rendering ------------------------------------------------------------------

def prepare(job: JobInput) -> None:
    """The config IO500 reads, from the lab and the mode (the list's rules in full mode)."""
    result_dir = f"{job.ctx.rank_dir or job.ctx.work_dir}/{io500_config.RESULT_DIR}"
    try:
        job.files[io500_config.CONFIG_FILE] = io500_config.render(
            job.sizes, job.mode, job.workload["id"], job.ctx.scratch_dir, result_dir)
    except io500_config.ConfigError as err:
        raise WorkloadError(str(err)) from None
    job.values["config"] = f"{job.ctx.work_dir}/{io500_config.CONFIG_FILE}"


def render_step(inp: StepInput) -> Step:
    step = mpi_step(inp)
    if inp.ctx.rank_dir and inp.ctx.rank_dir != inp.ctx.work_dir:
        # Rank 0 writes IO500's result directory where it runs: moved beside the job's outputs.
        step.collect = f"{inp.ctx.rank_dir}/{io500_config.RESULT_DIR}"
    return step


#: No option table of its own to check a rendered line against.
check_command = no_table
