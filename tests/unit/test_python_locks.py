"""Python packages are installed only from hash-locked files made from the pinned inputs.

The pinned inputs (``requirements*.txt``) say what the kit chose; ``make lock`` generates
the lock files (``requirements*.lock``: every transitive package, with sha256 hashes)
from them. These tests fail while a lock is unhashed or out of step with its inputs,
and while an installer could bypass it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[2]

# Lock file -> the pinned inputs it is generated from (scripts/lock-python).
PIP_LOCKS = {
    "requirements.lock": ["requirements.txt", "requirements-build.txt"],
    "requirements-dev.lock": ["requirements.txt", "requirements-build.txt", "requirements-dev.txt"],
    "requirements-checkov.lock": ["requirements-checkov.txt"],
    "requirements-emulator.lock": ["requirements-emulator.txt"],
}


def normalize(name: str) -> str:
    """PEP 503 name: what pip-compile writes for ``PyYAML`` is ``pyyaml``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def direct_pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a pinned input, comments and blank lines left out."""
    pins: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        # An extra (moto[server]) selects dependencies; the lock pins the package itself.
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[A-Za-z0-9,._-]+\])?==([^\s;]+)", line)
        assert match, f"{path.name}: '{line}' is not pinned as name==version"
        pins[normalize(match.group(1))] = match.group(2)
    return pins


def locked(path: Path) -> dict[str, tuple[str, int]]:
    """Each package of a pip-compile lock: its version and how many --hash it carries."""
    entries: dict[str, tuple[str, int]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", path.read_text(encoding="utf-8")):
        match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", block)
        if match:
            entries[normalize(match.group(1))] = (match.group(2), block.count("--hash=sha256:"))
    return entries


@pytest.mark.parametrize("lock", sorted(PIP_LOCKS))
def test_every_locked_package_is_pinned_with_hashes(lock: str) -> None:
    entries = locked(KIT / lock)
    assert entries, f"{lock} lists no package"
    unhashed = sorted(name for name, (_, hashes) in entries.items() if hashes == 0)
    assert not unhashed, f"{lock}: no --hash for {unhashed}; run 'make lock'"
    text = (KIT / lock).read_text(encoding="utf-8")
    assert "--index-url" not in text and "--find-links" not in text, f"{lock} names a host's index"


@pytest.mark.parametrize("lock", sorted(PIP_LOCKS))
def test_lock_holds_every_direct_pin_at_its_version(lock: str) -> None:
    entries = locked(KIT / lock)
    for source in PIP_LOCKS[lock]:
        for name, version in direct_pins(KIT / source).items():
            assert name in entries, f"{source} pins {name}=={version}, {lock} lacks it: run 'make lock'"
            assert entries[name][0] == version, (
                f"{source} pins {name}=={version}, {lock} has {entries[name][0]}: run 'make lock'"
            )


def test_the_dev_lock_agrees_with_the_runtime_lock() -> None:
    # Both install into .venv: a package both need must have one version.
    runtime, dev = locked(KIT / "requirements.lock"), locked(KIT / "requirements-dev.lock")
    differ = {n: (runtime[n][0], dev[n][0]) for n in runtime.keys() & dev.keys() if runtime[n][0] != dev[n][0]}
    assert not differ, f"requirements.lock and requirements-dev.lock differ: {differ}; run 'make lock'"
    assert runtime.keys() <= dev.keys()


def test_setuptools_for_the_editable_build_is_locked() -> None:
    # pyproject's build backend, installed from the lock: the editable install uses it
    # with --no-build-isolation instead of fetching an unhashed one.
    pyproject = (KIT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'build-backend = "setuptools.build_meta"' in pyproject
    assert "setuptools" in locked(KIT / "requirements.lock")


def test_installers_use_only_the_locks_with_require_hashes() -> None:
    # scripts/deps runs pfslab/dev/deps.py; the tools with environments of their own
    # (checkov, the cloud emulator) go through pfslab/dev/common.py's ensure_locked_venv.
    deps = (KIT / "pfslab" / "dev" / "deps.py").read_text(encoding="utf-8")
    installs = [line for line in deps.splitlines() if 'bin("pip")), "install",' in line]
    assert installs, "pfslab/dev/deps.py installs nothing with pip?"
    for line in installs:
        assert "--require-hashes" in line or "--no-build-isolation" in line, line
    assert 'self.requirements(self.root / "requirements.lock")' in deps
    assert 'venv.requirements(venv.root / "requirements-dev.lock")' in deps
    assert "requirements.txt\"" not in deps and "requirements-dev.txt\"" not in deps
    common = (KIT / "pfslab" / "dev" / "common.py").read_text(encoding="utf-8")
    assert re.search(r'"install", "-q", "--disable-pip-version-check", "--require-hashes",\s*"-r", str\(lock\)', common)
    # The tools with environments of their own install only their locks, through it.
    for module, lock in (("checkov", "requirements-checkov.lock"), ("cloud_emulator", "requirements-emulator.lock")):
        text = (KIT / "pfslab" / "dev" / f"{module}.py").read_text(encoding="utf-8")
        assert lock in text and "ensure_locked_venv(TOOL, " in text, module
        assert "pip install" not in text and '"pip"' not in text and '"install"' not in text, module
