"""`make mirror` (scripts/mirror): write the air-gapped bundle, on a connected host.

One directory (MIRROR_OUT, default build/spack-bundle) that `make toolchain MIRROR=<dir>`
installs from with no network: spack.tar.gz (Spack at the pinned release, or the
SPACK_ROOT used here), spack-packages.tar.gz (the builtin packages at the pinned commit),
spack.lock (the concretized toolchain), mirror/ (every source of spack.lock), bootstrap/
(clingo, gnupg, patchelf), buildcache/ (the binaries built here, signed, unless
PFSLAB_MIRROR_BINARIES=0), signing-key.pub (the public half of the key that signed them;
its fingerprint is printed and recorded in bundle.conf, and `make toolchain` trusts the
key only when told that fingerprint), SHA256SUMS and bundle.conf, written last: no
bundle.conf, no bundle. The signing key: PFSLAB_SPACK_SIGNING_KEY (a key already in
Spack's keyring), else a new one made for this bundle (its secret half stays in this
host's Spack keyring). Build the binaries on the lab's OS: the target is pinned in
spack.yaml, the OS is not.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from collections.abc import MutableMapping
from pathlib import Path

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
from pfslab.spackstep.step import Log, Paths, StepError, absolute, key_fingerprints, release_pin, require_cmd, sha256_file

#: What a bundle's SHA256SUMS covers (signing-key.pub too when there is one).
SUMMED = ("spack.tar.gz", "spack-packages.tar.gz", "spack.lock")


def prepare_out(out: Path) -> None:
    """A new bundle, or an earlier one to refresh; never someone else's directory."""
    if out.is_dir() and any(out.iterdir()) and not (out / "bundle.conf").is_file() and not (out / ".pfslab-bundle").is_file():
        raise StepError(f"MIRROR_OUT={out} is a non-empty directory that is not a pfslab bundle; choose another path")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError:
        raise StepError(f"cannot create MIRROR_OUT={out}") from None
    (out / ".pfslab-bundle").touch()
    (out / "bundle.conf").unlink(missing_ok=True)  # back only when this run completes


def _tar(top: Path | str, archive: Path, *excludes: str) -> bool:
    command = ["tar", "-C", str(top), *(f"--exclude=./{e}" for e in excludes), "-czf", str(archive), "."]
    return subprocess.run(command, check=False).returncode == 0


def archive_spack(log: Log, spack: Spack, out: Path) -> None:
    log.info(f"packing Spack ({spack.root})")
    if not _tar(spack.root, out / "spack.tar.gz", ".git", "opt", "var/spack/cache", "var/spack/environments"):
        raise StepError(f"cannot pack {spack.root} into {out}/spack.tar.gz")


def archive_builtin_repo(log: Log, out: Path, repo: Path) -> None:
    top = str(repo).removesuffix("/repos/spack_repo/builtin")
    log.info(f"packing Spack's builtin packages ({top})")
    if not _tar(top, out / "spack-packages.tar.gz", ".git"):
        raise StepError(f"cannot pack {top} into {out}/spack-packages.tar.gz")


def fill_mirror(paths: Paths, log: Log, spack: Spack, out: Path) -> None:
    log.info(f"downloading every source of the toolchain into {out}/mirror")
    if not spack.run("-c", "view:false", "-e", paths.env, "mirror", "create", "-d", out / "mirror", "--all"):
        raise StepError("'spack mirror create' failed (its error is above)")
    log.info(f"downloading Spack's bootstrap (clingo, gnupg, patchelf) into {out}/bootstrap")
    if not spack.run("bootstrap", "mirror", "--binary-packages", out / "bootstrap"):
        raise StepError("'spack bootstrap mirror' failed (its error is above)")


