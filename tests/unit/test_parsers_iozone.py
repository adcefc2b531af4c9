"""IOzone parser against real IOzone 3.489 outputs (tests/fixtures/iozone, see its README).

Expected figures were read by hand from the fixture files.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pfslab.tools import iozone
from pfslab.results import ParseError

Read = Callable[[str], str]


def test_iozone_throughput_mode_on_cephfs(fixture_text: Read) -> None:
    result = iozone.parse(fixture_text("iozone/cephfs_fuse_2osd_size2_iozone_throughput_t2.txt"))
    assert result.tool == "iozone"
    assert result.version == "3.489"
    assert result.command == (
        "iozone -i 0 -i 1 -r 1m -s 256m -e -t 2 -F /scratch/pfslab/mnt/cephfs/bench/iz1 "
        "/scratch/pfslab/mnt/cephfs/bench/iz2"
    )
    assert list(result.operations) == ["write", "rewrite", "read", "reread"]
    write = result.operation("write")
    # the children-see aggregate is the figure, in max, min and mean alike
    assert (write.unit, write.max, write.min, write.mean, write.iterations, write.tasks) == (
        "KiB/s",
        206768.28,
        206768.28,
        206768.28,
        1,
        2,
    )
    assert result.operation("read").mean == 4433569.75
    assert result.operation("reread").mean == 2661735.81
    per_process = result.details["throughput"]["write"]
    assert per_process == {
        "parent_sees": 201956.40,
        "min_per_process": 101397.07,
        "max_per_process": 105371.21,
        "avg_per_process": 103384.14,
        "min_xfer": 252928.00,
    }
    details = result.details
    assert (details["mode"], details["threads"], details["record_size_kb"], details["file_size_kb"]) == (
        "throughput",
        2,
        1024,
        262144,
    )
    assert details["fsync"] is True
    assert details["tests"] == ["write", "rewrite", "read", "reread"]


def test_iozone_throughput_mode_random_tests(fixture_text: Read) -> None:
    result = iozone.parse(fixture_text("iozone/iozone_throughput_t2_i012_r64k_s8m.txt"))
    assert result.operation("random_read").mean == 31729568.00
    assert result.operation("random_write").mean == 23634150.00
    assert result.operation("rewrite").mean == 14077950.50
    # a real quirk of tiny runs: one process "saw" nothing; the aggregate is still the figure
    assert result.details["throughput"]["read"]["min_per_process"] == 0.0
    assert result.details["record_size_kb"] == 64


def test_iozone_throughput_mode_ops(fixture_text: Read) -> None:
    result = iozone.parse(fixture_text("iozone/iozone_throughput_t2_O_ops.txt"))
    write = result.operation("write")
    assert (write.unit, write.mean) == ("ops/s", 331796.64)
    assert result.operation("reread").mean == 879683.12
    assert result.details["ops_mode"] is True


def test_iozone_table_single_row(fixture_text: Read) -> None:
    result = iozone.parse(fixture_text("iozone/cephfs_fuse_2osd_size2_iozone_w_r_1m_512m.txt"))
    assert result.details["mode"] == "table"
    assert {name: op.mean for name, op in result.operations.items()} == {
        "write": 198824,
        "rewrite": 316828,
        "read": 7663682,
        "reread": 6148348,
    }
    assert result.operation("write").unit == "KiB/s"
    assert result.operation("write").tasks == 1
    assert result.details["table"] == [
        {
            "file_size_kb": 524288,
            "record_size_kb": 1024,
            "write": 198824,
            "rewrite": 316828,
            "read": 7663682,
            "reread": 6148348,
        }
    ]


def test_iozone_table_two_record_sizes_with_excel_report(fixture_text: Read) -> None:
    result = iozone.parse(fixture_text("iozone/iozone_local_ext4_i012_s256m_r4k_r1m_R_excel_report.txt"))
    write = result.operation("write")
    assert (write.max, write.min, write.mean, write.iterations) == (1772368, 684683, (1772368 + 684683) / 2, 2)
    assert result.operation("random_read").max == 20115542
    assert result.operation("random_write").min == 1079991
    assert result.details["record_size_kb"] == [4, 1024]


def test_iozone_table_blank_columns_are_placed_by_position(fixture_text: Read) -> None:
    # -i 0 -i 2: the read and reread columns are blank, the random ones follow them
    result = iozone.parse(fixture_text("iozone/iozone_O_i0_i2_table.txt"))
    assert {name: (op.unit, op.mean) for name, op in result.operations.items()} == {
        "write": ("ops/s", 368609),
        "rewrite": ("ops/s", 1131503),
        "random_read": ("ops/s", 1391395),
        "random_write": ("ops/s", 1030016),
    }


def test_iozone_auto_mode_sweep(fixture_text: Read) -> None:
    result = iozone.parse(fixture_text("iozone/iozone_local_ext4_auto_small.txt"))
    write = result.operation("write")
    assert (write.max, write.min, write.iterations) == (5113352, 195680, 56)
    assert result.details["auto_mode"] is True
    assert result.details["table"][0] == {
        "file_size_kb": 64,
        "record_size_kb": 4,
        "write": 863676,
        "rewrite": 3057153,
        "read": 6421025,
        "reread": 4564786,
    }


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("iozone/iozone_error_cannot_open.txt", "Can not open temp file: /etc/passwd/iozone.tmp"),
        ("iozone/iozone_error_throughput_cannot_open.txt", "Can not open temp file: /etc/passwd/a"),
    ],
)
def test_iozone_error_outputs(fixture_text: Read, name: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason) as caught:
        iozone.parse(fixture_text(name))
    assert "\n" not in str(caught.value)


def test_iozone_throughput_without_complete_line(fixture_text: Read) -> None:
    text = fixture_text("iozone/cephfs_fuse_2osd_size2_iozone_throughput_t2.txt")
    with pytest.raises(ParseError, match="no 'iozone test complete.' line"):
        iozone.parse(text.split("iozone test complete.")[0])


def test_iozone_throughput_cut_inside_a_block(fixture_text: Read) -> None:
    text = fixture_text("iozone/cephfs_fuse_2osd_size2_iozone_throughput_t2.txt")
    cut = text.index("Min throughput per process", text.index("2 re-readers"))
    with pytest.raises(ParseError, match="truncated inside the 're-readers' throughput block"):
        iozone.parse(text[:cut])


def test_iozone_without_throughput_lines_or_table(fixture_text: Read) -> None:
    text = fixture_text("iozone/cephfs_fuse_2osd_size2_iozone_throughput_t2.txt")
    with pytest.raises(ParseError, match="no results table and no throughput lines"):
        iozone.parse(text.split("Children see")[0])


def test_iozone_table_without_rows(fixture_text: Read) -> None:
    text = fixture_text("iozone/cephfs_fuse_2osd_size2_iozone_w_r_1m_512m.txt")
    with pytest.raises(ParseError, match="results table has no rows"):
        iozone.parse(text.split("          524288")[0])


def test_iozone_empty_and_foreign_outputs(fixture_text: Read) -> None:
    with pytest.raises(ParseError, match="empty"):
        iozone.parse("")
    with pytest.raises(ParseError, match="not an IOzone output"):
        iozone.parse(fixture_text("mdtest/mdtest_local_ext4_n1000_F_u.txt"))


def test_iozone_cluster_mode_has_no_parent_line(fixture_text: Read) -> None:
    # A real -+m run over two netns clients of the local lab: the parent prints no
    # "Parent sees" line in cluster mode, and the aggregate is still the figure.
    result = iozone.parse(fixture_text("iozone/cephfs_netns_2clients_iozone_cluster_t4_O_direct.txt"))
    assert result.operations["write"].mean == 139575.82
    assert result.operations["read"].mean == 551187.45
    assert result.operations["write"].tasks == 4
    assert result.details["o_direct"] is True
    assert "parent_sees" not in result.details["throughput"]["write"]


def test_iozone_cluster_mode_cut_inside_a_block(fixture_text: Read) -> None:
    text = fixture_text("iozone/cephfs_netns_2clients_iozone_cluster_t4_O_direct.txt")
    cut = text.index("Avg throughput per process", text.index("4 readers"))
    with pytest.raises(ParseError, match="truncated inside the 'readers' throughput block"):
        iozone.parse(text[:cut])
