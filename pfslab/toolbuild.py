"""IOR, mdtest and IO500 built from pinned commits without Spack (`make tools`).

registry/tools.json names each tool's upstream repository and pinned commit. A build
fetches the repositories (from upstream, or from a local mirror of git bundles or bare
repositories), and refuses, before anything is built, a source that lacks a pinned
commit or whose tag names another commit. It then builds against the system's MPI
(``mpicc``), the tools side by side on every core, and installs each into
``<prefix>/<tool>/`` with a stamp of its pins: a tool whose stamp matches is not built
again. ``<prefix>/<view>/bin`` links the binaries under the Spack toolchain's view
names, where :func:`pfslab.rfm_paths.tool_search_path` finds them.

Standard library only: ``python3 -m pfslab.toolbuild`` runs before ``.venv`` exists.
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfslab.errors import KitError
from pfslab.registry import REGISTRY_DIR
from pfslab.rfm_paths import BUILT_TOOLS

TOOLS_FILE = REGISTRY_DIR / "tools.json"
STAMP = ".pfslab-tool.json"
KINDS = ("ior", "io500")
_COMMIT = re.compile(r"[0-9a-f]{40}")
#: Commands a build runs, and the Debian packages that give them (scripts/deps tools).
PREREQUISITES = {
    "git": "git", "make": "make", "gcc": "gcc", "mpicc": "libopenmpi-dev",
    "autoreconf": "autoconf", "aclocal": "automake", "libtoolize": "libtool", "pkg-config": "pkg-config",
}


class ToolsError(KitError):
    """Bad input, a source that does not hold the pins, or missing build prerequisites."""


class BuildFailed(Exception):
    def __init__(self, tool: str, step: str, status: int, log: Path) -> None:
        super().__init__(f"{tool}: {step} failed (exit {status}); full log {log}")
        self.log = log


@dataclass(frozen=True)
class Repo:
    name: str
    url: str

    @property
    def mirror_name(self) -> str:
        """https://github.com/hpc/ior.git -> hpc+ior, as ../shared/mirror/git/ names its bundles."""
        owner, name = self.url.rstrip("/").removesuffix(".git").split("/")[-2:]
        return f"{owner}+{name}"


@dataclass(frozen=True)
class Pin:
    repo: Repo
    commit: str
    tag: str | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    kind: str
    pin: Pin
    links: tuple[str, ...]
    deps: tuple[Pin, ...] = ()

    def pins(self) -> tuple[Pin, ...]:
        return (self.pin, *self.deps)

    def dep(self, repo: str) -> Pin:
        return next(p for p in self.deps if p.repo.name == repo)

    def stamp(self) -> dict[str, Any]:
        return {"tool": self.name, "kind": self.kind, "tag": self.pin.tag,
                "commits": {p.repo.name: p.commit for p in self.pins()}}


@dataclass(frozen=True)
class Registry:
    repos: dict[str, Repo]
    tools: dict[str, Tool]
    views: dict[str, tuple[str, ...]]


def _commit(where: str, value: object) -> str:
    if not isinstance(value, str) or not _COMMIT.fullmatch(value):
        raise ToolsError(f"{where} {value!r} is not a full commit id (40 lowercase hex digits)")
    return value


