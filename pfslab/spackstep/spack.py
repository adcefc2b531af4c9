"""The Spack a step runs and what it reads: the pinned release (or a site's SPACK_ROOT),
Spack's builtin packages at the pinned commit, and the kit's own config scope."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pfslab.spackstep.step import Log, Paths, StepError, release_pin, require_cmd, version_ge


@dataclass
class Spack:
    """Spack's command; ``profile_args`` is the toolchain profile's scope (-C DIR), when
    the node has one. Its output goes to stderr: stdout stays data for callers."""

    #: SPACK_ROOT as given (its spelling is in log lines and the inputs digest).
    root: str
    profile_args: list[str] = field(default_factory=list)

    @property
    def command(self) -> str:
        return f"{self.root}/bin/spack"

    def run(self, *args: str | Path) -> bool:
        try:
            done = subprocess.run([self.command, *self.profile_args, *map(str, args)], stdout=2, check=False)
        except OSError as error:  # e.g. not a program this machine runs: said, then the step's refusal
            print(f"{self.command}: {error.strerror}", file=sys.stderr, flush=True)
            return False
        return done.returncode == 0

    def concretize(self, env: Path, *args: str) -> bool:
        """Concretize the environment (views untouched); writes spack.lock. An existing
        spack.lock is kept as long as spack.yaml still matches it; --force redoes it."""
        return self.run("-c", "view:false", "-e", env, "concretize", *args)


def ensure_prefix(paths: Paths) -> None:
    try:
        paths.prefix.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    if not (paths.prefix.is_dir() and os.access(paths.prefix, os.W_OK)):
        raise StepError(f"cannot write {paths.prefix} (the toolchain's prefix); run as root or set PFSLAB_PREFIX")


def lock_prefix(paths: Paths) -> IO[str]:
    """Only one toolchain or mirror step at a time per prefix: held while the returned
    file stays open (the process's lifetime)."""
    lock = open(paths.prefix / ".spack-step.lock", "w")  # noqa: SIM115 (held until exit)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise StepError(f"another 'make toolchain' or 'make mirror' is running on {paths.prefix}") from None
    return lock


def _git(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *map(str, args)], stdout=2, check=False, text=True)


