"""fio parser against real fio 3.33 outputs (tests/fixtures/fio, see its README).

Expected figures were read by hand from the fixture files (fio's ``bw`` is KiB/s).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pfslab.tools import fio
from pfslab.results import ParseError

Read = Callable[[str], str]


def test_fio_normal_json_randread(fixture_text: Read) -> None:
    result = fio.parse(fixture_text("fio/phys_tmpfs_fio_randread_4k_qd32.txt"))
    assert result.tool == "fio"
    assert result.version == "fio-3.33"
    assert result.command is None
    assert set(result.operations) == {"read", "read_iops"}
    read = result.operation("read")
    assert (read.unit, read.max, read.min, read.mean, read.iterations, read.tasks) == (
        "KiB/s",
        1338117,
        1338117,
        1338117,
        1,
        1,
    )
    assert result.operation("read_iops").mean == 334529.273536
    assert result.operation("read_iops").unit == "IOPS"
    details = result.details
    assert details["format"] == "normal,json"
    assert (details["rw"], details["bs"], details["iodepth"], details["direct"]) == ("randread", "4k", 32, 1)
    assert (details["jobs"][0]["read"]["bw_min"], details["jobs"][0]["read"]["bw_max"]) == (544704, 1797320)


def test_fio_normal_json_cephfs_seqwrite(fixture_text: Read) -> None:
    result = fio.parse(fixture_text("fio/cephfs_fuse_2osd_size2_fio_seqwrite_1m.txt"))
    assert set(result.operations) == {"write", "write_iops"}
    assert result.operation("write").mean == 26356
    assert result.operation("write_iops").mean == 25.738344
    assert result.details["bs"] == "1M"


def test_fio_pure_json(fixture_text: Read) -> None:
    result = fio.parse(fixture_text("fio/fio_local_ext4_seqwrite_1m_pure.json"))
    assert result.details["format"] == "json"
    assert result.operation("write").mean == 1569724
    assert result.operation("write_iops").mean == 1532.934132
    assert result.details["iodepth"] == 8
    assert result.details["numjobs"] == 1  # not set in the job: fio's default
    assert result.details["defaults_used"] == ["numjobs"]


def test_fio_json_plus(fixture_text: Read) -> None:
    result = fio.parse(fixture_text("fio/fio_local_ext4_randread_4k_jsonplus.json"))
    assert result.details["format"] == "json+"
    assert result.operation("read").mean == 254186
    assert result.operation("read_iops").mean == 63546.690662
    assert result.details["jobs"][0]["read"]["bw_min"] == 233744


def test_fio_terse(fixture_text: Read) -> None:
    result = fio.parse(fixture_text("fio/fio_local_ext4_randrw_terse.txt"))
    assert result.version == "fio-3.33"
    assert result.details["format"] == "terse"
    assert result.operation("read").mean == 158250
    assert result.operation("read_iops").mean == 39562
    assert result.operation("write").mean == 67804
    assert result.operation("write_iops").mean == 16951


def test_fio_two_jobs_are_summed(fixture_text: Read) -> None:
    result = fio.parse(fixture_text("fio/fio_randrw_4k_numjobs2_json.txt"))
    read = result.operation("read")
    assert read.mean == 49982 + 49771
    assert read.tasks == 2
    assert result.operation("write").mean == 22513 + 22087
    assert result.operation("read_iops").mean == pytest.approx(12495.575221 + 12442.982456)
    assert len(result.details["jobs"]) == 2
    assert (result.details["rw"], result.details["rwmixread"], result.details["numjobs"]) == ("randrw", 70, 2)


def test_fio_group_reporting_counts_numjobs(fixture_text: Read) -> None:
    result = fio.parse(fixture_text("fio/fio_seqwrite_1m_numjobs2_group_json.txt"))
    assert len(result.details["jobs"]) == 1
    write = result.operation("write")
    assert (write.mean, write.tasks) == (2621440, 2)
    assert result.operation("write_iops").mean == 2560.0


def test_fio_client_server_outputs_are_summed_over_clients(fixture_text: Read) -> None:
    result = fio.parse(fixture_text("fio/fio_client_2servers_seqwrite_1m_json.txt"))
    write = result.operation("write")
    assert write.mean == 2340571 + 4096000
    assert write.tasks == 2
    assert result.operation("write_iops").mean == pytest.approx(2285.714286 + 4000.0)
    assert result.details["clients"] == 2
    # fio's own "All clients" entry is kept, not added in
    assert result.details["all_clients"]["write"]["bw"] == 4681142
    assert (result.details["bs"], result.details["direct"]) == ("1m", 1)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("fio/fio_error_bad_option.txt", "fio: failed parsing rw=wrte"),
        ("fio/fio_error_notdir_json.txt", "fio: pid=0, err=20/file:filesetup.c:455, func=fstat, error=Not a directory"),
        ("fio/fio_error_notdir_normal_json.txt", "err=20/file:filesetup.c:455"),
        ("fio/fio_error_notdir_json_stdout_only.json", r"job 'bad' failed with error 20 \(Not a directory\)"),
    ],
)
def test_fio_error_outputs(fixture_text: Read, name: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason) as caught:
        fio.parse(fixture_text(name))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "name", ["fio/fio_local_ext4_seqwrite_1m_pure.json", "fio/phys_tmpfs_fio_randread_4k_qd32.txt"]
)
def test_fio_json_cut_in_the_middle(fixture_text: Read, name: str) -> None:
    text = fixture_text(name)
    cut = text.index('"clat_ns"')
    with pytest.raises(ParseError, match="JSON output is truncated or malformed"):
        fio.parse(text[:cut])


def test_fio_normal_text_alone_is_refused(fixture_text: Read) -> None:
    text = fixture_text("fio/phys_tmpfs_fio_randread_4k_qd32.txt")
    normal_part = text[text.index("\n}\n") + 3 :]
    with pytest.raises(ParseError, match="normal \\(text\\) output is not parsed"):
        fio.parse(normal_part)


def test_fio_empty_and_foreign_outputs(fixture_text: Read) -> None:
    with pytest.raises(ParseError, match="empty"):
        fio.parse("\n")
    with pytest.raises(ParseError, match="not a fio output"):
        fio.parse(fixture_text("mdtest/mdtest_local_ext4_n1000_F_u.txt"))
