"""This machine's mount table, and an unmount that always ends (scripts/lib/common.sh's
``unmount_bounded``): a FUSE mount whose daemon died blocks a plain ``umount`` and every
process that touches it, so each step here is bounded and the last one detaches."""

from __future__ import annotations

import re
from pathlib import Path

from pfslab.lifecycle import log
from pfslab.transport.base import bounded

FUSECTL = Path("/sys/fs/fuse/connections")


def _unescape(field: str) -> str:
    # The kernel writes a space, tab, newline and backslash in a path as \ooo.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mountinfo() -> list[list[str]]:
    """/proc/self/mountinfo, one split line per mount, its mount point (field 5) unescaped."""
    with open("/proc/self/mountinfo") as f:
        rows = [line.split() for line in f]
    for row in rows:
        row[4] = _unescape(row[4])
    return rows


def mount_points() -> list[str]:
    """Every mount point, in the table's order (findmnt's)."""
    return [row[4] for row in mountinfo()]


def mounts_under(root: str) -> list[str]:
    return [f[4] for f in mountinfo() if f[4].startswith(root.rstrip("/") + "/")]


def _fstype(row: list[str]) -> str:
    return row[row.index("-", 6) + 1] if "-" in row[6:] else ""


def fuse_mounts_under(root: str) -> list[tuple[str, str]]:
    """(mount point, fusectl connection id) of the FUSE mounts under ``root``."""
    return [(f[4], f[2].split(":")[1]) for f in mountinfo()
            if f[4].startswith(root.rstrip("/") + "/") and _fstype(f).startswith("fuse")]


def fuse_connection(target: str) -> str:
    """The fusectl connection id of the FUSE mount at ``target`` ('' when it is not FUSE)."""
    for row in mountinfo():
        if row[4] == target:
            return row[2].split(":")[1] if _fstype(row).startswith("fuse") else ""
    return ""


def fuse_abort(*conns: str) -> set[str]:
    """Every request waiting on the FUSE connections ``conns`` fails at once; the ones
    aborted. Without systemd nothing mounts fusectl: it is mounted once for the aborts
    and taken away after."""
    aborted: set[str] = set()
    mounted = False
    try:
        for conn in conns:
            abort = FUSECTL / conn / "abort"
            if not abort.exists() and not mounted and str(FUSECTL) not in mount_points():
                mounted = bounded(["mount", "-t", "fusectl", "fusectl", str(FUSECTL)], 10).ok
            try:
                abort.write_text("1")
            except OSError:
                continue
            aborted.add(conn)
    finally:
        if mounted:
            bounded(["umount", str(FUSECTL)], 10)
    return aborted


def unmount_bounded(target: str, grace: int, tag: str) -> bool:
    """Unmount ``target`` within about ``grace`` seconds a step, whatever the file
    system's state: a plain unmount; then, for FUSE, the connection aborted and a plain
    unmount again; then a lazy detach. Says what it had to force."""
    if target not in mount_points():
        return True
    conn = fuse_connection(target)
    if bounded(["umount", "-c", target], grace).ok:
        return True
    if conn:
        log(tag, f"forced: {target} did not unmount in {grace}s; aborting its FUSE connection {conn}")
        fuse_abort(conn)
    if bounded(["umount", "-c", target], grace).ok:
        return True
    log(tag, f"forced: detaching {target} lazily")
    return bounded(["umount", "-l", "-c", target], grace).ok