def install_spack(paths: Paths, log: Log, dest: Path, tarball: Path | None) -> None:
    """Spack at the pinned release into DEST: from a bundle's tarball or by git clone."""
    release = release_pin(paths, "SPACK_RELEASE")
    commit = release_pin(paths, "SPACK_RELEASE_COMMIT")
    url = release_pin(paths, "SPACK_GIT_URL")
    partial = Path(f"{dest}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    if tarball is not None:
        log.info(f"unpacking Spack {release} from the bundle into {dest}")
        if subprocess.run(["tar", "-xzf", str(tarball), "-C", str(partial)], check=False).returncode:
            raise StepError(f"cannot unpack {tarball}")
    else:
        require_cmd("git")
        log.info(f"cloning Spack {release} into {dest}")
        if _git("clone", "--quiet", "--depth", "1", "--branch", release, url, partial).returncode:
            raise StepError(f"cannot clone Spack {release} from {url} (no network? use MIRROR=<bundle> or SPACK_ROOT=<a Spack checkout>)")
        got = subprocess.run(["git", "-C", str(partial), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
        if got.stdout.strip() != commit:
            raise StepError(f"Spack {release} from {url} is commit {got.stdout.strip()}, spack/release.conf pins {commit}")
    if not os.access(partial / "bin" / "spack", os.X_OK):
        raise StepError(f"no bin/spack in the Spack unpacked into {partial}")
    partial.rename(dest)


def setup_spack(paths: Paths, log: Log, environ: MutableMapping[str, str], bundle: Path | None) -> Spack:
    """SPACK_ROOT if set (a site's Spack), else the kit's copy at the pinned release; Spack
    then runs from the kit's own config scope and cache, never ~/.spack."""
    if environ.get("SPACK_ROOT"):
        root = environ["SPACK_ROOT"]
        if not os.access(f"{root}/bin/spack", os.X_OK):
            raise StepError(f"SPACK_ROOT={root} has no bin/spack; point it at a Spack checkout or unset it")
    else:
        # Not PFSLAB_PREFIX/spack: images put the kit itself (with its spack/) at /opt/pfslab.
        root = f"{paths.prefix}/spack-root"
        if not os.access(f"{root}/bin/spack", os.X_OK):
            install_spack(paths, log, Path(root), bundle / "spack.tar.gz" if bundle else None)
    environ["SPACK_ROOT"] = root
    environ["SPACK_USER_CONFIG_PATH"] = str(paths.kit_scope)
    environ["SPACK_USER_CACHE_PATH"] = str(paths.cache)
    paths.kit_scope.mkdir(parents=True, exist_ok=True)
    paths.cache.mkdir(parents=True, exist_ok=True)
    return Spack(root)


def check_spack_version(paths: Paths, spack: Spack) -> str:
    """Spack's version; a Spack older than the pinned minimum is refused."""
    minimum = release_pin(paths, "SPACK_MIN_VERSION")
    try:
        done = subprocess.run([spack.command, "--version"], stdout=subprocess.PIPE, text=True, check=False)
    except OSError as error:
        print(f"{spack.command}: {error.strerror}", file=sys.stderr, flush=True)
        done = subprocess.CompletedProcess([spack.command], 126, "")
    if done.returncode:
        raise StepError(f"'{spack.command} --version' failed (its error is above); is SPACK_ROOT={spack.root} a Spack checkout?")
    out = done.stdout.rstrip("\n").rsplit("\n", 1)[-1]
    version = out.split(" ", 1)[0]
    if not re.match(r"[0-9]+(\.[0-9]+)+", version):
        raise StepError(f"cannot read a version from '{spack.command} --version': {out}")
    if not version_ge(version, minimum):
        raise StepError(
            f"Spack {version} at {spack.root} is older than the kit's minimum {minimum} (spack/release.conf); "
            f"unset SPACK_ROOT to use the pinned {release_pin(paths, 'SPACK_RELEASE')}"
        )
    return version


def ensure_builtin_repo(paths: Paths, log: Log, environ: MutableMapping[str, str], bundle: Path | None) -> Path:
    """Spack's builtin package repository at the pinned commit (PFSLAB_SPACK_PACKAGES
    names an existing spack-packages checkout instead); its repos/spack_repo/builtin."""
    commit = release_pin(paths, "SPACK_PACKAGES_COMMIT")
    url = release_pin(paths, "SPACK_PACKAGES_GIT_URL")
    if environ.get("PFSLAB_SPACK_PACKAGES"):
        top = Path(environ["PFSLAB_SPACK_PACKAGES"])
        if (top / ".git").is_dir():
            head = subprocess.run(["git", "-C", str(top), "rev-parse", "HEAD"], stdout=subprocess.PIPE, text=True, check=False)
            if head.stdout.strip() != commit:
                raise StepError(f"PFSLAB_SPACK_PACKAGES={top} is not at the pinned commit {commit} (spack/release.conf)")
    else:
        top = paths.prefix / "spack-packages" / commit
        if not (top / "repos" / "spack_repo" / "builtin" / "repo.yaml").is_file():
            partial = Path(f"{top}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(parents=True)
            if bundle is not None:
                log.info(f"unpacking Spack's builtin packages ({commit}) from the bundle")
                tarball = bundle / "spack-packages.tar.gz"
                if subprocess.run(["tar", "-xzf", str(tarball), "-C", str(partial)], check=False).returncode:
                    raise StepError(f"cannot unpack {tarball}")
            else:
                require_cmd("git")
                log.info(f"fetching Spack's builtin packages at {commit}")
                steps = (("init", "--quiet"), ("fetch", "--quiet", "--depth", "1", url, commit), ("checkout", "--quiet", "FETCH_HEAD"))
                if any(_git("-C", partial, *step).returncode for step in steps):
                    raise StepError(f"cannot fetch {url} at {commit} (no network? use MIRROR=<bundle> or PFSLAB_SPACK_PACKAGES=<checkout>)")
            partial.rename(top)
    repo = top / "repos" / "spack_repo" / "builtin"
    if not (repo / "repo.yaml").is_file():
        raise StepError(f"{top} has no repos/spack_repo/builtin/repo.yaml; is it a spack-packages checkout?")
    return repo


# The files below are byte for byte what scripts/lib/spack.sh wrote, comments included:
# the kit's scope is part of the toolchain's inputs digest (toolchain.inputs_digest), so a
# node whose stamp the shell step wrote stays up to date.


def write_repos_config(paths: Paths, repo: Path) -> None:
    """The kit's config scope: the builtin repository at the pinned commit."""
    (paths.kit_scope / "repos.yaml").write_text(
        "# Written by scripts/lib/spack.sh: Spack's builtin packages at the commit pinned in\n"
        "# spack/release.conf (the kit's own repository is named in spack/spack.yaml).\n"
        "repos:\n"
        f"  builtin: {repo}\n"
    )


def write_bundle_config(paths: Paths, bundle: Path | None) -> None:
    """The kit's config scope: install only from the bundle (sources, binaries, bootstrap),
    every default mirror and bootstrap source dropped (::), so nothing reaches out. With
    no bundle, remove what an earlier air-gapped run wrote."""
    mirrors, bootstrap = paths.kit_scope / "mirrors.yaml", paths.kit_scope / "bootstrap.yaml"
    if bundle is None:
        mirrors.unlink(missing_ok=True)
        bootstrap.unlink(missing_ok=True)
        return
    lines = [
        f"# Written by scripts/lib/spack.sh for the bundle {bundle}",
        "mirrors::",
        "  pfslab-bundle-sources:",
        f"    url: file://{bundle}/mirror",
        "    source: true",
        "    binary: false",
    ]
    if (bundle / "buildcache").is_dir():
        lines += [
            "  pfslab-bundle-binaries:",
            f"    url: file://{bundle}/buildcache",
            "    source: false",
            "    binary: true",
            "    signed: true",
        ]
    mirrors.write_text("\n".join(lines) + "\n")
    bootstrap.write_text(
        f"# Written by scripts/lib/spack.sh for the bundle {bundle}\n"
        "bootstrap:\n"
        "  sources::\n"
        "  - name: pfslab-bundle-binaries\n"
        f"    metadata: {bundle}/bootstrap/metadata/binaries\n"
        "  - name: pfslab-bundle-sources\n"
        f"    metadata: {bundle}/bootstrap/metadata/sources\n"
        "  trusted:\n"
        "    pfslab-bundle-binaries: true\n"
        "    pfslab-bundle-sources: true\n"
    )
