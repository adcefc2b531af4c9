"""`make toolchain` (scripts/toolchain): install the benchmark toolchain with Spack.

Concretizes spack/spack.yaml (writes spack/spack.lock), installs it and only then swaps
the views PREFIX/view and PREFIX/view-seed to the new build. A failed step restores the
previous spack.lock and leaves the previous views as they were. A second run with the
same inputs does nothing.

Environment: SPACK_ROOT (a site's Spack, >= SPACK_MIN_VERSION), MIRROR (an air-gapped
bundle of `make mirror`) with PFSLAB_BUNDLE_KEY (its signing key's fingerprint),
PFSLAB_SPACK_EXTERNALS=1 (the site's MPI and fabric libraries as externals),
PFSLAB_SPACK_INSTALL_ARGS, PFSLAB_SPACK_PACKAGES, PFSLAB_TOOLCHAIN_FORCE=1,
PFSLAB_TOOLCHAIN_FILESYSTEM (the lab's file system: its family's profile),
PFSLAB_TOOLCHAIN_ARCH (uname -m by default), PFSLAB_PREFIX, PFSLAB_SPACK_ENV.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

from pfslab.spackstep import profile
from pfslab.spackstep.spack import (
    Spack,
    check_spack_version,
    ensure_builtin_repo,
    ensure_prefix,
    lock_prefix,
    setup_spack,
    write_bundle_config,
    write_repos_config,
)
from pfslab.spackstep.step import (
    Log,
    Paths,
    StepError,
    absolute,
    key_fingerprints,
    require_cmd,
    sha256_file,
    verify_key_fingerprint,
)

#: What `spack external find` looks for: MPI, fabric and process-management libraries.
EXTERNALS = ("openmpi", "mpich", "mvapich2", "intel-oneapi-mpi", "libfabric", "rdma-core", "ucx", "pmix", "slurm")
#: The views spack/spack.yaml defines, under the prefix (tests/unit/test_spack_env.py).
VIEWS = ("view", "view-seed")


@dataclass(frozen=True)
class Prefix:
    """The toolchain's own files under the prefix."""

    paths: Paths

    @property
    def views(self) -> list[Path]:
        return [self.paths.prefix / name for name in VIEWS]

    @property
    def stamp(self) -> Path:
        return self.paths.prefix / "toolchain.stamp"

    @property
    def profile_dir(self) -> Path:
        """The toolchain profile's scope (pfslab/spackstep/profile.py)."""
        return self.paths.prefix / "spack-profile"

    @property
    def profile_mark(self) -> Path:
        """The profile the current spack.lock was made with: a lock of another profile
        is concretized afresh."""
        return self.paths.prefix / "spack.lock.profile"

    @property
    def lock_backup(self) -> Path:
        return self.paths.prefix / "spack.lock.previous"


# ---- the bundle (MIRROR) ----------------------------------------------------------------------


def check_bundle(paths: Paths, log: Log, bundle: Path, bundle_key: str) -> None:
    """MIRROR must be a whole, untouched bundle made for this spack.yaml."""
    if not bundle.exists():
        raise StepError(f"MIRROR={bundle} does not exist; give the directory 'make mirror' wrote (MIRROR_OUT)")
    if not bundle.is_dir():
        raise StepError(f"MIRROR={bundle} is not a directory; unpack the bundle and pass its directory")
    if not (bundle / "bundle.conf").is_file():
        raise StepError(f"MIRROR={bundle} is not a pfslab bundle (no bundle.conf); 'make mirror' writes one, and an interrupted run leaves none")
    checked = subprocess.run(["sha256sum", "--quiet", "--strict", "-c", "SHA256SUMS"], cwd=bundle, stdout=2, check=False)
    if checked.returncode:
        raise StepError(f"MIRROR={bundle} is damaged: SHA256SUMS does not match its files (copy it again)")
    conf = (bundle / "bundle.conf").read_text().splitlines()
    want = "\n".join(line.removeprefix("SPACK_YAML_SHA256=") for line in conf if line.startswith("SPACK_YAML_SHA256="))
    have = sha256_file(paths.spack_yaml)
    if want != have:
        raise StepError(
            f"MIRROR={bundle} was made for another spack.yaml (sha256 {want[:12]}, this one {have[:12]}); "
            "run 'make mirror' again from this checkout"
        )
    check_bundle_key(log, bundle, bundle_key)


