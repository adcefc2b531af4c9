"""IOR parser against real IOR 3.3.0 and 4.0.0 outputs (tests/fixtures/ior, see its README).

Expected figures were read by hand from the fixture files.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pfslab.tools import ior
from pfslab.results import ParseError

Read = Callable[[str], str]


def test_ior_400_text_two_iterations(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/ior_local_ext4_N1_shared_i2.txt"))
    assert result.tool == "ior"
    assert result.version == "4.0.0"
    assert result.command == "ior -a POSIX -w -r -t 1m -b 256m -o /scratch/pfslab/scratch/local/n1 -e -C -i 2"
    write = result.operation("write")
    assert (write.unit, write.max, write.min, write.mean, write.stddev) == ("MiB/s", 1880.64, 585.38, 1233.01, 647.63)
    assert (write.iterations, write.tasks) == (2, 2)
    read = result.operation("read")
    assert (read.max, read.min, read.mean, read.stddev) == (31679.41, 14483.31, 23081.36, 8598.05)
    iops = result.operation("write_iops")
    assert (iops.unit, iops.max, iops.min) == ("IOPS", 1880.64, 585.38)
    details = result.details
    assert details["api"] == "POSIX"
    assert details["access"] == "single-shared-file"
    assert details["file_per_process"] is False
    assert details["ordering_in_a_file"] == "sequential"
    assert (details["tasks"], details["nodes"], details["clients_per_node"]) == (2, 1, 2)
    assert details["transfer_size"] == 1024**2
    assert details["block_size"] == 256 * 1024**2
    assert details["aggregate_size"] == 512 * 1024**2
    assert details["segments"] == 1
    assert details["test_file"] == "/scratch/pfslab/scratch/local/n1"
    rows = details["results"]
    assert [(r["access"], r["bw_mib_s"], r["iteration"]) for r in rows] == [
        ("write", 585.38, 0),
        ("read", 14483.0, 0),
        ("write", 1880.64, 1),
        ("read", 31679.0, 1),
    ]


def test_ior_400_text_file_per_process(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/ior_local_ext4_NN_fpp_i2.txt"))
    assert result.details["access"] == "file-per-process"
    assert result.details["file_per_process"] is True
    assert result.operation("write").max == 2462.66
    assert result.operation("read").min == 3187.85


def test_ior_400_text_cephfs_odirect(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/cephfs_fuse_2osd_size2_ior_NN_fpp_odirect.txt"))
    assert result.operation("write").mean == 70.30
    assert result.operation("read").mean == 293.19
    assert "--posix.odirect" in (result.command or "")


def test_ior_330_text_two_iterations_with_remove_rows(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/ior-3.3.0_posix_NN_fpp_i2.txt"))
    assert result.version == "3.3.0"
    assert result.command == "/opt/ior-3.3.0/bin/ior -a POSIX -w -r -t 1m -b 16m -o /tmp/pfsx/d3/f -e -F -i 2"
    write = result.operation("write")
    assert (write.max, write.min, write.mean, write.stddev, write.iterations) == (2731.56, 2008.21, 2369.88, 361.67, 2)
    assert result.operation("read").max == 41365.47
    assert result.details["access"] == "file-per-process"
    assert result.details["ordering_inter_file"] == "no tasks offsets"
    # the 3.3.0 table also has "remove" rows with dashes: they are not results
    assert len(result.details["results"]) == 4


def test_ior_330_single_iteration(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/ior-3.3.0_posix_N1_t1m_b16m.txt"))
    assert result.operation("write").mean == 2253.60
    assert result.operation("read").mean == 43394.71
    assert result.operation("read").iterations == 1


@pytest.mark.parametrize(
    ("name", "version", "op", "bw", "iops"),
    [
        ("ior/ior-3.3.0_pixstor_write_v.txt", "3.3.0", "write", 360.74, 45.09),
        ("ior/ior-3.3.0_pixstor_read_v.txt", "3.3.0", "read", 44452.29, 5556.54),
        ("ior/ior-4.0.0_pixstor_write_v.txt", "4.0.0", "write", 328.68, 41.08),
        ("ior/ior-4.0.0_pixstor_read_v.txt", "4.0.0", "read", 44016.64, 5502.08),
    ],
)
def test_ior_pixstor_style_separate_write_and_read_runs(
    fixture_text: Read, name: str, version: str, op: str, bw: float, iops: float
) -> None:
    result = ior.parse(fixture_text(name))
    assert result.version == version
    assert set(result.operations) == {op, f"{op}_iops"}
    assert result.operation(op).max == bw
    assert result.operation(f"{op}_iops").max == iops
    assert result.details["transfer_size"] == 8 * 1024**2
    assert result.details["block_size"] == 64 * 1024**2


def test_ior_400_json_stdout(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/ior_local_ext4_summaryFormat_JSON_stdout.txt"))
    assert result.version == "4.0.0"
    assert result.command == (
        "ior -a POSIX -w -r -t 1m -b 256m -o /scratch/pfslab/scratch/local/j -e -C -O summaryFormat=JSON"
    )
    assert result.operation("write").max == 1109.8921
    assert result.operation("read").mean == 7409.6640
    assert result.operation("read_iops").mean == 7409.6640
    assert result.details["access"] == "single-shared-file"
    assert result.details["block_size"] == 256 * 1024**2


def test_ior_400_json_two_iterations_flat_results(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/ior-4.0.0_summaryFormat_JSON_i2_stdout.txt"))
    write = result.operation("write")
    assert (write.max, write.min, write.mean, write.stddev, write.iterations) == (
        2101.3876,
        1645.1477,
        1873.2676,
        228.12,
        2,
    )
    assert result.operation("read").min == 37470.0525
    writes = [r for r in result.details["results"] if r["access"] == "write"]
    assert [(r["bwMiB"], r["iteration"]) for r in writes] == [(1645.1477, 0), (2101.3876, 1)]


def test_ior_330_json_nested_results(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/ior-3.3.0_summaryFormat_JSON_i2_stdout.txt"))
    assert result.version == "3.3.0"
    write = result.operation("write")
    assert (write.max, write.min, write.mean, write.stddev) == (998.8468, 583.388, 791.1174, 207.7294)
    writes = [r for r in result.details["results"] if r["access"] == "write"]
    assert [(r["bwMiB"], r["iteration"]) for r in writes] == [(583.388, 0), (998.8468, 1)]


def test_ior_cephfs_json_with_odd_inode_figures(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/cephfs_fuse_2osd_size2_ior_N1_json.txt"))
    assert result.operation("write").max == 243.8016
    assert result.operation("read").max == 6124.1891


@pytest.mark.parametrize(
    ("stdout", "summary", "write", "read"),
    [
        (
            "ior/ior_local_ext4_fpp_summaryFile_JSON_stdout.txt",
            "ior/ior_local_ext4_fpp_summary.json",
            576.2968,
            6402.3148,
        ),
        (
            "ior/ior-3.3.0_fpp_summaryFile_JSON_stdout.txt",
            "ior/ior-3.3.0_fpp_summary.json",
            2454.9965,
            40324.5115,
        ),
    ],
)
def test_ior_summary_file(fixture_text: Read, stdout: str, summary: str, write: float, read: float) -> None:
    with pytest.raises(ParseError, match="summary file .*summary.json"):
        ior.parse(fixture_text(stdout))
    result = ior.parse(fixture_text(summary))
    assert result.operation("write").max == write
    assert result.operation("read").max == read
    assert result.details["file_per_process"] is True


def test_ior_400_csv(fixture_text: Read) -> None:
    result = ior.parse(fixture_text("ior/ior_local_ext4_summaryFormat_CSV_stdout.txt"))
    assert result.version is None
    write = result.operation("write")
    assert (write.max, write.min, write.iterations, write.tasks, write.stddev) == (1595.8448, 1595.8448, 1, 2, 0.0)
    assert result.operation("write_iops").max == 1596.3679
    assert result.operation("read").mean == 15832.3465
    assert result.details["block_size"] == 256 * 1024**2


def test_ior_330_csv_has_no_figures(fixture_text: Read) -> None:
    with pytest.raises(ParseError, match="3.3.0.*CSV.*no figures"):
        ior.parse(fixture_text("ior/ior-3.3.0_summaryFormat_CSV_i2_stdout.txt"))


def test_ior_json_with_a_warning_printed_inside_it(fixture_text: Read) -> None:
    # Derived input: IOR 4.0.0 prints "WARNING: Backend returned error during statfs" right
    # after the StartTime value, inside its JSON (seen in the real
    # ior-4.0.0_error_missing_dir_JSON.txt); here that line is spliced at the same place
    # into a real successful JSON output.
    text = fixture_text("ior/ior-4.0.0_summaryFormat_JSON_i2_stdout.txt")
    marker = '"StartTime": "Sat Nov 21 23:07:31 2026"'
    assert marker in text
    text = text.replace(marker, marker + "WARNING: Backend returned error during statfs\n", 1)
    result = ior.parse(text)
    assert result.details["warnings"] == ["WARNING: Backend returned error during statfs"]
    assert result.operation("write").max == 2101.3876


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("ior/ior-3.3.0_error_missing_dir.txt", r"ior ERROR: open64\(.*No such file or directory"),
        ("ior/ior-4.0.0_error_missing_dir.txt", r"ERROR: open64\(.*No such file or directory"),
        ("ior/ior-4.0.0_error_block_not_multiple.txt", "block size must be a multiple of transfer size"),
        ("ior/ior-4.0.0_error_missing_dir_JSON.txt", r"ERROR: open64\("),
    ],
)
def test_ior_error_outputs(fixture_text: Read, name: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason) as caught:
        ior.parse(fixture_text(name))
    assert "\n" not in str(caught.value)


def test_ior_mpi_abort_without_error_line(fixture_text: Read) -> None:
    text = fixture_text("ior/ior-4.0.0_error_missing_dir.txt")
    text = "\n".join(line for line in text.splitlines() if "ERROR" not in line)
    with pytest.raises(ParseError, match="MPI_ABORT"):
        ior.parse(text)


def test_ior_text_truncated_before_summary(fixture_text: Read) -> None:
    text = fixture_text("ior/ior_local_ext4_N1_shared_i2.txt")
    with pytest.raises(ParseError, match="truncated: no 'Summary of all tests'"):
        ior.parse(text.split("Summary of all tests")[0])


def test_ior_text_truncated_before_finished(fixture_text: Read) -> None:
    text = fixture_text("ior/ior-3.3.0_posix_NN_fpp_i2.txt")
    with pytest.raises(ParseError, match="no 'Finished' line"):
        ior.parse(text.split("Finished")[0])


def test_ior_text_truncated_inside_summary_row(fixture_text: Read) -> None:
    text = fixture_text("ior/ior_local_ext4_N1_shared_i2.txt")
    cut = text.index("read        31679.41") + 40
    with pytest.raises(ParseError, match="summary row for 'read' has 4 fields but the header has 27"):
        ior.parse(text[:cut])


def test_ior_json_truncated(fixture_text: Read) -> None:
    text = fixture_text("ior/ior_local_ext4_summaryFormat_JSON_stdout.txt")
    with pytest.raises(ParseError, match="JSON output is truncated or malformed"):
        ior.parse(text[: len(text) // 2])


def test_ior_empty_and_foreign_outputs() -> None:
    with pytest.raises(ParseError, match="empty"):
        ior.parse("  \n")
    with pytest.raises(ParseError, match="not an IOR output"):
        ior.parse("mdtest-4.0.0 was launched with 2 total task(s) on 1 node(s)\n")
