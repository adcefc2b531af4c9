"""make overhead: which case of which tool it compares, and what it refuses."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pfslab import labs, overhead


@pytest.fixture()
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("ior", "fio"):
        path = tmp_path / name
        path.write_text("#!/bin/sh\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PFSLAB_TOOL_PATH", str(tmp_path))
    return tmp_path


def test_each_tool_asked_for_gets_the_labs_first_workload_of_it(tools: Path) -> None:
    chosen = overhead.choose(labs.load("local"), ["ior", "fio"])
    assert [(w["id"], os.path.dirname(path), ops) for w, path, ops in chosen] == [
        ("ior-n1", str(tools), ("write", "read")), ("fio-rand4k", str(tools), ("write_iops", "read_iops"))]


def test_a_tool_it_does_not_compare_is_refused_naming_the_allowed(tools: Path) -> None:
    with pytest.raises(overhead.OverheadError, match=r"^tool 'iozone' is not allowed; allowed: ior, fio$"):
        overhead.choose(labs.load("local"), ["iozone"])


def test_a_lab_without_a_workload_of_the_tool_is_refused(tools: Path) -> None:
    lab = labs.load("local")
    lab["workloads"] = [w for w in lab["workloads"] if w["tool"] != "fio"]
    with pytest.raises(overhead.OverheadError, match=r"^fio has no workload in lab local"):
        overhead.choose(lab, ["ior", "fio"])
