"""LAMMPS parser against real logs of Debian's LAMMPS 20220106 (tests/fixtures/lammps, see its README).

Expected figures were read by hand from the fixture files; the dump count was checked
against the dump file of the same run (11 ``ITEM: TIMESTEP`` blocks).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pfslab.tools import lammps
from pfslab.results import ParseError

Read = Callable[[str], str]


def test_lammps_serial_melt(fixture_text: Read) -> None:
    result = lammps.parse(fixture_text("lammps/log.melt.serial.lammps"))
    assert result.tool == "lammps"
    assert result.version == "29 Sep 2021 - Update 2"
    assert result.command is None
    wall = result.operation("wall_time")
    assert (wall.unit, wall.max, wall.min, wall.mean, wall.iterations, wall.tasks) == ("s", 1.0, 1.0, 1.0, 1, 1)
    loop = result.operation("loop_time")
    assert (loop.unit, loop.mean, loop.iterations) == ("s", 1.38943, 1)
    output = result.operation("output_time")
    assert (output.max, output.min, output.mean) == (0.016572, 0.016572, 0.016572)
    details = result.details
    assert (details["timesteps"], details["atoms"], details["procs"]) == (1000, 4000, 1)
    assert details["dumps"] == [
        {"id": "d1", "group": "all", "style": "atom", "every": 100, "file": "dump.melt.lammpstrj"}
    ]
    assert details["dump_snapshots_expected"] == {"d1": 11}
    run = details["runs"][0]
    assert run["timesteps_per_s"] == 719.718
    assert run["timing"]["Pair"]["avg"] == 1.0883
    assert run["timing"]["Other"] == {
        "min": None,
        "avg": 0.002532,
        "max": None,
        "varavg_percent": None,
        "total_percent": 0.18,
    }


def test_lammps_two_mpi_ranks(fixture_text: Read) -> None:
    result = lammps.parse(fixture_text("lammps/log.melt.np2.lammps"))
    loop = result.operation("loop_time")
    assert (loop.mean, loop.tasks) == (0.818522, 2)
    output = result.operation("output_time")
    # max/min/avg across the two MPI ranks, as LAMMPS prints them
    assert (output.max, output.min, output.mean) == (0.012806, 0.012485, 0.012645)
    assert result.operation("wall_time").mean == 0.0
    assert result.details["cpu_use_percent"] == 96.5


def test_lammps_killed_run(fixture_text: Read) -> None:
    with pytest.raises(ParseError, match=r"no 'Total wall time' line.*last thermo step 3000"):
        lammps.parse(fixture_text("lammps/log.melt.killed.lammps"))


def test_lammps_failed_run(fixture_text: Read) -> None:
    with pytest.raises(ParseError, match=r"ERROR: Unrecognized pair style 'lj/cutt' \(src/force.cpp:278\)"):
        lammps.parse(fixture_text("lammps/log.melt.error.lammps"))


def test_lammps_log_cut_before_wall_time(fixture_text: Read) -> None:
    text = fixture_text("lammps/log.melt.serial.lammps")
    with pytest.raises(ParseError, match="truncated: no 'Total wall time' line"):
        lammps.parse(text.split("Total wall time")[0])


def test_lammps_empty_and_foreign_outputs(fixture_text: Read) -> None:
    with pytest.raises(ParseError, match="empty"):
        lammps.parse("")
    with pytest.raises(ParseError, match="not a LAMMPS log"):
        lammps.parse(fixture_text("iozone/iozone_O_i0_i2_table.txt"))