def load(path: Path = TOOLS_FILE) -> Registry:
    """registry/tools.json, checked: full commit ids, known repositories, kinds and tools."""
    data = json.loads(path.read_text(encoding="utf-8"))
    repos = {name: Repo(name, entry["url"]) for name, entry in data["repositories"].items()}

    def repo(where: str, name: str) -> Repo:
        if name not in repos:
            raise ToolsError(f"{where} names repository {name!r}; known: {', '.join(repos)}")
        return repos[name]

    tools: dict[str, Tool] = {}
    for name, entry in data["tools"].items():
        where = f"{path.name}: tools.{name}"
        if entry["kind"] not in KINDS:
            raise ToolsError(f"{where}.kind {entry['kind']!r} is not one of {', '.join(KINDS)}")
        deps = tuple(Pin(repo(f"{where}.with", dep), _commit(f"{where}.with.{dep}", commit))
                     for dep, commit in entry.get("with", {}).items())
        if entry["kind"] == "io500" and {p.repo.name for p in deps} < {"ior", "pfind"}:
            raise ToolsError(f"{where}.with must pin ior and pfind (what the release's prepare.sh builds)")
        pin = Pin(repo(f"{where}.repo", entry["repo"]), _commit(f"{where}.commit", entry["commit"]), entry.get("tag"))
        tools[name] = Tool(name, entry["kind"], pin, tuple(entry["links"]), deps)
    views: dict[str, tuple[str, ...]] = {}
    for view, members in data["views"].items():
        for member in members:
            if member not in tools:
                raise ToolsError(f"{path.name}: views.{view} names tool {member!r}; known: {', '.join(tools)}")
        views[view] = tuple(members)
    return Registry(repos, tools, views)


def _git(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *map(str, args)], cwd=cwd, capture_output=True, text=True, check=False)


def _reason(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1].removeprefix("fatal: ") if lines else "no message"


def source_of(repo: Repo, mirror: Path | None) -> str:
    """Where a repository is fetched from: its upstream URL, or its entry in the mirror folder."""
    if mirror is None:
        return repo.url
    for suffix in (".bundle", ".git", ""):
        candidate = mirror / f"{repo.mirror_name}{suffix}"
        if candidate.exists():
            return str(candidate)
    raise ToolsError(f"TOOLS_MIRROR {mirror} holds no {repo.mirror_name}.bundle (nor {repo.mirror_name}.git, "
                     f"a bare repository) for {repo.url}")