def check_bundle_key(log: Log, bundle: Path, want: str) -> None:
    """A bundle's binaries are signed; the key that signed them travels in the bundle
    (signing-key.pub), so it proves nothing by itself: it is trusted only when the user
    gives its fingerprint (BUNDLE_KEY, as `make mirror` printed it on the connected host)."""
    if not (bundle / "buildcache").is_dir():
        return
    key = bundle / "signing-key.pub"
    if not key.is_file():
        raise StepError(f"MIRROR={bundle} has a build cache but no signing-key.pub: its binaries cannot be verified; run 'make mirror' again with this kit")
    require_cmd("gpg")
    have = key_fingerprints(key)
    if not want:
        raise StepError(
            f"MIRROR={bundle}: its binaries are signed by key {have or '(none)'} (signing-key.pub); compare it with the "
            "fingerprint 'make mirror' printed, then run again with BUNDLE_KEY=<that fingerprint>"
        )
    verify_key_fingerprint(key, want, f"MIRROR={bundle} signing-key.pub", "BUNDLE_KEY")
    log.info(f"the bundle's signing key is {want}, as BUNDLE_KEY says")


def trust_bundle_key(spack: Spack, bundle: Path) -> None:
    """Spack checks every binary's signature against its keyring: the bundle's key goes in."""
    if not (bundle / "buildcache").is_dir():
        return
    key = bundle / "signing-key.pub"
    if not spack.run("gpg", "trust", key):
        raise StepError(f"'spack gpg trust {key}' failed (its error is above)")


# ---- the profile, the inputs and the views ----------------------------------------------------


def setup_profile(paths: Paths, log: Log, spack: Spack, environ: MutableMapping[str, str]) -> None:
    """This node's profile: its machine, and the lab's file system where it says so."""
    machine = environ.get("PFSLAB_TOOLCHAIN_ARCH") or os.uname().machine
    filesystem = environ.get("PFSLAB_TOOLCHAIN_FILESYSTEM", "")
    profile.profile_target(machine)
    versions = profile.external_versions(paths.root, filesystem, environ) if filesystem else []
    scope = Prefix(paths).profile_dir
    if profile.write_profile_scope(paths.root, paths.spack_yaml, scope, machine, filesystem, versions):
        spack.profile_args = ["-C", str(scope)]
        log.info(f"toolchain profile of {machine}{' ' + filesystem if filesystem else ''} clients: {scope}/packages.yaml (over spack.yaml)")


def profile_id(paths: Paths) -> str:
    """What the lock is made for: the profile's scope (none: the committed spack.lock's)."""
    scope = Prefix(paths).profile_dir / "packages.yaml"
    return sha256_file(scope) if scope.is_file() else "default"


def _sorted_files(top: Path, suffixes: tuple[str, ...], depth1: bool) -> list[str]:
    """Files named *SUFFIX under TOP, sorted byte-wise (find | LC_ALL=C sort)."""
    found = []
    if depth1:
        if top.is_dir():
            found = [f"{top}/{e.name}" for e in os.scandir(top) if e.name.endswith(suffixes)]
    else:
        # find -type f: symbolic links are not followed, nor taken.
        for directory, _, files in os.walk(top):
            found += [f"{directory}/{name}" for name in files if name.endswith(suffixes) and not os.path.islink(f"{directory}/{name}")]
    return sorted((f for f in found if os.path.isfile(f)), key=os.fsencode)


def inputs_digest(paths: Paths, spack: Spack, version: str) -> str:
    """Everything the result depends on: the environment, the kit repo, the pins, the
    kit's config scope and the Spack used (the bytes the shell step hashed)."""
    digest = hashlib.sha256(f"spack {version} at {spack.root}\n".encode())
    files = [str(paths.spack_yaml), str(paths.release_file)]
    files += _sorted_files(paths.env / "repo", (".py", ".yaml"), depth1=False)
    files += _sorted_files(paths.kit_scope, (".yaml",), depth1=True)
    for name in files:
        digest.update(Path(name).read_bytes())
    digest.update(f"profile {profile_id(paths)}\n".encode())
    return digest.hexdigest()


def lock_digest(paths: Paths) -> str:
    return sha256_file(paths.lock) if paths.lock.is_file() else "none"


def views_present(paths: Paths) -> bool:
    return all(view.is_symlink() and view.is_dir() for view in Prefix(paths).views)


def up_to_date(paths: Paths, environ: MutableMapping[str, str], digest: str) -> bool:
    if environ.get("PFSLAB_TOOLCHAIN_FORCE", "0") == "1":
        return False
    stamp = Prefix(paths).stamp
    if not (stamp.is_file() and stamp.stat().st_size and views_present(paths)):
        return False
    return stamp.read_text().rstrip("\n") == f"{digest} {lock_digest(paths)}"


def views_summary(paths: Paths) -> str:
    return ";".join(f"{v} -> {os.readlink(v)}" if v.is_symlink() else f"{v} (none yet)" for v in Prefix(paths).views)


# ---- the install -------------------------------------------------------------------------------