def _hostname() -> str:
    done = subprocess.run(["hostname", "-f"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else socket.gethostname()


def signing_key(log: Log, spack: Spack, out: Path, environ: MutableMapping[str, str]) -> str:
    """The key that signs the build cache: its public half written to OUT/signing-key.pub;
    its fingerprint returned. The bundle's key is the one the lab will trust."""
    pub, key = out / "signing-key.pub", environ.get("PFSLAB_SPACK_SIGNING_KEY", "")
    require_cmd("gpg")
    pub.unlink(missing_ok=True)
    if key:
        if not spack.run("gpg", "export", pub, key):
            raise StepError(f"PFSLAB_SPACK_SIGNING_KEY={key}: 'spack gpg export' failed; is it in 'spack gpg list --signing'?")
    else:
        log.info("creating a signing key for this bundle (spack gpg create; set PFSLAB_SPACK_SIGNING_KEY to reuse one)")
        name = f"pfslab bundle {time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        if not spack.run("gpg", "create", "--comment", "signs this bundle's build cache", "--export", pub, name, f"pfslab@{_hostname()}"):
            raise StepError("'spack gpg create' failed (its error is above)")
    key = key_fingerprints(pub)
    if not re.fullmatch(r"[0-9A-F]{40}", key):
        raise StepError(f"{pub} should hold one public key, holds: {key or 'none'}")
    return key


def fill_buildcache(paths: Paths, log: Log, spack: Spack, out: Path, environ: MutableMapping[str, str]) -> None:
    if environ.get("PFSLAB_MIRROR_BINARIES", "1") == "0":
        log.info("PFSLAB_MIRROR_BINARIES=0: no build cache; the lab builds from the bundle's sources")
        shutil.rmtree(out / "buildcache", ignore_errors=True)
        (out / "signing-key.pub").unlink(missing_ok=True)
        return
    log.info("building the toolchain here to fill the build cache")
    if not spack.run("-c", "view:false", "-e", paths.env, "install"):
        raise StepError("'spack install' failed (its error is above); no bundle written")
    key = signing_key(log, spack, out, environ)
    log.info(f"signing the build cache with key {key}")
    if not spack.run("-c", "view:false", "-e", paths.env, "buildcache", "push", "--key", key, "--update-index", out / "buildcache"):
        raise StepError("'spack buildcache push' failed (its error is above)")


def bundle_key(out: Path) -> str:
    return key_fingerprints(out / "signing-key.pub") if (out / "buildcache").is_dir() else ""


def seal_bundle(paths: Paths, out: Path, version: str) -> None:
    shutil.copyfile(paths.lock, out / "spack.lock")
    summed = [*SUMMED, *(["signing-key.pub"] if (out / "signing-key.pub").is_file() else [])]
    (out / "SHA256SUMS").write_text("".join(f"{sha256_file(out / name)}  {name}\n" for name in summed))
    (out / "bundle.conf").write_text(
        "# pfslab air-gapped bundle, written by scripts/mirror; install with make toolchain MIRROR=<this dir>\n"
        "PFSLAB_BUNDLE_FORMAT=1\n"
        f"CREATED={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n"
        f"SPACK_VERSION={version}\n"
        f"SPACK_PACKAGES_COMMIT={release_pin(paths, 'SPACK_PACKAGES_COMMIT')}\n"
        f"SPACK_YAML_SHA256={sha256_file(paths.spack_yaml)}\n"
        f"SPACK_LOCK_SHA256={sha256_file(out / 'spack.lock')}\n"
        f"BINARIES={'yes' if (out / 'buildcache').is_dir() else 'no'}\n"
        f"SIGNING_KEY_FINGERPRINT={bundle_key(out)}\n"
    )


def _size(out: Path) -> str:
    done = subprocess.run(["du", "-sh", str(out)], stdout=subprocess.PIPE, text=True, check=False)
    return done.stdout.split("\t", 1)[0]


def run(environ: MutableMapping[str, str], log: Log) -> None:
    paths = Paths.from_environ(environ)
    out = absolute(environ.get("MIRROR_OUT") or f"{paths.root}/build/spack-bundle", environ)
    if not paths.spack_yaml.is_file():
        raise StepError(f"no spack.yaml in {paths.env}")
    prepare_out(out)
    ensure_prefix(paths)
    lock = lock_prefix(paths)
    try:
        spack = setup_spack(paths, log, environ, None)
        version = check_spack_version(paths, spack)
        log.info(f"Spack {version} at {spack.root}; writing the bundle {out}")
        repo = ensure_builtin_repo(paths, log, environ, None)
        write_repos_config(paths, repo)
        write_bundle_config(paths, None)
        log.info(f"concretizing {paths.spack_yaml}")
        # No --force: the bundle is made for the committed spack.lock.
        if not spack.concretize(paths.env):
            raise StepError("concretizing failed (Spack's error is above)")
        fill_mirror(paths, log, spack, out)
        fill_buildcache(paths, log, spack, out, environ)
        archive_spack(log, spack, out)
        archive_builtin_repo(log, out, repo)
        seal_bundle(paths, out, version)
        run_it = "carry it to the lab and run: make toolchain MIRROR=<its path>"
        if (out / "buildcache").is_dir():
            key = bundle_key(out)
            log.info(f"build cache signed by key {key} (signing-key.pub): write this fingerprint down apart from the bundle")
            log.info(f"bundle ready: {out} ({_size(out)}); {run_it} BUNDLE_KEY={key}")
        else:
            log.info(f"bundle ready: {out} ({_size(out)}); {run_it}")
    finally:
        lock.close()
