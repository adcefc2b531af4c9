"""One command at a time changes or measures a lab: the lab's lock, build/<lab>/lock.

The same lock as scripts/lib/common.sh's ``lock_lab`` (flock(2) on the same file, the
holder's line "PID HH:MM:SS WHAT" in it), so a bench taken here and a lab-down taken in
the shell exclude each other. Here the lock is held on a descriptor of this process, not
inherited by what it starts (Python's descriptors are close-on-exec, and the run's forked
watchdog closes its copy): it is let go when the process ends, even by SIGKILL."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from pfslab import KIT_ROOT

#: A command that just ended lets go of the lock within a moment (the shell's holder
#: polls every 0.2 s): one run right after it waits this long rather than being refused.
WAIT_S = 2.0

#: Descriptors of the locks this process holds, kept open for its life.
_HELD: dict[str, int] = {}


def lock_path(lab: str) -> Path:
    # Where scripts/lib/common.sh's lock_lab takes it: the checkout's build/, whatever
    # PFSLAB_BUILD says.
    return KIT_ROOT / "build" / lab / "lock"


def _flock_within(fd: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def acquire(lab: str, what: str, wait_s: float = WAIT_S) -> bool:
    """Take lab LAB's lock for this process's life, as WHAT (named in others' refusals);
    False when another command holds it."""
    if lab in _HELD:
        return True
    path = lock_path(lab)
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_RDWR without O_TRUNC: the holder's line stays readable until the lock is ours.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    if not _flock_within(fd, wait_s):
        os.close(fd)
        return False
    line = f"{os.getpid()} {time.strftime('%H:%M:%S', time.gmtime())} {what}\n".encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, line, 0)
    _HELD[lab] = fd
    return True


def release(lab: str) -> None:
    fd = _HELD.pop(lab, None)
    if fd is not None:
        os.close(fd)


def holder(lab: str) -> str:
    """"WHAT (pid PID, since HH:MM:SS UTC)" of the command holding the lock."""
    try:
        words = lock_path(lab).read_text().split(maxsplit=2)
    except OSError:
        words = []
    pid, since, what = (words + ["", "", ""])[:3]
    return f"{what.strip() or 'another command'} (pid {pid or '?'}, since {since or '?'} UTC)"


def busy(lab: str) -> str:
    """The one-line refusal of a command that found the lab locked."""
    return f"lab {lab} is busy: its {holder(lab)} is still running; wait for it to end (or end it), then run this again"


def unlocked(lab: str, wait_s: float = WAIT_S) -> bool:
    """Whether the lock is free now (taken and let go at once): a command that hands the
    lab to a process it starts (a detached run, which takes the lock itself) asks first."""
    path = lock_path(lab)
    if not path.exists():
        return True
    fd = os.open(path, os.O_RDWR)
    try:
        return _flock_within(fd, wait_s)
    finally:
        os.close(fd)
