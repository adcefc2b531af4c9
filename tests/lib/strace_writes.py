"""Which files a traced command wrote outside the places it may write.

    python3 tests/lib/strace_writes.py TRACE --allow DIR [--allow DIR ...]

TRACE is the output of ``strace -f -y -e trace=%file,%process -o TRACE CMD`` (strace
6: ``-y`` prints the path of every descriptor, AT_FDCWD included, so relative paths of
the *at calls resolve; the old calls without a directory descriptor resolve against the
process's working directory, followed through chdir and fork). A write is a successful
open for writing, creating or truncating, and every successful mkdir, mknod, rmdir,
unlink, rename (both names), link and symlink (the new name), truncate, chmod, chown,
utime and xattr change. Each one outside every DIR (the path itself or below it) is
printed, ``<call> <path>``; exit 1 when there is any. Failed attempts wrote nothing;
with ``--attempts`` they are printed too, prefixed ``failed``, and do not change the exit.
A descriptor that is no file (``pipe:[..]``, ``socket:[..]``: bash's ``>(...)`` opens
/dev/fd/N) is not a write of a file. ``--temporary DIR``: writes there are allowed
when the path is gone by the time of the check (mktemp's files, removed by the same
commands); one still there is printed ``left <path>``. ``--own-proc``: writes to the
traced processes' own /proc entries (/proc/self, /proc/<pid> of a traced pid: kernel
settings of that process, no stored file) are allowed.

Only the standard library: the lab test runs it with the system's python3.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

#: Calls that write, and which of their path arguments are written (0-based, counting
#: path arguments only: a descriptor argument goes with the path after it).
WRITING_CALLS: dict[str, tuple[int, ...]] = {
    "mkdir": (0,), "mkdirat": (0,), "mknod": (0,), "mknodat": (0,), "rmdir": (0,),
    "unlink": (0,), "unlinkat": (0,), "truncate": (0,),
    "rename": (0, 1), "renameat": (0, 1), "renameat2": (0, 1),
    "link": (1,), "linkat": (1,), "symlink": (1,), "symlinkat": (1,),
    "chmod": (0,), "fchmodat": (0,), "fchmodat2": (0,), "chown": (0,), "lchown": (0,), "fchownat": (0,),
    "utime": (0,), "utimes": (0,), "futimesat": (0,), "utimensat": (0,),
    "setxattr": (0,), "lsetxattr": (0,), "removexattr": (0,), "lremovexattr": (0,),
}
OPEN_CALLS = frozenset({"open", "openat", "openat2", "creat"})
WRITE_FLAGS = re.compile(r"\bO_(?:WRONLY|RDWR|CREAT|TRUNC)\b")
FORKS = frozenset({"clone", "clone3", "fork", "vfork"})

LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<call>[a-z0-9_]+)\((?P<args>.*)\)\s+=\s+(?P<ret>-?\d+|\?)(?P<rest>.*)$")
RESUMED = re.compile(r"^(?P<pid>\d+)\s+<\.\.\. (?P<call>[a-z0-9_]+) resumed>(?P<args>.*)\)\s+=\s+(?P<ret>-?\d+|\?)(?P<rest>.*)$")
UNFINISHED = re.compile(r"^(?P<pid>\d+)\s+(?P<call>[a-z0-9_]+)\((?P<args>.*) <unfinished \.\.\.>$")
#: A descriptor as -y prints it: AT_FDCWD</dir> or 3</path>.
FD = re.compile(r"^(?:AT_FDCWD|-?\d+)<(?P<path>[^>]*)>$")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Write:
    call: str
    path: str
    ok: bool
    pid: str = ""


def _split_args(text: str) -> list[str]:
    """Top-level arguments of a decoded call (commas inside strings, {}, [] and <> kept)."""
    out, depth, cur, quoted, escaped = [], 0, [], False, False
    for ch in text:
        if quoted:
            cur.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
            continue
        if ch == '"':
            quoted = True
        elif ch in "{[<(":
            depth += 1
        elif ch in "}]>)":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if cur:
        out.append("".join(cur).strip())
    return out


def _unquote(arg: str) -> str | None:
    m = STRING.fullmatch(arg.rstrip("."))
    if m is None:
        return None
    return m.group(1).encode().decode("unicode_escape", errors="replace")


def _paths(args: list[str], cwd: str) -> list[str]:
    """Every path argument resolved: a string, after its directory descriptor if any."""
    out, base = [], None
    for arg in args:
        fd = FD.match(arg)
        if fd:
            base = fd.group("path")
            continue
        text = _unquote(arg)
        if text is None:
            if arg == "NULL" and base is not None:  # utimensat(fd, NULL, ...): the descriptor's file
                out.append(base)
            base = None
            continue
        out.append(os.path.normpath(os.path.join(base or cwd, text)))
        base = None
    return out


def writes(lines: Iterable[str], start_cwd: str) -> Iterator[Write]:
    """The writes in a trace, in order."""
    cwd: dict[str, str] = {}
    pending: dict[str, str] = {}  # pid -> the arguments of its unfinished call
    first: str | None = None
    for raw in lines:
        line = raw.rstrip("\n")
        m = UNFINISHED.match(line)
        if m:
            pending[m.group("pid")] = m.group("args")
            continue
        m = LINE.match(line)
        args_text = None
        if m is None:
            m = RESUMED.match(line)
            if m is None:
                continue
            args_text = pending.pop(m.group("pid"), "") + m.group("args")
        pid, call, ret, rest = m.group("pid"), m.group("call"), m.group("ret"), m.group("rest")
        args_text = m.group("args") if args_text is None else args_text
        first = first or pid
        here = cwd.get(pid, start_cwd if pid == first else cwd.get(first, start_cwd))
        args = _split_args(args_text)
        for arg in args:  # the kernel's own view of the working directory, when -y printed it
            fd = FD.match(arg)
            if fd and arg.startswith("AT_FDCWD"):
                here = cwd[pid] = fd.group("path")
        ok = ret != "?" and int(ret) >= 0
        if call in FORKS and ok:
            cwd[ret] = here
            continue
        if call == "chdir" and ok:
            cwd[pid] = _paths(args, here)[0]
            continue
        if call == "fchdir" and ok:
            fd = FD.match(args[0])
            if fd:
                cwd[pid] = fd.group("path")
            continue
        if call in OPEN_CALLS:
            if call != "creat" and not WRITE_FLAGS.search(args_text):
                continue
            returned = re.match(r"^<(?P<path>[^>]*)>", rest.strip()) if ok else None
            paths = _paths(args, here)
            path = returned.group("path") if returned else (paths[0] if paths else "?")
            if path.startswith("/"):
                yield Write(call, path, ok, pid)
        elif call in WRITING_CALLS:
            paths = _paths(args, here)
            for i in WRITING_CALLS[call]:
                if i < len(paths):
                    yield Write(call, paths[i], ok, pid)


def inside(path: str, allowed: Iterable[str]) -> bool:
    return any(path == a or path.startswith(a.rstrip("/") + "/") for a in allowed)


def own_proc(path: str, pids: set[str]) -> bool:
    m = re.match(r"^/proc/(self|thread-self|\d+)(/|$)", path)
    return m is not None and (m.group(1) in ("self", "thread-self") or m.group(1) in pids)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--allow", action="append", default=[], help="a directory or file that may be written")
    p.add_argument("--cwd", default=os.getcwd(), help="the traced command's working directory")
    p.add_argument("--attempts", action="store_true", help="print failed attempts outside too")
    p.add_argument("--temporary", action="append", default=[], help="a directory for files the commands remove")
    p.add_argument("--own-proc", action="store_true", help="allow the traced processes' own /proc entries")
    args = p.parse_args(argv)
    allowed = [os.path.normpath(a) for a in args.allow]
    temporary = [os.path.normpath(a) for a in args.temporary]
    with open(args.trace, errors="replace") as handle:
        lines = handle.read().splitlines()
    pids = {line.split(maxsplit=1)[0] for line in lines if line[:1].isdigit()}
    bad, left = 0, set[str]()
    for w in writes(lines, args.cwd):
        if inside(w.path, allowed) or (args.own_proc and own_proc(w.path, pids)):
            continue
        if inside(w.path, temporary):
            if w.ok and os.path.lexists(w.path) and w.path not in left:
                left.add(w.path)
                bad += 1
                print(f"left {w.path}")
            continue
        if w.ok:
            bad += 1
            print(f"{w.call} {w.path}")
        elif args.attempts:
            print(f"failed {w.call} {w.path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
