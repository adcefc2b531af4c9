"""io_shell parser against real runs of SEACAS io_shell 7.3 (tests/fixtures/ioshell, see its README).

Expected figures were read by hand from the fixture files; the ``--debug`` byte and
time totals were summed independently with grep/awk over the fixture.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pfslab.tools import ioshell
from pfslab.results import ParseError

Read = Callable[[str], str]


def test_ioshell_plain_copy(fixture_text: Read) -> None:
    result = ioshell.parse(fixture_text("ioshell/io_shell_mesh40_plain.txt"))
    assert result.tool == "ioshell"
    assert (result.version, result.command) == (None, None)
    assert list(result.operations) == ["execution_time"]
    time = result.operation("execution_time")
    assert (time.unit, time.max, time.min, time.mean, time.iterations, time.tasks) == (
        "s",
        0.060071,
        0.060071,
        0.060071,
        1,
        1,
    )
    details = result.details
    assert (details["input_file"], details["input_type"]) == ("mesh40.e", "exodus")
    assert (details["output_file"], details["output_type"]) == ("out40.e", "exodus")
    assert (details["nodes"], details["elements"], details["time_steps"]) == (68921, 64000, 20)
    assert (details["max_field_bytes"], details["max_field"]) == (2048000, "connectivity")


def test_ioshell_memory_statistics(fixture_text: Read) -> None:
    result = ioshell.parse(fixture_text("ioshell/io_shell_mesh20_memory_statistics.txt"))
    assert result.operation("execution_time").mean == 0.0079026
    assert (result.details["memory_mib"], result.details["high_water_memory_mib"]) == (19, 20)
    assert (result.details["nodes"], result.details["time_steps"]) == (9261, 10)
    assert result.details["trace"][0] == {"t": 0.0, "label": "Database Creation"}


def test_ioshell_debug_field_log_gives_read_and_write_throughput(fixture_text: Read) -> None:
    result = ioshell.parse(fixture_text("ioshell/io_shell_mesh40_debug.txt"))
    details = result.details
    assert (details["read_bytes"], details["read_calls"], details["read_seconds"]) == (57795868, 44, 0.01585)
    assert (details["write_bytes"], details["write_calls"], details["write_seconds"]) == (57795868, 44, 0.03745)
    read, write = result.operation("read"), result.operation("write")
    assert (read.unit, write.unit) == ("MiB/s", "MiB/s")
    assert read.mean == pytest.approx(57795868 / 0.01585 / 2**20, rel=1e-3)
    assert write.mean == pytest.approx(57795868 / 0.03745 / 2**20, rel=1e-3)
    assert result.operation("execution_time").mean == 0.065863


def test_ioshell_time_state_per_step(fixture_text: Read) -> None:
    result = ioshell.parse(fixture_text("ioshell/io_shell_mesh40_time_state.txt"))
    read = result.operation("state_read_time")
    assert (read.unit, read.max, read.min, read.iterations) == ("ms", 3.601828, 2.170659, 20)
    write = result.operation("state_write_time")
    assert (write.max, write.min, write.iterations) == (3.650361, 2.176088, 20)
    assert result.operation("execution_time").mean == 0.096106


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("ioshell/io_shell_error_missing_input.txt", "ERROR: Could not open file '/tmp/pfsx/ios/missing.e'"),
        ("ioshell/io_shell_error_unwritable_output.txt", "ERROR: Path '/etc/passwd' is not a directory."),
    ],
)
def test_ioshell_error_outputs(fixture_text: Read, name: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason) as caught:
        ioshell.parse(fixture_text(name))
    assert "\n" not in str(caught.value)


def test_ioshell_failed_without_error_line(fixture_text: Read) -> None:
    text = fixture_text("ioshell/io_shell_error_unwritable_output.txt")
    text = "\n".join(line for line in text.splitlines() if "ERROR" not in line)
    with pytest.raises(ParseError, match="io_shell terminated due to exception"):
        ioshell.parse(text)


def test_ioshell_cut_before_execution_time(fixture_text: Read) -> None:
    text = fixture_text("ioshell/io_shell_mesh40_plain.txt")
    with pytest.raises(ParseError, match="truncated: no 'Total Execution Time'"):
        ioshell.parse(text.split("Total Execution Time")[0])


def test_ioshell_without_success_line(fixture_text: Read) -> None:
    text = fixture_text("ioshell/io_shell_mesh40_plain.txt").replace("io_shell execution successful.", "")
    with pytest.raises(ParseError, match="truncated"):
        ioshell.parse(text)


def test_ioshell_empty_and_foreign_outputs(fixture_text: Read) -> None:
    with pytest.raises(ParseError, match="empty"):
        ioshell.parse(" ")
    with pytest.raises(ParseError, match="not an io_shell output"):
        ioshell.parse(fixture_text("lammps/log.melt.serial.lammps"))
