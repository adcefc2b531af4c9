"""The job prelude's steps, run for real by sh: a tool that fails to start is tried
again (its own message for that, never any failure), and nothing of a failed try is lost."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pfslab.rfm import job_prelude
from pfslab.tools.iozone import START_FAILURE as IOZONE_START_FAILURE

# IOzone's own lines when the master's connection to a child is refused (a quick suite
# on the local lab, 2 children per client), exit 25.
REFUSED = "Throughput test with 4 processes\nMaster: connect failed\n: Connection refused\nError 22\n"


def run_job(tmp_path: Path, transient: str, command: str) -> tuple[int, str]:
    lines = [*job_prelude(), f"pfslab_transient='{transient}'", f"pfslab_step 1 {tmp_path}/step1.out '{command}'",
             'exit "$pfslab_status"']
    script = tmp_path / "job.sh"
    script.write_text("\n".join(lines) + "\n")
    done = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    return done.returncode, done.stderr


def flaky_tool(tmp_path: Path, failures: int, message: str = REFUSED) -> str:
    """A tool that prints ``message`` and exits 25 the first ``failures`` times."""
    (tmp_path / "message").write_text(message)
    tool = tmp_path / "tool"
    tool.write_text(
        "#!/bin/sh\n"
        f"n=$(cat {tmp_path}/count 2>/dev/null || echo 0); echo $((n + 1)) >{tmp_path}/count\n"
        f"if [ \"$n\" -lt {failures} ]; then cat {tmp_path}/message; exit 25; fi\n"
        "echo 'Children see throughput for 4 initial writers = 1000.00 kB/sec'\n"
    )
    tool.chmod(0o755)
    return str(tool)


def test_a_tool_that_failed_to_start_is_tried_again_and_the_failed_output_is_kept(tmp_path: Path) -> None:
    status, out = run_job(tmp_path, IOZONE_START_FAILURE, flaky_tool(tmp_path, 1))
    assert status == 0, out
    assert "try 1 did not start (exit 25: Master: connect failed)" in out
    assert (tmp_path / "step1.out.try1").read_text() == REFUSED
    assert "initial writers" in (tmp_path / "step1.out").read_text()
    assert (tmp_path / "count").read_text().strip() == "2"


def test_three_failed_starts_fail_the_step_with_the_tool_status(tmp_path: Path) -> None:
    status, out = run_job(tmp_path, IOZONE_START_FAILURE, flaky_tool(tmp_path, 5))
    assert status == 25, out
    assert (tmp_path / "count").read_text().strip() == "3"
    assert "pfslab: step 1 exit status 25" in out
    assert (tmp_path / "step1.out.try2").exists() and not (tmp_path / "step1.out.try3").exists()


def test_any_other_failure_is_not_tried_again(tmp_path: Path) -> None:
    status, out = run_job(tmp_path, IOZONE_START_FAILURE, flaky_tool(tmp_path, 1, "Can not open temp file: x\n"))
    assert status == 25, out
    assert (tmp_path / "count").read_text().strip() == "1"
    assert "did not start" not in out


def test_a_step_without_a_start_failure_pattern_is_never_tried_again(tmp_path: Path) -> None:
    status, _ = run_job(tmp_path, "", flaky_tool(tmp_path, 1))
    assert status == 25
    assert (tmp_path / "count").read_text().strip() == "1"
