"""The lab test's write checker (tests/lib/strace_writes.py): writes found in strace's
output, relative paths resolved, failed attempts told apart; then on a real trace."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

CHECKER = Path(__file__).resolve().parents[1] / "lib" / "strace_writes.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("strace_writes", CHECKER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


sw = load()

# Lines as strace 6.1 -f -y printed them for: mkdir -p /tmp/sh-x && cd /tmp/sh-x && touch rel
# && mv rel rel2 && (cd .. && rm sh-x/rel2), cut down.
TRACE = """\
2214  openat(AT_FDCWD</tmp>, "/proc/filesystems", O_RDONLY|O_CLOEXEC) = 3</proc/filesystems>
2214  mkdir("/tmp", 0777)               = -1 EEXIST (File exists)
2214  chdir("/tmp")                     = 0
2214  mkdir("sh-x", 0777)               = 0
2213  chdir("/tmp/sh-x")                = 0
2213  vfork( <unfinished ...>
2213  <... vfork resumed>)              = 2216
2216  openat(AT_FDCWD</tmp/sh-x>, "rel", O_WRONLY|O_CREAT|O_NOCTTY|O_NONBLOCK, 0666) = 3</tmp/sh-x/rel>
2216  utimensat(0</tmp/sh-x/rel>, NULL, NULL, 0) = 0
2217  renameat2(AT_FDCWD</tmp/sh-x>, "rel", AT_FDCWD</tmp/sh-x>, "rel2", RENAME_NOREPLACE) = 0
2213  clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 2218
2218  chdir(".." <unfinished ...>
2218  <... chdir resumed>)              = 0
2218  unlink("sh-x/rel2") = 0
2219  openat(AT_FDCWD</x>, "/dev/tty", O_RDWR|O_NONBLOCK) = -1 ENXIO (No such device or address)
"""


def test_every_write_of_a_trace_is_found_with_its_absolute_path() -> None:
    found = [(w.call, w.path, w.ok) for w in sw.writes(TRACE.splitlines(), "/start")]
    assert found == [
        ("mkdir", "/tmp", False),
        ("mkdir", "/tmp/sh-x", True),
        ("openat", "/tmp/sh-x/rel", True),
        ("utimensat", "/tmp/sh-x/rel", True),
        ("renameat2", "/tmp/sh-x/rel", True),
        ("renameat2", "/tmp/sh-x/rel2", True),
        # pid 2218 was forked in /tmp/sh-x, then went to ..: its relative unlink is there.
        ("unlink", "/tmp/sh-x/rel2", True),
        ("openat", "/dev/tty", False),
    ]


def test_only_successful_writes_outside_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace"
    trace.write_text(TRACE)
    assert sw.main([str(trace), "--allow", "/tmp/sh-x", "--cwd", "/start"]) == 0
    assert sw.main([str(trace), "--allow", "/tmp/sh-x/rel", "--cwd", "/start", "--attempts"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == ["failed mkdir /tmp", "mkdir /tmp/sh-x", "renameat2 /tmp/sh-x/rel2", "unlink /tmp/sh-x/rel2",
                   "failed openat /dev/tty"]


def test_a_prefix_is_a_directory_not_a_string_prefix() -> None:
    assert sw.inside("/home/u/x", ["/home/u"])
    assert not sw.inside("/home/u2/x", ["/home/u"])


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_a_real_trace(tmp_path: Path) -> None:
    work, other = tmp_path / "work", tmp_path / "other"
    work.mkdir()
    other.mkdir()
    trace = tmp_path / "trace"
    script = f"mkdir d && cd d && echo x >f && mv f g && cd .. && ln -s d/g l && chmod 600 d/g && echo y >{other}/z"
    done = subprocess.run(["strace", "-f", "-qq", "-y", "-e", "trace=%file,%process", "-o", str(trace),
                           "sh", "-c", script], cwd=work, capture_output=True, text=True, check=False)
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    found = {(w.call, w.path) for w in sw.writes(trace.read_text().splitlines(), str(work)) if w.ok}
    assert {p for _, p in found if not sw.inside(p, [str(work), "/dev/null"])} == {f"{other}/z"}
    for path in ("d", "d/f", "d/g", "l"):
        assert str(work / path) in {p for _, p in found}, path


def test_temporary_files_must_be_gone_and_own_proc_entries_pass(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    kept = tmp_path / "kept"
    kept.write_text("x")
    trace = tmp_path / "trace"
    trace.write_text(
        f'7  openat(AT_FDCWD</w>, "{tmp_path}/gone", O_WRONLY|O_CREAT|O_EXCL, 0600) = 3<{tmp_path}/gone>\n'
        f'7  openat(AT_FDCWD</w>, "{kept}", O_WRONLY|O_CREAT|O_EXCL, 0600) = 3<{kept}>\n'
        '7  openat(AT_FDCWD</w>, "/dev/fd/63", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 4<pipe:[991]>\n'
        '7  openat(AT_FDCWD</w>, "/proc/self/oom_score_adj", O_WRONLY) = 5</proc/7/oom_score_adj>\n'
        '7  openat(AT_FDCWD</w>, "/proc/1/oom_score_adj", O_WRONLY) = 5</proc/1/oom_score_adj>\n')
    assert sw.main([str(trace), "--temporary", str(tmp_path), "--own-proc"]) == 1
    assert capsys.readouterr().out.splitlines() == [f"left {kept}", "openat /proc/1/oom_score_adj"]
