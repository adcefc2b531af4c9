"""Progress of a ReFrame run, a line per test, while ReFrame's whole output is kept.

``make bench`` pipes ReFrame's output through :func:`follow`: every line goes to the
run's ``reframe.out`` unchanged, and the reader sees one line when a test starts and
one when it ends (n/N, test, sweep point, result, elapsed, an estimate of what is
left). When a test is silent for long, a line says it is still running, so nothing
long is silent.
"""

from __future__ import annotations

import os
import re
import select
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from pfslab.workloads import tool_test

_TOTAL = re.compile(r"^\[=+\] Running (\d+) check")
#: A test's name: its class, then its parameters (``%lab=local %workload=ior-n1 %threads=4 ...``).
_NAME = r"(\S+)((?: %\S+=\S+)+)"
_RUN = re.compile(r"^\[ RUN +\] " + _NAME)
_DONE = re.compile(r"^\[ +(OK|FAIL|SKIP|ERROR) +\] \( *(\d+)/(\d+)\) " + _NAME + r"[^\[]*(?:\[(.*)\])?")
_PERF = re.compile(r"^P: (\S+): (\S+ \S+)")
#: ReFrame colours a failed figure even under --nocolor.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_WORDS = {"OK": "ok", "FAIL": "FAIL", "SKIP": "skip", "ERROR": "ERROR"}


def _test_and_case(test: str, params: str) -> str:
    """``IOR local/ior-n1/4``: the tool's test (its class name up to the workload) and the
    case, as lab/workload/point; a log of the kit before its parameters were separate
    names the case itself (``%case=``)."""
    values = dict(p.split("=", 1) for p in params.split(" %")[1:])
    if "case" in values:
        return f"{test} {values['case']}"
    point = values.get("threads") or f"{values.get('nodes')}x{values.get('processes')}"
    return f"{tool_test(test)} {values.get('lab')}/{values.get('workload')}/{point}"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 3600:
        minutes, rest = divmod(seconds, 60)
        return f"{minutes} min {rest:02d} s"
    return f"{seconds / 3600:.1f} h"


@dataclass
class Progress:
    """What has been seen of the run so far; turns ReFrame lines into progress lines."""

    clock: Callable[[], float] = time.monotonic
    total: int = 0
    done: int = 0
    current: str = ""
    started: float = 0.0
    durations: list[float] = field(default_factory=list)  # of the tests that ran (not skipped)
    figures: list[str] = field(default_factory=list)
    last_print: float = 0.0
    pending: str = ""  # the end line of the last test, printed once its figures are read
    reasons: set[str] = field(default_factory=set)  # skip reasons already shown

    def feed(self, line: str) -> list[str]:
        """Progress lines for one line of ReFrame output (often none)."""
        out: list[str] = []
        now = self.clock()
        line = _ANSI.sub("", line)
        perf = _PERF.match(line)
        if perf and self.pending:
            value, _, unit = perf.group(2).partition(" ")
            try:
                value = f"{float(value):.4g}"
            except ValueError:
                pass
            self.figures.append(f"{perf.group(1)} {value} {unit}")
            return out
        out.extend(self.flush())
        if announced := _TOTAL.match(line):
            self.total = int(announced.group(1))
            out.append(f"{self.total} tests to run")
        elif run := _RUN.match(line):
            self.current, self.started = _test_and_case(run.group(1), run.group(2)), now
            out.append(f"({self.done + 1}/{self.total or '?'}) start {self.current}")
        elif end := _DONE.match(line):
            result, n, of, test, params, why = end.groups()
            self.done, self.total = int(n), int(of)
            elapsed = now - self.started if self.current else 0.0
            if result != "SKIP":
                self.durations.append(elapsed)
            self.current = ""
            left = self.total - self.done
            estimate = ""
            if left and self.durations:
                estimate = f"; {left} left, about {_duration(left * sum(self.durations) / len(self.durations))}"
            elif left:
                estimate = f"; {left} left"
            reason = ""
            if why and result == "SKIP":
                # A reason many tests share (a tool missing, the lab down) is said once.
                reason = " (the same reason)" if why in self.reasons else f" ({why})"
                self.reasons.add(why)
            self.pending = f"({n}/{of}) {_WORDS[result]} {_test_and_case(test, params)} in {_duration(elapsed)}{reason}{estimate}"
            if result == "SKIP":
                out.extend(self.flush())
        if out:
            self.last_print = now
        return out

    def flush(self) -> list[str]:
        """The end line of the last test, with its figures, once they are all read."""
        if not self.pending:
            return []
        line = self.pending + (f": {', '.join(self.figures)}" if self.figures else "")
        self.pending, self.figures = "", []
        return [line]

    def heartbeat(self, every: float) -> list[str]:
        """A line when a running test has been silent for ``every`` seconds."""
        now = self.clock()
        if not self.current or now - self.last_print < every:
            return []
        self.last_print = now
        return [f"({self.done + 1}/{self.total or '?'}) still running {self.current}: {_duration(now - self.started)}"]


def follow(fd: int, keep: IO[str], say: Callable[[str], None], every: float = 30.0) -> Progress:
    """Copy what arrives on ``fd`` to ``keep`` line by line, saying progress; returns what it saw.

    Reads the descriptor itself (not a buffered file), so a line is shown when it
    arrives, and a silence is noticed while it lasts.
    """
    progress = Progress()
    progress.last_print = progress.clock()
    buffer = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            for line in progress.heartbeat(every):
                say(line)
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace")
            keep.write(line + "\n")
            for out in progress.feed(line):
                say(out)
        keep.flush()
    if buffer:
        keep.write(buffer.decode(errors="replace"))
    for out in progress.flush():
        say(out)
    return progress
