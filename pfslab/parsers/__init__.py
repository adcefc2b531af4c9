"""Parsers for the outputs of the benchmarks the kit runs.

One module per tool, each with ``parse(text) -> ParseResult``. They all return the
same shape (:mod:`pfslab.results`), so ReFrame tests, reports and ``pfslab parse``
never care which tool printed a figure. Every parser refuses, with a one-line
:class:`~pfslab.results.ParseError`, an output that is empty, cut short or reports
an error: a half-finished run must never become a number in a report.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pfslab.parsers import fio, io500, ioshell, iozone, ior, lammps, mdtest
from pfslab.results import ParseError, ParseResult

Parser = Callable[[str], ParseResult]

#: Tool name (as on the command line of ``pfslab parse``) -> its parser.
PARSERS: dict[str, Parser] = {
    "ior": ior.parse,
    "mdtest": mdtest.parse,
    "iozone": iozone.parse,
    "fio": fio.parse,
    "lammps": lammps.parse,
    "ioshell": ioshell.parse,
    "io500": io500.parse,
}


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


__all__ = ["PARSERS", "Parser", "parse_file", "parse_text"]
