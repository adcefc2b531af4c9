"""The parser registry (``pfslab.tools``) and ``pfslab parse`` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pfslab import tools
from pfslab.results import ParseError

KIT = Path(__file__).resolve().parents[2]
#: The kit's command, installed beside the interpreter running the tests (make deps).
PFSLAB = Path(sys.executable).with_name("pfslab")


def test_registry_names_every_tool() -> None:
    assert set(tools.PARSERS) == {"ior", "mdtest", "iozone", "fio", "lammps", "ioshell", "io500"}


def test_unknown_tool_names_itself_and_the_known_ones(fixtures_dir: Path) -> None:
    known = "fio, io500, ior, ioshell, iozone, lammps, mdtest"
    with pytest.raises(ParseError, match=rf"unknown tool 'hacc'; known tools: {known}$"):
        tools.parse_text("hacc", "anything")
    with pytest.raises(ParseError, match="unknown tool 'hacc'"):
        tools.parse_file("hacc", fixtures_dir / "ior" / "ior_local_ext4_N1_shared_i2.txt")


@pytest.mark.parametrize(
    ("tool", "relative", "operation", "mean"),
    [
        ("ior", "ior/ior_local_ext4_N1_shared_i2.txt", "write", 1233.01),
        ("mdtest", "mdtest/mdtest_local_ext4_n1000_F_u.txt", "file_creation", 86775.711),
        ("iozone", "iozone/cephfs_fuse_2osd_size2_iozone_throughput_t2.txt", "write", 206768.28),
        ("fio", "fio/fio_local_ext4_seqwrite_1m_pure.json", "write", 1569724),
        ("lammps", "lammps/log.melt.serial.lammps", "loop_time", 1.38943),
        ("ioshell", "ioshell/io_shell_mesh40_plain.txt", "execution_time", 0.060071),
    ],
)
def test_parse_file_dispatches_by_tool(
    fixtures_dir: Path, tool: str, relative: str, operation: str, mean: float
) -> None:
    result = tools.parse_file(tool, fixtures_dir / relative)
    assert result.tool == tool
    assert result.operation(operation).mean == mean


def test_parse_file_errors_name_the_file(fixtures_dir: Path) -> None:
    path = fixtures_dir / "ior" / "ior-4.0.0_error_missing_dir.txt"
    with pytest.raises(ParseError, match=rf"^{path}: IOR reported an error"):
        tools.parse_file("ior", path)


def test_parse_file_on_the_wrong_tool_says_so(fixtures_dir: Path) -> None:
    with pytest.raises(ParseError, match="not an IOR output"):
        tools.parse_file("ior", fixtures_dir / "mdtest" / "mdtest_local_ext4_n1000_F_u.txt")


def _pfslab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PFSLAB), *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_cli_parse_ior_prints_json(fixtures_dir: Path) -> None:
    done = _pfslab("parse", "ior", str(fixtures_dir / "ior" / "ior_local_ext4_N1_shared_i2.txt"))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["tool"] == "ior"
    assert document["version"] == "4.0.0"
    assert document["operations"]["write"]["max"] == 1880.64
    assert document["operations"]["read"]["unit"] == "MiB/s"
    assert document["details"]["access"] == "single-shared-file"


def test_cli_parse_bad_output_is_one_line_and_exit_2(fixtures_dir: Path) -> None:
    done = _pfslab("parse", "ior", str(fixtures_dir / "ior" / "ior_local_ext4_fpp_summaryFile_JSON_stdout.txt"))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert "summary file" in lines[0] and "ior_local_ext4_fpp_summary.json" in lines[0]


def test_cli_parse_missing_file(tmp_path: Path) -> None:
    done = _pfslab("parse", "ior", str(tmp_path / "nothing.txt"))
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"no such file: {tmp_path / 'nothing.txt'}")
