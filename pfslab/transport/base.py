"""The transport interface and what its implementations share (see pfslab/transport/__init__.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

#: The status of a command that did not finish in its time (timeout(1)'s, bounded's).
TIMED_OUT = 124


@dataclass(frozen=True)
class Result:
    """A finished (or abandoned) command: its status and its output (stdout and stderr)."""

    rc: int
    output: str

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def last_line(self) -> str:
        lines = [ln for ln in self.output.splitlines() if ln.strip()]
        return lines[-1] if lines else ""


class Transport(Protocol):
    """Run a command on a node, copy a file to it, stream a command's output."""

    def argv(self, node: str, command: Sequence[str]) -> list[str]:
        """The command line, on this machine, that runs ``command`` on ``node``."""

    def role_command(self, family: str, *args: str) -> list[str]:
        """The command, on a node, that runs a step of a role script with the node's config."""

    def run(self, node: str, command: Sequence[str], timeout: float) -> Result:
        ...

    def run_shown(self, node: str, command: Sequence[str], timeout: float) -> Result:
        """:meth:`run`, the command's output going to stderr as it comes (:func:`bounded_shown`)."""

    def copy(self, node: str, source: Path, destination: str, timeout: float) -> Result:
        ...

    def stream(self, node: str, command: Sequence[str]) -> Iterator[str]:
        ...


def bounded(argv: Sequence[str], timeout: float, env: dict[str, str] | None = None) -> Result:
    """Run ``argv`` for at most ``timeout`` seconds; :data:`TIMED_OUT` when it did not end.

    Like scripts/lib/common.sh's ``bounded``, a command that does not end is killed and
    then left alone: a process stuck in a FUSE request ignores SIGKILL until the request
    ends, and waiting for it would hang the caller. Output goes to a file, not a pipe,
    so nothing here blocks on a pipe such a process still holds."""
    with tempfile.TemporaryFile(mode="w+b") as out:
        try:
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)
        except OSError as err:
            return Result(127, f"{argv[0]}: {err.strerror}")
        rc = _wait_bounded(proc, timeout)
        out.seek(0)
        return Result(rc, out.read().decode(errors="replace"))


def bounded_shown(argv: Sequence[str], timeout: float) -> Result:
    """:func:`bounded`, its output (stdout and stderr) going to this process's stderr as
    it comes rather than kept: a step that runs for minutes (a role's ``up``) shows its
    progress, and a log following it sees each line when it is written. The result
    holds the status only."""
    sys.stderr.flush()
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(),
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as err:
        return Result(127, f"{argv[0]}: {err.strerror}")
    return Result(_wait_bounded(proc, timeout), "")


def _wait_bounded(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """The status of ``proc``, or :data:`TIMED_OUT` once its process group was killed at
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None:
            if time.monotonic() >= deadline:
                _kill_group(proc.pid)
                return TIMED_OUT
            time.sleep(0.05)
    except BaseException:
        # The caller is ending (a signal): its command must not outlive it.
        _kill_group(proc.pid)
        raise
    return proc.returncode


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stream_lines(argv: Sequence[str]) -> Iterator[str]:
    """The lines ``argv`` prints (stdout and stderr), as they come; ends with it."""
    with subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        assert proc.stdout is not None
        yield from (line.rstrip("\n") for line in proc.stdout)