def fetch(repo: Repo, source: str, cache: Path, mirror_names: str) -> Path:
    """Bring the source's branches and tags into the cache's bare repository of it."""
    git_dir = cache / f"{repo.mirror_name}.git"
    if not (git_dir / "HEAD").is_file():
        git_dir.mkdir(parents=True, exist_ok=True)
        _git("init", "-q", "--bare", git_dir)
    # A stalled server ends the fetch instead of hanging the build.
    done = _git("-C", git_dir, "-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=60",
                "fetch", "--quiet", "--force", "--prune", "--no-tags", source,
                "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
    if done.returncode != 0:
        if source == repo.url:
            raise ToolsError(f"cannot fetch {repo.url} ({_reason(done.stderr)}) and no TOOLS_MIRROR is given: "
                             f"without internet build from a local mirror, make tools TOOLS_MIRROR=<folder of "
                             f"{mirror_names}>")
        raise ToolsError(f"cannot fetch {source} ({_reason(done.stderr)})")
    return git_dir


def verify(tool: str, pin: Pin, git_dir: Path, source: str) -> None:
    """Refuse a source whose tag names another commit than the pin, or that lacks the pin."""
    if pin.tag:
        tagged = _git("-C", git_dir, "rev-parse", "-q", "--verify", f"refs/tags/{pin.tag}^{{commit}}")
        if tagged.returncode == 0 and tagged.stdout.strip() != pin.commit:
            raise ToolsError(f"{tool}: tag {pin.tag} in {source} is commit {tagged.stdout.strip()}, "
                             f"registry/tools.json pins {pin.commit}; refusing to build")
    if _git("-C", git_dir, "cat-file", "-e", f"{pin.commit}^{{commit}}").returncode != 0:
        raise ToolsError(f"{tool}: {source} has no commit {pin.commit} ({pin.repo.name}'s pin in "
                         f"registry/tools.json); refusing to build")


def checkout(git_dir: Path, pin: Pin, dest: Path) -> None:
    """A work tree of the pinned commit, checked to be that commit."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    steps: tuple[tuple[str, tuple[str | Path, ...]], ...] = (
        ("clone", ("clone", "-q", "--shared", "--no-checkout", git_dir, dest)),
        ("checkout", ("-C", dest, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", pin.commit)),
    )
    for step, args in steps:
        done = _git(*args)
        if done.returncode != 0:
            raise ToolsError(f"git {step} of {pin.repo.name} {pin.commit} into {dest} failed: {_reason(done.stderr)}")
    head = _git("-C", dest, "rev-parse", "HEAD").stdout.strip()
    if head != pin.commit:
        raise ToolsError(f"{dest} is at {head}, registry/tools.json pins {pin.commit}; refusing to build")


def check_prepare_pins(tool: Tool, tree: Path) -> None:
    """The release's prepare.sh must pin the IOR and pfind commits registry/tools.json gives it."""
    text = (tree / "prepare.sh").read_text(encoding="utf-8")
    for variable, repo in (("IOR_HASH", "ior"), ("PFIND_HASH", "pfind")):
        found = re.search(rf"^{variable}=(\S+)", text, re.MULTILINE)
        ours = tool.dep(repo).commit
        if found is None or not ours.startswith(found.group(1)):
            theirs = found.group(1) if found else "nothing"
            raise ToolsError(f"{tool.name}: its prepare.sh pins {variable}={theirs}, registry/tools.json's "
                             f"with.{repo} is {ours}; refusing to build")


@functools.cache
def mpi_identity() -> str | None:
    """The system MPI the tools build against: mpicc and the compile line it wraps (Open MPI
    --showme, MPICH -show), which names the MPI's headers and libraries. Another MPI means a
    rebuild; a patch update of the same one does not. None when there is no mpicc."""
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        return None
    for flag in ("--showme", "-show"):
        done = subprocess.run([mpicc, flag], capture_output=True, text=True, check=False)
        if done.returncode == 0 and done.stdout.strip():
            return f"{os.path.realpath(mpicc)}: {done.stdout.strip()}"
    return os.path.realpath(mpicc)


def installed(tool: Tool, prefix: Path) -> bool:
    """The tool's stamp matches its pins and this system's MPI, and its binaries are there."""
    home = prefix / tool.name
    try:
        stamp = json.loads((home / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    mpi = mpi_identity()
    return (stamp.get("pins") == tool.stamp() and (mpi is None or stamp.get("mpi") == mpi)
            and all(os.access(home / "bin" / b, os.X_OK) for b in tool.links))


def missing_prerequisites() -> list[str]:
    missing = [f"{command} ({package})" for command, package in PREREQUISITES.items() if shutil.which(command) is None]
    # Debian's openmpi-bin has an mpicc whose headers come only with libopenmpi-dev.
    if shutil.which("mpicc") and subprocess.run(["mpicc", "-E", "-x", "c", "-"], input="#include <mpi.h>\n",
                                                capture_output=True, text=True, check=False).returncode != 0:
        missing.append("mpi.h (libopenmpi-dev)")
    return missing


def _build_env() -> dict[str, str]:
    # An outer make's jobserver and flags must not reach the tools' own makes.
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES")}


@dataclass
class Build:
    tool: Tool
    work: Path
    home: Path
    log: Path
    jobs: int

    def run(self, step: str, command: Sequence[str | Path], cwd: Path) -> None:
        argv = [str(a) for a in command]
        with self.log.open("a", encoding="utf-8") as out:
            out.write(f"\n$ cd {cwd} && {shlex.join(argv)}\n")
            out.flush()
            start = time.monotonic()
            status = subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=_build_env(),
                                    check=False).returncode
            out.write(f"# {step}: exit {status} after {time.monotonic() - start:.1f} s\n")
        if status != 0:
            raise BuildFailed(self.tool.name, step, status, self.log)

    def ior(self, tree: Path) -> None:
        """IOR as its README and IO500's prepare.sh build it: bootstrap, configure, make in src/."""
        self.run("ior bootstrap", ["./bootstrap"], tree)
        # No dependency tracking: a one-time build never recompiles, and it saves time.
        self.run("ior configure", ["./configure", f"--prefix={self.home}", "--disable-dependency-tracking"], tree)
        self.run("ior make", ["make", f"-j{self.jobs}", "-C", "src", "install"], tree)

    def io500(self) -> None:
        """prepare.sh's build_ior, build_pfind (compile.sh: no lz4, which it would clone) and build_io500."""
        self.ior(self.work / "build" / "ior")
        self.run("pfind compile.sh", ["./compile.sh"], self.work / "build" / "pfind")
        self.run("io500 make", ["make", f"-j{self.jobs}"], self.work)
        bin_dir, share = self.home / "bin", self.home / "share" / "io500"
        share.mkdir(parents=True, exist_ok=True)
        for program in ("io500", "io500-verify"):
            shutil.copy2(self.work / program, bin_dir / program)
        shutil.copy2(self.work / "build" / "pfind" / "pfind", bin_dir / "pfind")
        for config in sorted(self.work.glob("*.ini")):
            shutil.copy2(config, share / config.name)
        schema = self.work / "build" / "cdcl-schema-tools"
        if schema.is_dir():
            shutil.copytree(schema, share / "cdcl-schema-tools", ignore=shutil.ignore_patterns(".git"))

    def __call__(self) -> float:
        start = time.monotonic()
        self.log.write_text(f"# {self.tool.name}: {json.dumps(self.tool.stamp())}\n", encoding="utf-8")
        if self.tool.kind == "ior":
            self.ior(self.work)
        else:
            self.io500()
        seconds = time.monotonic() - start
        stamp = {"pins": self.tool.stamp(), "mpi": mpi_identity(), "built_seconds": round(seconds, 1)}
        (self.home / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        shutil.rmtree(self.work, ignore_errors=True)
        return seconds


def prepare(tools: Sequence[Tool], registry: Registry, prefix: Path, mirror: Path | None) -> None:
    """Fetch, check every pin and check out every tree, before any build starts."""
    names = ", ".join(f"{r.mirror_name}.bundle" for r in registry.repos.values())
    needed = {p.repo.name: p.repo for t in tools for p in t.pins()}
    sources = {name: source_of(repo, mirror) for name, repo in needed.items()}
    git_dirs: dict[str, Path] = {}
    for name, repo in needed.items():
        log(f"fetching {repo.name} from {sources[name]}")
        git_dirs[name] = fetch(repo, sources[name], prefix / ".cache", names)
    for tool in tools:
        for pin in tool.pins():
            verify(tool.name, pin, git_dirs[pin.repo.name], sources[pin.repo.name])
    for tool in tools:
        work = prefix / ".work" / tool.name
        checkout(git_dirs[tool.pin.repo.name], tool.pin, work)
        for pin in tool.deps:
            checkout(git_dirs[pin.repo.name], pin, work / "build" / pin.repo.name)
        if tool.kind == "io500":
            check_prepare_pins(tool, work)
        log(f"{tool.name}: {tool.pin.repo.name} {tool.pin.tag or ''} at {tool.pin.commit}"
            + "".join(f", {p.repo.name} {p.commit[:12]}" for p in tool.deps) + " (checked)")


def write_views(registry: Registry, prefix: Path) -> list[str]:
    """<prefix>/<view>/bin: links to the installed tools' binaries, the first tool of a view winning a name."""
    summary = []
    for view, members in registry.views.items():
        bin_dir = prefix / view / "bin"
        if bin_dir.exists():
            shutil.rmtree(bin_dir)
        bin_dir.mkdir(parents=True)
        linked: list[str] = []
        for member in members:
            tool = registry.tools[member]
            if not installed(tool, prefix):
                continue
            for program in tool.links:
                if not (bin_dir / program).exists():
                    (bin_dir / program).symlink_to(os.path.relpath(prefix / member / "bin" / program, bin_dir))
            linked.append(member)
        summary.append(f"{bin_dir} ({', '.join(linked) or 'empty'})")
    return summary


def build(registry: Registry, names: Sequence[str], prefix: Path, mirror: Path | None, jobs: int) -> int:
    start = time.monotonic()
    unknown = [n for n in names if n not in registry.tools]
    if unknown:
        raise ToolsError(f"unknown tool {', '.join(unknown)}; registry/tools.json has {', '.join(registry.tools)}")
    if mirror is not None and not mirror.is_dir():
        raise ToolsError(f"TOOLS_MIRROR {mirror} is not a folder (it holds git bundles or bare repositories, "
                         f"named as <owner>+<name>.bundle)")
    chosen = [registry.tools[n] for n in (names or registry.tools)]
    todo = [t for t in chosen if not installed(t, prefix)]
    if todo:
        missing = missing_prerequisites()
        if missing:
            raise ToolsError(f"building the tools needs {', '.join(missing)}, missing here: "
                             f"scripts/deps tools installs them")
        prepare(todo, registry, prefix, mirror)
        # The longest build (IO500 builds its own IOR first) starts first.
        todo.sort(key=lambda t: t.kind != "io500")
        logs = prefix / ".logs"
        logs.mkdir(parents=True, exist_ok=True)
        log(f"building {', '.join(t.name for t in todo)} side by side, make -j{jobs} each (logs: {logs})")
        builds = []
        for tool in todo:
            home = prefix / tool.name
            if home.exists():
                shutil.rmtree(home)
            (home / "bin").mkdir(parents=True)
            builds.append(Build(tool, prefix / ".work" / tool.name, home, logs / f"{tool.name}.log", jobs))
        failed: list[BuildFailed] = []
        with ThreadPoolExecutor(max_workers=len(builds)) as pool:
            futures = {b.tool.name: pool.submit(b) for b in builds}
            for name, future in futures.items():
                try:
                    log(f"{name} built in {future.result():.0f} s")
                except BuildFailed as err:
                    failed.append(err)
        for failure in failed:
            tail = failure.log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
            print("\n".join(tail), file=sys.stderr)
            log(f"error: {failure}")
        if failed:
            write_views(registry, prefix)
            return 1
    views = write_views(registry, prefix)
    if (prefix / ".work").is_dir() and not any((prefix / ".work").iterdir()):
        (prefix / ".work").rmdir()
    done = "built" if todo else "up to date"
    log(f"{', '.join(t.name for t in chosen)} {done} in {prefix} ({time.monotonic() - start:.1f} s on {jobs} cores); "
        f"views: {'; '.join(views)}")
    return 0


@contextmanager
def _locked(prefix: Path) -> Iterator[None]:
    """One build at a time per prefix (CI and a user, two terminals): the second waits, then finds it done."""
    prefix.mkdir(parents=True, exist_ok=True)
    with (prefix / ".lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another make tools building in {prefix}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def log(message: str) -> None:
    print(f"[tools] {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m pfslab.toolbuild", description=__doc__.split("\n")[0])
    parser.add_argument("tools", nargs="*", help="tools of registry/tools.json to build (default: all)")
    parser.add_argument("--mirror", type=Path, help="folder of git bundles or bare repositories "
                        "(<owner>+<name>.bundle, as ../shared/mirror/git/) instead of the upstream URLs")
    parser.add_argument("--prefix", type=Path, default=BUILT_TOOLS, help="install folder (default: build/tools)")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="make -j (default: the cores)")
    parser.add_argument("--registry", type=Path, default=TOOLS_FILE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    prefix = args.prefix.resolve()
    try:
        with _locked(prefix):
            return build(load(args.registry), args.tools, prefix, args.mirror.resolve() if args.mirror else None,
                         max(1, args.jobs))
    except ToolsError as err:
        log(f"error: {err}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
