"""Units: conversions between what seeds publish and what tools print."""

from __future__ import annotations

import pytest

from pfslab import units


def test_mib_to_decimal_gb() -> None:
    assert units.convert(1000.0, "MiB/s", "GB/s") == pytest.approx(1.048576)


def test_decimal_and_binary_kilobytes_differ() -> None:
    assert units.convert(1024.0, "kB/s", "KiB/s") == pytest.approx(1000.0)
    assert units.convert(2048.0, "KiB/s", "MiB/s") == pytest.approx(2.0)


def test_rates_and_thousands() -> None:
    assert units.convert(222.1, "Kops/s", "ops/s") == pytest.approx(222100.0)
    assert units.convert(40.0, "KIOPS", "IOPS") == pytest.approx(40000.0)


def test_kinds_do_not_mix() -> None:
    with pytest.raises(units.UnitError, match="cannot convert MiB/s"):
        units.convert(1.0, "MiB/s", "ops/s")


def test_unknown_unit_lists_known_ones() -> None:
    with pytest.raises(units.UnitError, match="unknown unit 'furlongs'; known units: B/s"):
        units.kind_of("furlongs")


def test_completion_time_is_better_when_lower() -> None:
    assert not units.higher_is_better("s")
    assert units.higher_is_better("GB/s") and units.higher_is_better("IOPS")


@pytest.mark.parametrize(
    ("text", "value"),
    [("8M", 8 * 2**20), ("128G", 128 * 2**30), ("4K", 4096), ("1m", 2**20), ("2M", 2 * 2**20), ("4096", 4096), ("4KiB", 4096), ("8t", 8 * 2**40)],
)
def test_sizes_are_binary_as_benchmarks_read_them(text: str, value: int) -> None:
    assert units.parse_size(text) == value


def test_bad_size_names_the_value() -> None:
    with pytest.raises(units.UnitError, match="bad size 'lots'"):
        units.parse_size("lots")


def test_format_size_is_the_shortest_exact_suffix() -> None:
    assert units.format_size(8 * 2**40 // 1024) == "8g"
    assert units.format_size(3 * 2**20 + 1) == str(3 * 2**20 + 1)
