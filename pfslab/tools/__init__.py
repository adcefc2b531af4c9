"""The benchmark tools the kit runs, one module each, and the dispatch to them.

Each tool module (``pfslab/tools/<tool>.py``) holds both ends of the tool: how a
workload's step becomes its command line (``prepare`` the job, ``render_step`` each
step, :mod:`pfslab.tools.base`) and how its output becomes figures (``parse(text) ->
ParseResult``). Every parser returns the same shape (:mod:`pfslab.results`), so ReFrame
tests, reports and ``pfslab parse`` never care which tool printed a figure, and refuses,
with a one-line :class:`~pfslab.results.ParseError`, an output that is empty, cut short
or reports an error: a half-finished run must never become a number in a report.

A new tool is a new module listed in :data:`TOOLS` (and in the lab schema's ``tool``
enum; tests/unit/test_tools_registry.py holds the two together).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from pfslab.results import ParseError, ParseResult
from pfslab.tools import fio, io500, ioshell, iozone, ior, lammps, mdtest
from pfslab.tools.base import JobInput, Step, StepInput, WorkloadError


class Tool(Protocol):
    """What a tool module provides (checked by mypy where :data:`TOOLS` lists it)."""

    TOOL: str  # its name in lab files and on ``pfslab parse``'s command line
    EXECUTABLE: str  # the program the nodes run
    KEEP: tuple[str, ...]  # what it leaves in work_dir besides its output, kept with the run

    def size_text(self, size: int) -> str: ...  # a per-thread file size in the syntax it reads

    def prepare(self, job: JobInput) -> None: ...

    def render_step(self, inp: StepInput) -> Step: ...

    def parse(self, text: str) -> ParseResult: ...

    def check_command(self, lab: dict[str, Any], tokens: list[str]) -> list[str]: ...  # its option tables' verdict


#: Tool name (as in lab files and on the command line of ``pfslab parse``) -> its module.
TOOLS: dict[str, Tool] = {
    "ior": ior, "mdtest": mdtest, "iozone": iozone, "fio": fio, "lammps": lammps, "ioshell": ioshell, "io500": io500,
}

Parser = Callable[[str], ParseResult]
#: Tool name -> its parser.
PARSERS: dict[str, Parser] = {name: m.parse for name, m in TOOLS.items()}


def module(tool: str) -> Tool:
    """The module of ``tool``; a tool the kit does not know is a :class:`WorkloadError`."""
    try:
        return TOOLS[tool]
    except KeyError:
        raise WorkloadError(f"unknown tool {tool!r}; known tools: {', '.join(sorted(TOOLS))}") from None


def executable(tool: str) -> str:
    """The program ``tool`` runs as (``lmp`` for lammps ...); an unknown tool's own name."""
    return TOOLS[tool].EXECUTABLE if tool in TOOLS else tool


def parse_text(tool: str, text: str) -> ParseResult:
    """Parse ``text``, an output of ``tool``."""
    try:
        parser = PARSERS[tool]
    except KeyError:
        allowed = ", ".join(sorted(PARSERS))
        raise ParseError(f"unknown tool {tool!r}; known tools: {allowed}") from None
    return parser(text)


def parse_file(tool: str, path: Path) -> ParseResult:
    """Parse the file at ``path``, an output of ``tool`` saved as the tool printed it.

    Bytes that are not UTF-8 (a binary dropped into a log) are replaced rather than
    fatal: the parser then says what is missing, which is the useful message.
    """
    if tool not in PARSERS:
        return parse_text(tool, "")  # raises the unknown-tool error
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise ParseError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        return parse_text(tool, text)
    except ParseError as err:
        raise ParseError(f"{path}: {err}") from None


__all__ = ["PARSERS", "TOOLS", "Parser", "Tool", "executable", "module", "parse_file", "parse_text"]
