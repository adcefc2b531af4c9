"""IO500 parser against a real io500-sc25 quick run (tests/fixtures/io500, see its README).

Expected figures were read by hand from the fixture files. Broken runs are the real
output cut or changed here in code, each change named in its test.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pfslab.tools import io500, parse_text
from pfslab.results import ParseError

Read = Callable[[str], str]
STDOUT = "io500/io500-sc25_quick_np2_stdout.txt"
RESULT_TXT = "io500/io500-sc25_quick_np2_result.txt"
SUMMARY = "io500/io500-sc25_quick_np2_result_summary.txt"

#: Figures of the stdout fixture read by hand: operation -> (mean, unit).
FIGURES: dict[str, tuple[float, str]] = {
    "ior_easy_write": (0.583628, "GiB/s"),
    "mdtest_hard_delete": (0.879912, "kIOPS"),
    "find": (197.2979, "kIOPS"),
    "score_bw": (0.674718, "GiB/s"),
    "score_md": (43.084674, "kIOPS"),
    "score": (5.39166, "score"),
}


def test_stdout_gives_every_phase_and_the_score(fixture_text: Read) -> None:
    result = parse_text("io500", fixture_text(STDOUT))
    assert (result.tool, result.version, result.details["mode"]) == ("io500", "io500-sc25", "standard")
    assert [name for name in result.operations if not name.startswith("score")] == [
        "ior_easy_write", "mdtest_easy_write", "ior_hard_write", "mdtest_hard_write", "find",
        "ior_easy_read", "mdtest_easy_stat", "ior_hard_read", "mdtest_hard_stat",
        "mdtest_easy_delete", "mdtest_hard_read", "mdtest_hard_delete", "ior_rnd4k_easy_read",
    ]
    assert {name: (result.operation(name).mean, result.operation(name).unit) for name in FIGURES} == FIGURES
    phases = result.details["phases"]
    assert phases["mdtest-hard-delete"]["seconds"] == 45.422
    assert phases["ior-easy-write"]["invalid"] is True and phases["find"]["invalid"] is False
    assert phases["ior-rnd4K-easy-read"]["scored"] is False and phases["find"]["scored"] is True


def test_quick_run_is_complete_but_not_list_valid(fixture_text: Read) -> None:
    """The 3 s stonewall breaks the list's rules and only those: a figure, marked."""
    result = io500.parse(fixture_text(STDOUT))
    assert result.details["list_valid"] is False
    assert result.details["invalid_reasons"] == [io500.SHORT_STONEWALL, io500.SHORT_RUNTIME]


def test_result_txt_gives_the_same_figures(fixture_text: Read) -> None:
    stdout = io500.parse(fixture_text(STDOUT))
    ini = io500.parse(fixture_text(RESULT_TXT))
    assert ini.details["procs"] == 2
    assert {k: v.mean for k, v in ini.operations.items()} == {k: v.mean for k, v in stdout.operations.items()}
    assert ini.details["list_valid"] is False
    assert ini.details["phases"]["ior-easy-write"]["command"].startswith("./ior --dataPacketType=timestamp")
    assert ini.details["phases"]["mdtest-hard-delete"]["seconds"] == 45.4218


def test_result_summary_without_reasons_is_refused(fixture_text: Read) -> None:
    """result_summary.txt flags [INVALID] but says not why: it cannot tell a quick run
    from a broken one, so it is not read as one."""
    with pytest.raises(ParseError, match=r"marks ior-easy-write, mdtest-easy-write, .* \[INVALID\] and gives no reason$"):
        io500.parse(fixture_text(SUMMARY))


def _lines_without(text: str, part: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if part not in line)


#: Real outputs changed in code, each change named: (fixture, change, the error it must give).
BROKEN: dict[str, tuple[str, Callable[[str], str], str]] = {
    # The real stdout cut after mdtest-hard-read: no score, no figure.
    "truncated": (STDOUT, lambda t: t[: t.index("[RESULT]   mdtest-hard-delete")],
                  r"^io500 output is truncated: no '\[SCORE \]' line"),
    # The real stdout without its find line (a phase that did not run).
    "missing phase": (STDOUT, lambda t: _lines_without(t, " find "),
                      r"lacks the phases find \(every standard phase must run\)$"),
    # The real stdout with the IOR error reason src/phase_ior.c prints added: invalid, never a figure.
    "other invalid reason": (STDOUT, lambda t: t.replace(
        "[RESULT]       ior-easy-write",
        "ERROR INVALID (src/phase_ior.c:21) Errors (3) occured during phase in IOR. This invalidates your run.\n"
        "[RESULT]       ior-easy-write", 1), r"^io500 run is invalid: Errors \(3\) occured during phase in IOR"),
    # A write phase that ran out of data before its stonewall (src/phase_ior.c:24) breaks the stonewall.
    "stonewall not hit": (RESULT_TXT, lambda t: t.replace(
        "throughput-stonewall = 0.95",
        "; ERROR INVALID Write phase needed 2.100000s instead of stonewall 3s. Stonewall was hit at 2.1s\n"
        "throughput-stonewall = 0.95", 1), r"^io500 run is invalid: Write phase needed 2.100000s instead of stonewall 3s"),
    # With the list's stonewall, a write phase under 300 s is no quick run: invalid.
    "short runtime without short stonewall": (STDOUT, lambda t: _lines_without(t, "phase_dbg.c"),
                                              r"Runtime is smaller than expected minimum runtime with the list's 300 s stonewall$"),
    "zero score phase": (STDOUT, lambda t: t.replace("197.297900 kIOPS", "0.000000 kIOPS"),
                         r"^io500 phase find scored 0.0: it did not run"),
    "mpi abort": (STDOUT, lambda t: t + "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\n",
                  r"^io500 reported an error: MPI_ABORT was invoked on rank 1"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_run_is_refused(fixture_text: Read, case: str) -> None:
    fixture, change, message = BROKEN[case]
    text = fixture_text(fixture)
    assert change(text) != text, f"{case}: the change did not apply to {fixture}"
    with pytest.raises(ParseError, match=message):
        io500.parse(change(text))


@pytest.mark.parametrize("text, message", [
    ("", "io500 output is empty"),
    ("IOR-4.0.0: MPI Coordinated Test of Parallel I/O\n", "not an IO500 output"),
    ("[run]\nprocs = 2\n", "not an IO500 result.txt"),
])
def test_not_io500(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        io500.parse(text)


def test_real_run_that_ran_out_before_its_stonewall_is_refused(fixture_text: Read) -> None:
    """A real quick run whose sizes ended the writes before the 5 s stonewall (not a
    changed output): IO500's own reasons say so, and it is no figure."""
    with pytest.raises(ParseError, match=r"^io500 run is invalid: Write phase needed 3.733580s instead of stonewall 5s"):
        io500.parse(fixture_text("io500/io500-sc25_kit_quick_np2_stonewall_not_hit.txt"))
