"""Progress lines of a run, from ReFrame's real output (a quick suite on the local lab)."""

from __future__ import annotations

import os
import re
import threading
import time
from io import StringIO
from pathlib import Path

from pfslab import progress

OUTPUT = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "local-quick-suite-tools" / "reframe.out"


def lines_of(text: str, step: float = 2.0) -> tuple[list[str], progress.Progress]:
    clock = [0.0]

    def tick() -> float:
        return clock[0]

    seen = progress.Progress(clock=tick)
    out: list[str] = []
    for line in text.splitlines():
        clock[0] += step
        out.extend(seen.feed(line))
    out.extend(seen.flush())
    return out, seen


def test_every_test_has_a_start_and_an_end_line_with_n_of_total() -> None:
    text = OUTPUT.read_text()
    total = int(re.search(r"Running (\d+) check", text).group(1))  # type: ignore[union-attr]
    out, seen = lines_of(text)
    starts = [line for line in out if " start " in line]
    ends = [line for line in out if re.match(r"\(\d+/\d+\) (ok|FAIL|skip|ERROR) ", line)]
    assert out[0] == f"{total} tests to run"
    assert len(starts) == len(ends) == total == seen.done
    assert ends[-1].startswith(f"({total}/{total}) ")


def test_an_end_line_has_result_elapsed_figures_and_what_is_left() -> None:
    out, _ = lines_of(OUTPUT.read_text(), step=3.0)
    first_ok = next(line for line in out if re.match(r"\(1/\d+\) ok ", line))
    # e.g. "(1/92) ok IOR local/ior-n1/1 in 3 s; 91 left, about 4 min 33 s: write 52.46 MiB/s, read 192.5 MiB/s"
    assert re.match(r"\(1/(\d+)\) ok \S+ \S+ in \d+ s; (\d+) left, about [\d.]+ (s|min \d+ s|h): \w+ [\d.]+ \S+",
                    first_ok), first_ok
    skip = next(line for line in out if " skip " in line)
    assert "runs on beegfs only" in skip


def test_a_silent_test_gets_a_still_running_line() -> None:
    clock = [0.0]
    seen = progress.Progress(clock=lambda: clock[0])
    seen.feed("[==========] Running 2 check(s)")
    seen.feed("[ RUN      ] Mdtest %case=local/mdtest-empty/2 /abc @local:clients+pfslab")
    clock[0] = 20.0
    assert seen.heartbeat(30.0) == []
    clock[0] = 31.0
    assert seen.heartbeat(30.0) == ["(1/2) still running Mdtest local/mdtest-empty/2: 31 s"]
    clock[0] = 45.0
    assert seen.heartbeat(30.0) == []  # not again before another 30 s of silence


def test_follow_keeps_every_line_and_shows_a_line_as_it_arrives() -> None:
    read_fd, write_fd = os.pipe()
    kept = StringIO()
    said: list[tuple[float, str]] = []
    text = OUTPUT.read_text().splitlines(keepends=True)
    start = time.monotonic()

    def writer() -> None:
        with os.fdopen(write_fd, "w") as out:
            for line in text[:40]:
                out.write(line)
            out.flush()
            time.sleep(1.5)  # a test runs: its end line must not wait for more output
            for line in text[40:]:
                out.write(line)

    thread = threading.Thread(target=writer)
    thread.start()
    progress.follow(read_fd, kept, lambda line: said.append((time.monotonic() - start, line)), every=30.0)
    thread.join()
    os.close(read_fd)
    assert kept.getvalue() == "".join(text)
    early = [line for at, line in said if at < 1.4]
    assert any(" ok " in line for line in early), "lines that had arrived waited for later output"


def test_a_failed_figure_is_shown_though_reframe_colours_it() -> None:
    out, _ = lines_of("\n".join([
        "[==========] Running 1 check(s)",
        "[ RUN      ] Fio %case=local/fio-rand4k/2 /6c609c4b @local:clients+pfslab",
        "[     FAIL ] (1/1) Fio %case=local/fio-rand4k/2 /6c609c4b @local:clients+pfslab",
        "\x1b[31mP: write_iops: 10.331944 IOPS (r:540.612517, l:-0.8, u:None)\x1b[0m",
        "==> test failed during 'performance': test staged in '/x'",
    ]))
    assert out[-1] == "(1/1) FAIL Fio local/fio-rand4k/2 in 2 s: write_iops 10.33 IOPS"


def test_a_skip_reason_many_tests_share_is_said_once() -> None:
    out, _ = lines_of(OUTPUT.read_text())
    beegfs = [line for line in out if "beegfs-medium/ior-n1" in line and " skip " in line]
    assert "(workload beegfs-medium/ior-n1 runs on beegfs only; lab local is cephfs)" in beegfs[0]
    assert all("(the same reason)" in line for line in beegfs[1:]) and len(beegfs) == 3


def test_a_test_with_separate_parameters_is_shown_as_its_tool_and_case() -> None:
    """The test's name since its parameters are separate: the tool and lab/workload/point."""
    out, _ = lines_of("\n".join([
        "[==========] Running 2 check(s)",
        "[ RUN      ] Fio_fio_rand4k %lab=local %workload=fio-rand4k %threads=2 %mode=quick /6c609c4b @local:clients+pfslab",
        "[       OK ] (1/2) Fio_fio_rand4k %lab=local %workload=fio-rand4k %threads=2 %mode=quick /6c609c4b "
        "@local:clients+pfslab",
        "P: write_iops: 10.331944 IOPS (r:0, l:None, u:None)",
        "[ RUN      ] IOR_x %lab=cephfs-stria %workload=x %nodes=8 %processes=2 %mode=quick "
        "%.scratch_root=/a /7c609c4b @s:clients+pfslab",
        "[     SKIP ] (2/2) IOR_x %lab=cephfs-stria %workload=x %nodes=8 %processes=2 %mode=quick "
        "%.scratch_root=/a /7c609c4b @s:clients+pfslab [lab cephfs-stria is not up]",
    ]))
    assert "(1/2) start Fio local/fio-rand4k/2" in out
    assert any(line.startswith("(1/2) ok Fio local/fio-rand4k/2 in ") and "write_iops 10.33 IOPS" in line for line in out), out
    assert "(2/2) start IOR cephfs-stria/x/8x2" in out
    assert any(line.startswith("(2/2) skip IOR cephfs-stria/x/8x2 in ") and "(lab cephfs-stria is not up)" in line
               for line in out), out