def _restore_lock(paths: Paths) -> None:
    backup = Prefix(paths).lock_backup
    if backup.is_file():
        shutil.move(backup, paths.lock)
    else:
        paths.lock.unlink(missing_ok=True)


def _fail_step(paths: Paths, what: str) -> StepError:
    """A failed step: put spack.lock back; the views were never touched."""
    _restore_lock(paths)
    return StepError(f"{what} failed (Spack's error is above); spack.lock restored and the views left as they were: {views_summary(paths)}")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def install_toolchain(paths: Paths, log: Log, spack: Spack, environ: MutableMapping[str, str], bundle: Path | None) -> None:
    install_args = environ.get("PFSLAB_SPACK_INSTALL_ARGS", "").split()
    if "--no-check-signature" in install_args:
        raise StepError("PFSLAB_SPACK_INSTALL_ARGS has --no-check-signature: the kit installs binaries only with their signatures checked")
    prefix = Prefix(paths)
    if paths.lock.is_file():
        shutil.copy2(paths.lock, prefix.lock_backup)
    else:
        prefix.lock_backup.unlink(missing_ok=True)
    if bundle is not None and not _same_file(bundle / "spack.lock", paths.lock):
        log.info("using the bundle's spack.lock (the specs its mirror and build cache hold)")
        shutil.copyfile(bundle / "spack.lock", paths.lock)
    fresh: list[str] = []
    try:
        mark = prefix.profile_mark.read_text().rstrip("\n")
    except OSError:
        mark = "default"
    if environ.get("PFSLAB_SPACK_EXTERNALS", "0") == "1":
        fresh = ["--force"]
        log.info(f"concretizing {paths.spack_yaml} afresh, with this site's externals")
    elif profile_id(paths) != mark:
        # Spack keeps a lock whose roots match spack.yaml, whatever scope changed: a lock
        # made for another profile (the committed one is the default's) is redone.
        fresh = ["--force"]
        log.info(f"concretizing {paths.spack_yaml} afresh for this node's toolchain profile")
    else:
        log.info(f"concretizing {paths.spack_yaml} (the committed spack.lock stands while it matches)")
    if not spack.concretize(paths.env, *fresh):
        raise _fail_step(paths, "concretizing")
    # The views are disabled while installing: Spack would otherwise rebuild them even
    # after a failed install, dropping what did not build.
    log.info(f"installing ({environ.get('PFSLAB_SPACK_INSTALL_ARGS') or 'default arguments'})")
    if not spack.run("-c", "view:false", "-e", paths.env, "install", *install_args):
        raise _fail_step(paths, "spack install")
    log.info("updating the views")
    if not spack.run("-e", paths.env, "env", "view", "regenerate"):
        raise _fail_step(paths, "regenerating the views")
    prefix.profile_mark.write_text(profile_id(paths) + "\n")
    prefix.lock_backup.unlink(missing_ok=True)


def run(environ: MutableMapping[str, str], log: Log) -> None:
    paths = Paths.from_environ(environ)
    if not paths.spack_yaml.is_file():
        raise StepError(f"no spack.yaml in {paths.env}")
    bundle = absolute(environ["MIRROR"], environ) if environ.get("MIRROR") else None
    if bundle is not None:
        check_bundle(paths, log, bundle, environ.get("PFSLAB_BUNDLE_KEY", ""))
    ensure_prefix(paths)
    lock = lock_prefix(paths)
    try:
        spack = setup_spack(paths, log, environ, bundle)
        version = check_spack_version(paths, spack)
        log.info(f"Spack {version} at {spack.root}{f', offline from the bundle {bundle}' if bundle else ''}")
        write_repos_config(paths, ensure_builtin_repo(paths, log, environ, bundle))
        write_bundle_config(paths, bundle)
        setup_profile(paths, log, spack, environ)
        if bundle is not None:
            trust_bundle_key(spack, bundle)
        if environ.get("PFSLAB_SPACK_EXTERNALS", "0") == "1":
            log.info(f"recording the site's MPI and fabric libraries as externals ({' '.join(EXTERNALS)})")
            if not spack.run("external", "find", "--scope", "user", *EXTERNALS):
                raise StepError("'spack external find' failed (its error is above)")
        digest = inputs_digest(paths, spack, version)
        if up_to_date(paths, environ, digest):
            log.info(f"up to date: nothing changed since the last run ({views_summary(paths)}); PFSLAB_TOOLCHAIN_FORCE=1 runs every step")
            return
        install_toolchain(paths, log, spack, environ, bundle)
        # Again: Spack may have written to the kit's scope (compilers it detected).
        Prefix(paths).stamp.write_text(f"{inputs_digest(paths, spack, version)} {lock_digest(paths)}\n")
        log.info(f"ready: {views_summary(paths)}; spack.lock sha256 {lock_digest(paths)}")
    finally:
        lock.close()
