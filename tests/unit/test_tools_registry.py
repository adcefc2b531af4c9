"""Every tool a lab file may name (the lab schema's ``tool`` enum) and every kind of
build ``make tools`` makes (registry/tools.json) has its module in pfslab/tools/ with
both ends: ``render_step`` (and ``prepare``) for its command line, ``parse`` for its output."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from pfslab import labs, tools
from pfslab.results import ParseError
from pfslab.tools.base import WorkloadError

KIT = Path(__file__).resolve().parents[2]
ENTRY_POINTS = ("prepare", "render_step", "parse", "size_text", "check_command")


def schema_tools() -> list[str]:
    return labs.schema_enum("workload", "tool")


def build_kinds() -> set[str]:
    data = json.loads((KIT / "registry" / "tools.json").read_text())
    return {entry["kind"] for entry in data["tools"].values()}


def test_the_schema_names_tools() -> None:
    assert {"ior", "mdtest", "io500"} <= set(schema_tools())


@pytest.mark.parametrize("tool", sorted(set(schema_tools()) | build_kinds()))
def test_every_tool_has_a_module_with_render_and_parse(tool: str) -> None:
    path = KIT / "pfslab" / "tools" / f"{tool}.py"
    assert path.is_file(), f"tool {tool} has no module {path.relative_to(KIT)}"
    module = importlib.import_module(f"pfslab.tools.{tool}")
    missing = [name for name in ENTRY_POINTS if not callable(getattr(module, name, None))]
    assert not missing, f"pfslab/tools/{tool}.py has no {', '.join(missing)}"
    assert module.TOOL == tool
    assert tools.TOOLS[tool] is module, f"pfslab.tools.TOOLS does not dispatch {tool} to its module"
    assert tools.PARSERS[tool] is module.parse


def test_the_dispatch_lists_no_tool_the_schema_does_not_allow() -> None:
    assert sorted(tools.TOOLS) == sorted(schema_tools())


def test_an_unknown_tool_is_one_clear_error() -> None:
    with pytest.raises(WorkloadError, match=r"^unknown tool 'hacc'; known tools: fio, io500, ior, ioshell, iozone, lammps, mdtest$"):
        tools.module("hacc")
    with pytest.raises(ParseError, match=r"^unknown tool 'hacc'"):
        tools.parse_text("hacc", "")


def test_executables_differ_from_the_tool_name_only_where_the_program_does() -> None:
    assert {t: tools.executable(t) for t in tools.TOOLS if tools.executable(t) != t} == {"lammps": "lmp", "ioshell": "io_shell"}
