"""pfslab/lifecycle/mounts.py's FUSE abort (the watchdog's and a bounded unmount's): each
connection's abort written, fusectl mounted once for them when nothing has, and taken
away after."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pfslab.lifecycle import mounts
from pfslab.transport import Result


def _fake_fusectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mounted: bool) -> list[list[str]]:
    ctl = tmp_path / "connections"
    ctl.mkdir()
    calls: list[list[str]] = []

    def fake_bounded(argv: Sequence[str], timeout: float, env: dict[str, str] | None = None) -> Result:
        calls.append(list(argv))
        if argv[:2] == ["mount", "-t"]:
            for conn in ("41", "42"):  # what the kernel shows once fusectl is mounted
                (ctl / conn).mkdir()
                (ctl / conn / "abort").write_text("")
        return Result(0, "")

    monkeypatch.setattr(mounts, "FUSECTL", ctl)
    monkeypatch.setattr(mounts, "bounded", fake_bounded)
    monkeypatch.setattr(mounts, "mount_points", lambda: [str(ctl)] if mounted else ["/"])
    return calls


def test_fusectl_is_mounted_once_for_every_abort_and_taken_away_after(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_fusectl(tmp_path, monkeypatch, mounted=False)
    assert mounts.fuse_abort("41", "42") == {"41", "42"}
    ctl = tmp_path / "connections"
    assert (ctl / "41" / "abort").read_text() == "1"
    assert (ctl / "42" / "abort").read_text() == "1"
    assert calls == [["mount", "-t", "fusectl", "fusectl", str(ctl)], ["umount", str(ctl)]]


def test_a_connection_that_is_gone_is_not_counted_as_aborted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_fusectl(tmp_path, monkeypatch, mounted=True)
    (tmp_path / "connections" / "41").mkdir()
    (tmp_path / "connections" / "41" / "abort").write_text("")
    # fusectl already mounted (by systemd): nothing mounted or unmounted here.
    assert mounts.fuse_abort("41", "99") == {"41"}
    assert calls == []
