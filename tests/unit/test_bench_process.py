"""What pfslab bench does in its own process instead of starting the CLI again: the
watchdog, forked from it, and the local lab's health check before a run."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from pfslab import registry
from pfslab.errors import KitError
from pfslab.lifecycle import bench, status
from pfslab.lifecycle import watchdog as watchdog_module


def _wait_for(path: Path, text: str) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.is_file() and text in path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never reached {path}")


def test_watchdog_runs_forked_with_this_pid_and_its_lines_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capfd: pytest.CaptureFixture[str]) -> None:
    def fake_watchdog(args: Sequence[str]) -> int:
        # The child's lines go to stderr, which the run keeps in watchdog.log.
        print(f"[watchdog] watching {' '.join(args)} from {os.getpid()}", file=sys.stderr, flush=True)
        signal.pause()
        return 0

    monkeypatch.setattr(watchdog_module, "watchdog", fake_watchdog)
    monkeypatch.setenv("PFSLAB_WATCHDOG_INTERVAL", "7")
    dog = bench.Watchdog("lab1", tmp_path)
    try:
        text = _wait_for(tmp_path / "watchdog.log", "watching")
        assert f"watching lab1 {tmp_path} {os.getpid()} 7 from {dog.pid}" in text
        assert dog.pid != os.getpid()
    finally:
        dog.stop()
    with pytest.raises(ChildProcessError):
        os.waitpid(dog.pid, os.WNOHANG)  # reaped by stop()
    assert "watching lab1" in capfd.readouterr().err


def test_watchdog_child_that_fails_ends_itself_and_never_returns_into_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_watchdog(args: Sequence[str]) -> int:
        raise RuntimeError("boom in the watchdog")

    monkeypatch.setattr(watchdog_module, "watchdog", broken_watchdog)
    me = os.getpid()
    dog = bench.Watchdog("lab1", tmp_path)
    # Had the child returned from the constructor, it would be here too, as another pid.
    assert os.getpid() == me
    text = _wait_for(tmp_path / "watchdog.log", "boom in the watchdog")
    assert "RuntimeError" in text
    _, code = os.waitpid(dog.pid, 0)
    assert os.waitstatus_to_exitcode(code) == 2
    dog.copier.join(timeout=5)


def test_watchdog_child_holds_none_of_the_runs_descriptors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The lab's lock is a descriptor of the run: a watchdog outliving a killed run must
    # not keep the lab locked.
    def listing_watchdog(args: Sequence[str]) -> int:
        print("fds " + " ".join(sorted(os.listdir("/proc/self/fd"), key=int)), file=sys.stderr, flush=True)
        return 0

    monkeypatch.setattr(watchdog_module, "watchdog", listing_watchdog)
    with open(tmp_path / "lock", "w") as lock:
        lock_fd = lock.fileno()
        dog = bench.Watchdog("lab1", tmp_path)
        try:
            text = _wait_for(tmp_path / "watchdog.log", "fds ")
        finally:
            dog.stop()
    fds = next(line for line in text.splitlines() if line.startswith("fds ")).split()[1:]
    assert str(lock_fd) not in fds
    assert {"0", "1", "2"} <= set(fds)


def _inventory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    (tmp_path / "lab1").mkdir()
    (tmp_path / "lab1" / "inventory.json").write_text(f'{{"target": "{target}", "nodes": []}}')
    monkeypatch.setenv("PFSLAB_BUILD", str(tmp_path))


def test_local_lab_not_serving_is_refused_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = next(t for t in registry.targets().values() if t.namespaces)
    _inventory(tmp_path, monkeypatch, local.target)
    asked: list[str] = []

    def failing(lab: str, show: bool = True) -> int:
        asked.append(lab)
        assert not show
        return 1

    monkeypatch.setattr(status, "status", failing)
    with pytest.raises(KitError, match="lab lab1 is not healthy; 'make lab-status' shows why"):
        bench.check_serving("lab1")
    assert asked == ["lab1"]


def test_remote_lab_is_not_asked_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = next(t for t in registry.targets().values() if not t.namespaces)
    _inventory(tmp_path, monkeypatch, remote.target)
    monkeypatch.setattr(status, "status", lambda lab, show=True: pytest.fail("a remote lab's health is not asked here"))
    bench.check_serving("lab1")
