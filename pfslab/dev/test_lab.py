"""``make test-lab`` (scripts/test-lab [BATS_OPTIONS...] [tests/<dir>/<file>.bats...]): the
lab tests for real, from a clone of this working tree (uncommitted changes too) at a path
chosen at random each run.

Every name the lab leaves on the host derives from the checkout's path (pfslab/names.py),
so a fixed path would test one set of names only: a bad derivation that fails one checkout
in six would pass CI for ever. The path is printed; a failed run keeps the clone for a
look, a passed one removes it. Arguments: bats options, and test files (<file>.bats,
relative to the checkout) to run only those (default: tests/lab).
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pfslab import KIT_ROOT, names
from pfslab.dev.common import Refusal, Tool, require_cmd, require_root

TOOL = Tool("test-lab")
#: The characters a checkout path may hold (pfslab/names.py); the name starts with a letter
#: so that no tool reads it as an option.
NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+@-"
#: What `make tools` keeps beside its tools: not copied.
TOOLS_SKIPPED = ("./.cache", "./.work", "./.lock")


def random_name(length: int = 11) -> str:
    return "k" + "".join(secrets.choice(NAME_CHARS) for _ in range(length))


def split_args(args: Sequence[str], clone: Path) -> tuple[list[str], list[str]]:
    """bats options, and the test files named (in the clone; default its tests/lab)."""
    files = [str(clone / a) for a in args if a.endswith(".bats")]
    options = [a for a in args if not a.endswith(".bats")]
    return options, files or [str(clone / "tests" / "lab")]


def env_without_root() -> dict[str, str]:
    """The clone is a checkout of its own: nothing of this one's environment (PFSLAB_ROOT)
    may point its scripts back here."""
    return {k: v for k, v in os.environ.items() if k != "PFSLAB_ROOT"}


def tools_busy(lock: Path) -> bool:
    """Whether `make tools` holds its lock (it is building: a half-built tree)."""
    if not lock.exists():
        return False
    with lock.open("rb") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def copy_tools(source: Path, clone: Path) -> None:
    """The tools `make tools` built in this checkout (IOR, mdtest, IO500; relocatable, their
    views are relative links), so that the clone's lab runs them without building them again;
    without them, their tests are skipped with the reason."""
    built = source / "build" / "tools"
    if not built.is_dir():
        TOOL.log("no tools built in this checkout ('make tools'): IOR, mdtest and IO500 tests will be skipped")
        return
    if tools_busy(built / ".lock"):
        TOOL.log("make tools is building in this checkout: its tools are not copied, IOR, mdtest and IO500 tests will be skipped")
        return
    target = clone / "build" / "tools"
    target.mkdir(parents=True, exist_ok=True)
    excludes = [f"--exclude={e}" for e in TOOLS_SKIPPED]
    pack = subprocess.Popen(["tar", "-C", str(built), *excludes, "-cf", "-", "."], stdout=subprocess.PIPE)
    unpack = subprocess.run(["tar", "-C", str(target), "-xf", "-"], stdin=pack.stdout)
    if pack.stdout is not None:
        pack.stdout.close()
    if pack.wait() != 0 or unpack.returncode != 0:
        raise Refusal(f"copying {built} to {target} failed (above)")
    copied = " ".join(sorted(p.name for p in target.iterdir() if p.is_dir()))
    TOOL.log(f"tools built in this checkout copied to the clone: {copied} ")


def clone_tree(source: Path, clone: Path) -> None:
    """A git clone, then this working tree's files over it: uncommitted changes too."""
    if subprocess.run(["git", "clone", "-q", str(source), str(clone)]).returncode != 0:
        raise Refusal(f"git clone {source} {clone} failed (above)")
    listing = subprocess.run(["git", "-C", str(source), "ls-files", "-z", "-co", "--exclude-standard"], capture_output=True)
    if listing.returncode != 0:
        raise Refusal(f"git ls-files in {source} failed: {listing.stderr.decode(errors='replace').strip()}")
    files = listing.stdout
    pack = subprocess.Popen(["tar", "-C", str(source), "--null", "-T", "-", "-cf", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    unpack = subprocess.Popen(["tar", "-C", str(clone), "-xf", "-"], stdin=pack.stdout)
    assert pack.stdin is not None and pack.stdout is not None
    pack.stdout.close()
    pack.stdin.write(files)
    pack.stdin.close()
    if pack.wait() != 0 or unpack.wait() != 0:
        raise Refusal(f"copying the working tree {source} to {clone} failed (above)")


def make_deps(clone: Path, base: Path) -> None:
    log = base / "deps.log"
    with log.open("w") as out:
        rc = subprocess.run([str(clone / "scripts" / "deps"), "demo"], stdout=out, stderr=subprocess.STDOUT,
                            env=env_without_root()).returncode
    if rc != 0:
        sys.stderr.write("".join(log.read_text(errors="replace").splitlines(keepends=True)[-20:]))
        raise Refusal(f"make deps failed in {clone} (log: {log})")
    if not os.access(clone / ".venv" / "bin" / "pfslab", os.X_OK):
        raise Refusal(f"make deps in {clone} made no .venv/bin/pfslab (log: {log})")


def body(argv: list[str]) -> int:
    require_root("make test-lab")
    require_cmd("git", "bats")
    source = KIT_ROOT
    base = Path(tempfile.mkdtemp(prefix="pfslab-test-lab.", dir="/tmp"))
    # A site lab's test runs the clone as an ordinary user, who must reach it (mkdtemp: 700).
    base.chmod(0o755)
    clone = base / random_name()
    clone_tree(source, clone)
    TOOL.log(f"checkout at {clone} (checkout id {names.checkout_id(clone.resolve())})")
    make_deps(clone, base)
    copy_tools(source, clone)
    options, files = split_args(argv, clone)
    rc = subprocess.run(["bats", *options, *files], env=env_without_root()).returncode
    active = clone / "build" / "active-lab"
    if rc == 0 and not (active.is_file() and active.stat().st_size > 0):
        shutil.rmtree(base)
    else:
        TOOL.log(f"kept {clone} for a look (tests exited {rc})")
    return rc


if __name__ == "__main__":
    sys.exit(TOOL.main(body))
