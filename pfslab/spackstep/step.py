"""What every Spack step shares: its paths, its log lines and refusals, the release pins,
version order and signing-key fingerprints. Standard library only (see the package)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pfslab import KIT_ROOT

#: Where the kit keeps Spack, its scope, cache, store and views (PFSLAB_PREFIX).
DEFAULT_PREFIX = Path("/opt/pfslab")


class StepError(Exception):
    """A refusal or a failed step: printed as one ``[tag] error:`` line, exit 2."""


@dataclass(frozen=True)
class Log:
    """The step's log lines on stderr (stdout stays data), as common.sh's log/die."""

    tag: str

    def info(self, message: str) -> None:
        print(f"[{self.tag}] {message}", file=sys.stderr, flush=True)

    def error(self, message: str) -> None:
        print(f"[{self.tag}] error: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Paths:
    """The kit's checkout, its Spack environment and its prefix:
    ``spack-root/`` (Spack at the pinned release, when SPACK_ROOT is not set),
    ``spack-packages/<commit>/`` (Spack's builtin packages), ``spack-config/`` (the kit's
    config scope, SPACK_USER_CONFIG_PATH), ``spack-cache/`` (SPACK_USER_CACHE_PATH),
    ``store/``, ``view/``, ``view-seed/`` (fixed in spack/spack.yaml). ~/.spack is never
    read, so a node's result does not depend on who ran the step."""

    root: Path
    prefix: Path
    env: Path

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Paths:
        prefix = environ.get("PFSLAB_PREFIX") or str(DEFAULT_PREFIX)
        env = environ.get("PFSLAB_SPACK_ENV") or str(KIT_ROOT / "spack")
        return cls(root=KIT_ROOT, prefix=Path(prefix), env=Path(env))

    @property
    def release_file(self) -> Path:
        return self.root / "spack" / "release.conf"

    @property
    def spack_yaml(self) -> Path:
        return self.env / "spack.yaml"

    @property
    def lock(self) -> Path:
        return self.env / "spack.lock"

    @property
    def kit_scope(self) -> Path:
        return self.prefix / "spack-config"

    @property
    def cache(self) -> Path:
        return self.prefix / "spack-cache"


def release_pin(paths: Paths, key: str) -> str:
    """A pin of spack/release.conf (its last ``KEY=`` line), e.g. SPACK_RELEASE."""
    value = ""
    try:
        lines = paths.release_file.read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        if line.startswith(f"{key}="):
            value = line[len(key) + 1 :]
    if not value:
        raise StepError(f"spack/release.conf does not set {key}")
    return value


def absolute(path: str, environ: Mapping[str, str]) -> Path:
    """A user's path made absolute against the caller's working directory (its PWD,
    as the shell shows it, when that is where this process runs)."""
    if path.startswith("/"):
        return Path(path)
    pwd = environ.get("PWD", "")
    try:
        here = pwd if pwd.startswith("/") and os.path.samefile(pwd, ".") else os.getcwd()
    except OSError:
        here = os.getcwd()
    return Path(f"{here}/{path}")


def sha256_file(path: Path) -> str:
    """sha256 of a file, read in blocks (a base image is gigabytes); standard library
    only, so the image tooling and the Spack steps in images share it."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def require_cmd(name: str) -> None:
    if shutil.which(name) is None:
        raise StepError(f"missing command '{name}'; run 'make deps' first")


# ---- version order: GNU sort -V (filevercmp) -------------------------------------------------

_SUFFIX = re.compile(r"(\.[A-Za-z~][A-Za-z0-9~]*)*$")


def _order(char: str) -> int:
    if char.isdigit():
        return 0
    if char.isalpha():
        return ord(char)
    if char == "~":
        return -1
    return ord(char) + 256


def _verrevcmp(a: str, b: str) -> int:
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) else 0
            bc = _order(b[j]) if j < len(b) else 0
            if ac != bc:
                return ac - bc
            i, j = i + 1, j + 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        first = 0
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            first = first or ord(a[i]) - ord(b[j])
            i, j = i + 1, j + 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first:
            return first
    return 0


def version_compare(a: str, b: str) -> int:
    """<0, 0, >0 as ``sort -V`` orders a and b (a file-name suffix such as .dev0 counts
    only between otherwise equal versions)."""
    if a == b:
        return 0
    stem_a, stem_b = a[: _SUFFIX.search(a).start()], b[: _SUFFIX.search(b).start()]  # type: ignore[union-attr]
    return _verrevcmp(stem_a, stem_b) or _verrevcmp(a, b) or (a > b) - (a < b)


def version_ge(have: str, want: str) -> bool:
    """True when version ``have`` >= ``want`` (dotted numbers; a leading v is ignored)."""
    return version_compare(have.removeprefix("v"), want.removeprefix("v")) >= 0


# ---- signing keys ------------------------------------------------------------------------


def key_fingerprints(key_file: Path) -> str:
    """The fingerprints of the primary keys in KEY_FILE, comma-separated (gpg in a
    throwaway home: nothing is imported anywhere); empty when it holds none."""
    with tempfile.TemporaryDirectory() as home:
        try:
            shown = subprocess.run(
                ["gpg", "--homedir", home, "--batch", "--with-colons", "--show-keys", str(key_file)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False,
            )  # fmt: skip
        except OSError:
            return ""
    found, primary = [], False
    for line in shown.stdout.splitlines():
        fields = line.split(":")
        if fields[0] == "pub":
            primary = True
        elif primary and fields[0] == "fpr" and len(fields) > 9:
            found.append(fields[9])
            primary = False
    return ",".join(found)


def verify_key_fingerprint(key_file: Path, want: str, what: str, pinned_in: str) -> None:
    """KEY_FILE holds exactly one primary key, the one with fingerprint WANT (40 hex
    digits, spaces allowed)."""
    want = re.sub(r"\s", "", want).upper()
    if not re.fullmatch(r"[0-9A-F]{40}", want):
        raise StepError(f"{what}: no key fingerprint pinned ({pinned_in}); refusing to trust an unverified key")
    have = key_fingerprints(key_file)
    if have != want:
        raise StepError(f"{what}: key fingerprint mismatch: expected {want} ({pinned_in}), got {have or 'no key'}; not trusted")
