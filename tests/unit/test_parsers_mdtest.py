"""mdtest parser against real mdtest 3.3.0 and 4.0.0 outputs (tests/fixtures/mdtest, see its README).

Expected figures were read by hand from the fixture files.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pfslab.tools import mdtest
from pfslab.results import ParseError

Read = Callable[[str], str]


def test_mdtest_400_files_only(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/mdtest_local_ext4_n1000_F_u.txt"))
    assert result.tool == "mdtest"
    assert result.version == "4.0.0"
    assert result.command == "mdtest '-n' '1000' '-F' '-u' '-d' '/scratch/pfslab/scratch/local/md1'"
    assert list(result.operations) == [
        "file_creation",
        "file_stat",
        "file_read",
        "file_removal",
        "tree_creation",
        "tree_removal",
    ]
    create = result.operation("file_creation")
    assert (create.unit, create.max, create.min, create.mean, create.stddev) == (
        "ops/s",
        86775.711,
        86775.711,
        86775.711,
        0.0,
    )
    assert (create.iterations, create.tasks) == (1, 2)
    assert result.operation("file_stat").mean == 824028.291
    assert result.operation("tree_removal").mean == 383.146
    details = result.details
    assert (details["tasks"], details["nodes"]) == (2, 1)
    assert (details["files_per_task"], details["dirs_per_task"], details["total_items"]) == (1000, 0, 2000)
    assert details["argv"][:3] == ["mdtest", "-n", "1000"]
    assert details["path"] == "/scratch/pfslab/scratch/local/md1"


def test_mdtest_400_files_and_dirs_two_iterations(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/mdtest_local_ext4_n1000_u_i2_files_and_dirs.txt"))
    create = result.operation("directory_creation")
    assert (create.max, create.min, create.mean, create.stddev, create.iterations) == (
        52514.135,
        16706.181,
        34610.158,
        25320.047,
        2,
    )
    assert result.operation("directory_rename").mean == 78449.934
    assert result.operation("file_removal").max == 207382.151
    assert (result.details["files_per_task"], result.details["dirs_per_task"]) == (1000, 1000)
    assert result.details["item_kind"] == "files/directories"


def test_mdtest_400_dirs_only(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/mdtest_local_ext4_n1000_D_dirs_only.txt"))
    assert result.operation("directory_creation").mean == 6491.756
    assert result.operation("directory_removal").mean == 3413.878
    assert not any(name.startswith("file_") for name in result.operations)
    assert (result.details["files_per_task"], result.details["dirs_per_task"]) == (0, 1000)


def test_mdtest_400_rate_and_time_tables(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/mdtest_local_ext4_n1000_F_u_P_rate_and_time.txt"))
    assert result.operation("file_creation").mean == 1538.847
    assert result.details["time"]["file_creation"] == {"max": 1.3, "min": 1.3, "mean": 1.3, "stddev": 0.0}
    assert result.details["time"]["file_removal"]["mean"] == 0.010
    assert result.details["time_unit"] == "s"


def test_mdtest_400_rank_statistics_columns(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/mdtest_local_ext4_n1000_F_u_rankstats.txt"))
    create = result.operation("file_creation")
    assert (create.max, create.min, create.mean, create.stddev) == (21147.040, 21147.040, 21147.040, 0.0)
    assert result.details["per_rank"]["file_creation"] == {"max": 24338.086, "min": 10665.772, "mean": 17501.929}
    assert result.operation("tree_removal").mean == 17.055


def test_mdtest_400_write_and_read_bytes(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/mdtest_local_ext4_n1000_F_u_w4096_e4096.txt"))
    assert result.operation("file_creation").mean == 4325.521
    assert result.operation("file_read").mean == 280818.425


def test_mdtest_400_on_cephfs(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/cephfs_fuse_2osd_size2_mdtest_n1000_F_u.txt"))
    assert result.operation("file_creation").mean == 1444.095
    assert result.operation("file_removal").mean == 1106.571


def test_mdtest_330_colon_layout(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/mdtest-3.3.0_n200_F_u.txt"))
    assert result.version == "3.3.0"
    assert result.command == "/opt/ior-3.3.0/bin/mdtest '-n' '200' '-F' '-u' '-d' '/tmp/pfsx/md3a'"
    create = result.operation("file_creation")
    # 3.3.0 takes its statistics over iterations x ranks: max and min differ with -i 1
    assert (create.max, create.min, create.mean, create.stddev) == (14256.484, 14255.360, 14255.922, 0.562)
    assert result.operation("tree_creation").mean == 235.921
    assert result.details["path"] == "/tmp/pfsx"
    assert result.details["files_per_task"] == 200


def test_mdtest_330_files_and_dirs_two_iterations(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/mdtest-3.3.0_n100_u_i2_files_and_dirs.txt"))
    create = result.operation("directory_creation")
    assert (create.max, create.min, create.mean, create.iterations) == (86935.959, 76478.151, 81712.901, 2)
    assert "directory_rename" not in result.operations  # 3.3.0 has no rename phase
    assert len(result.operations) == 9


def test_mdtest_330_rate_and_time_tables(fixture_text: Read) -> None:
    result = mdtest.parse(fixture_text("mdtest/mdtest-3.3.0_P.txt"))
    assert result.operation("file_creation").max == 16165.330
    assert result.details["time"]["file_creation"]["max"] == 0.012


@pytest.mark.parametrize(
    ("name", "version", "create_max", "create_min"),
    [
        ("mdtest/mdtest-3.3.0_pixstor_v_b4_z1_L_I16_y_u_t_F.txt", "3.3.0", 13076.198, 13023.327),
        ("mdtest/mdtest-3.3.0_pixstor_w4K_e4K.txt", "3.3.0", 744.310, 743.999),
        ("mdtest/mdtest-4.0.0_pixstor_v_b4_z1_L_I16_y_u_t_F.txt", "4.0.0", 43969.772, 43969.772),
        ("mdtest/mdtest-4.0.0_pixstor_w4K_e4K.txt", "4.0.0", 4554.346, 4554.346),
    ],
)
def test_mdtest_pixstor_style_verbose_tree_runs(
    fixture_text: Read, name: str, version: str, create_max: float, create_min: float
) -> None:
    # -v prints "V-1: ... File creation : 0.172 sec, 744.310 ops/sec" lines: only the
    # SUMMARY table may be read.
    result = mdtest.parse(fixture_text(name))
    assert result.version == version
    create = result.operation("file_creation")
    assert (create.max, create.min) == (create_max, create_min)
    assert (result.details["total_items"], result.details["files_per_task"]) == (128, 64)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (
            "mdtest/mdtest-3.3.0_error_notdir.txt",
            "FAILED in mdtest_run, Unable to create test directory path /etc/passwd/md: Not a directory",
        ),
        ("mdtest/mdtest-4.0.0_error_notdir.txt", r"ERROR: open64\(.*Not a directory"),
        ("mdtest/mdtest_local_ext4_n500_tree_z2_b3_L_N1.txt", r"ERROR: open64\(.*No such file or directory"),
    ],
)
def test_mdtest_error_outputs(fixture_text: Read, name: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason) as caught:
        mdtest.parse(fixture_text(name))
    assert "\n" not in str(caught.value)


def test_mdtest_truncated_before_summary(fixture_text: Read) -> None:
    text = fixture_text("mdtest/mdtest_local_ext4_n1000_F_u.txt")
    with pytest.raises(ParseError, match="truncated: no 'SUMMARY rate' table"):
        mdtest.parse(text.split("SUMMARY rate")[0])


def test_mdtest_truncated_after_table_header(fixture_text: Read) -> None:
    text = fixture_text("mdtest/mdtest-3.3.0_n200_F_u.txt")
    with pytest.raises(ParseError, match="table has no rows"):
        mdtest.parse(text.split("   File creation")[0])


def test_mdtest_truncated_before_finished(fixture_text: Read) -> None:
    text = fixture_text("mdtest/mdtest_local_ext4_n1000_u_i2_files_and_dirs.txt")
    with pytest.raises(ParseError, match="no '-- finished at"):
        mdtest.parse(text.split("-- finished")[0])


def test_mdtest_empty_and_foreign_outputs(fixture_text: Read) -> None:
    with pytest.raises(ParseError, match="empty"):
        mdtest.parse("")
    with pytest.raises(ParseError, match="not an mdtest output"):
        mdtest.parse(fixture_text("ior/ior_local_ext4_N1_shared_i2.txt"))
