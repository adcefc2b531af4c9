"""One command at a time changes or measures a lab (lab-up, lab-down, calibrate, bench): the
lab's lock, build/<lab>/lock, the same file and the same flock(2) as scripts/lib/common.sh's
lock_lab, so a bench in bash and a lab-up here exclude each other.

The lock is an open file description held by this process: its file descriptor is not
inherited (Python's descriptors are close-on-exec), so the daemons a command starts never
hold it, and a command that died (even by SIGKILL) holds nothing: a stale lock never
blocks. The holder's line, "PID HH:MM:SS WHAT", names it in the refusal others get."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from pfslab.lifecycle import Refusal

#: Seconds to wait for the lock: the holder of a command that just ended lets go within
#: its poll (lock_lab's 0.2 s), and a command run right after it waits for that.
WAIT_S = 2.0

#: The descriptors this process holds its labs' locks by (kept open until it ends).
_held: dict[Path, int] = {}


def lock_file(build: Path, lab: str) -> Path:
    return build / lab / "lock"


def take(build: Path, lab: str, what: str, wait: float = WAIT_S) -> bool:
    """Take lab ``lab``'s lock for this process as ``what``; False when another command holds it."""
    path = lock_file(build, lab)
    if path in _held:
        return True
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_RDWR without O_TRUNC: the holder's line stays readable while it runs.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return False
            time.sleep(0.05)
    line = f"{os.getpid()} {time.strftime('%H:%M:%S', time.gmtime())} {what}\n".encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, line, 0)
    _held[path] = fd
    return True


def holder(build: Path, lab: str) -> str:
    """"WHAT (pid PID, since HH:MM:SS UTC)" of the command holding the lab's lock."""
    try:
        words = lock_file(build, lab).read_text().split(maxsplit=2)
    except OSError:
        words = []
    pid, since, what = (words + ["", "", ""])[:3]
    return f"{what.strip() or 'another command'} (pid {pid or '?'}, since {since or '?'} UTC)"


def take_or_refuse(build: Path, lab: str, what: str) -> None:
    """:func:`take`, or one line naming the command that holds the lab."""
    if not take(build, lab, what):
        raise Refusal(f"lab {lab} is busy: its {holder(build, lab)} is still running; wait for it to end "
                      "(or end it), then run this again")
