"""What a run was made with: enough to rebuild its report from the run directory alone.

``make bench`` stores, beside ReFrame's report, the lab file, the inventory, the
kit's git commit, the versions of every tool on the path the tests used, the file
system's release and the lab's declared departures from its source.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, calibration, deviations, labs, machine, references, registry, state, toolchain

#: How each tool tells its version. IOR and mdtest have no --version: the kit reads
#: theirs from each output header instead (the parsers keep it per result). A file
#: system's client is asked as its family says (version_commands).
VERSION_COMMANDS: dict[str, list[str]] = {
    "fio": ["fio", "--version"],
    "iozone": ["iozone", "-v"],
    "mpirun": ["mpirun", "--version"],
    "lmp": ["lmp", "-h"],
    "reframe": ["reframe", "--version"],
    "terraform": ["terraform", "version"],
}


def version_commands() -> dict[str, list[str]]:
    """VERSION_COMMANDS and each family's version_command, keyed by its program."""
    found = dict(VERSION_COMMANDS)
    for fam in registry.families().values():
        if fam.version_command:
            found.setdefault(fam.version_command[0], list(fam.version_command))
    return found
_VERSION = re.compile(r"(\d+\.\d+(?:[.\-_]\w+)*)")


def _first_version(text: str, tool: str) -> str | None:
    if tool == "iozone":
        match = re.search(r"Version \$Revision:\s*([\d.]+)", text)
        return match.group(1) if match else None
    if tool == "lmp":
        match = re.search(r"LAMMPS \(([^)]+)\)", text)
        return match.group(1) if match else None
    match = _VERSION.search(text)
    return match.group(1) if match else None


def tool_versions(search_path: str) -> dict[str, dict[str, str | None]]:
    found: dict[str, dict[str, str | None]] = {}
    for tool, command in version_commands().items():
        path = shutil.which(command[0], path=search_path)
        if path is None:
            found[tool] = {"path": None, "version": None}
            continue
        try:
            out = subprocess.run([path, *command[1:]], capture_output=True, text=True, timeout=20, check=False)
            text = out.stdout + out.stderr
        except (OSError, subprocess.TimeoutExpired):
            text = ""
        found[tool] = {"path": path, "version": _first_version(text, tool)}
    for tool in ("ior", "mdtest", "io_shell"):
        found[tool] = {"path": shutil.which(tool, path=search_path), "version": "from each output header"}
    return found


def git_state() -> dict[str, Any]:
    """The checkout's commit; on a lab's node the kit is an image's copy (no git): None."""
    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", "-C", str(KIT_ROOT), *args], capture_output=True, text=True, check=False)
        except OSError:
            return ""
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    return {"commit": commit or None, "dirty": bool(git("status", "--porcelain", "--untracked-files=no")) if commit else None}


def kit_digest() -> str | None:
    """An installed kit's digest (its manifest's sha256, pfslab/images/kit.py), if it has one."""
    manifest = KIT_ROOT / ".pfslab-manifest"
    return sha256(manifest) if manifest.is_file() else None


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record(run_dir: Path, lab_name: str, search_path: str) -> dict[str, Any]:
    """Copy the lab file and inventory into the run directory and write provenance.json."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lab_file = labs.lab_path(lab_name)
    shutil.copy2(lab_file, run_dir / "lab.yaml")
    # The lab as the run used it (extends applied) and its references: a report is
    # rebuilt from the run directory alone, even after the kit's files change.
    lab = state.lab(lab_name)
    (run_dir / "lab.json").write_text(json.dumps(lab, indent=2) + "\n")
    refs = references.path_for(lab_name)
    if refs.is_file():
        shutil.copy2(refs, run_dir / "references.yaml")
    inventory = state.inventory_path(lab_name)
    if inventory.is_file():
        shutil.copy2(inventory, run_dir / "inventory.json")
    # The thresholds the lab calibrated at lab-up judge this run: keep them with it.
    cal = calibration.path_for(lab_name)
    if cal.is_file():
        shutil.copy2(cal, run_dir / calibration.FILE_NAME)
    facts = machine.facts_for(lab)
    spack_lock = KIT_ROOT / "spack" / "spack.lock"
    data = {
        "lab": lab_name,
        "lab_file_sha256": sha256(lab_file),
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "kernel": platform.release(),
        "mode": os.environ.get("PFSLAB_MODE") or labs.setting(lab, "benchmark.default_mode"),
        "machine": {"id": machine.fingerprint(facts), "facts": facts, "description": machine.describe(facts)},
        "git": git_state(),
        "kit_digest": kit_digest(),
        "spack_lock_sha256": sha256(spack_lock) if spack_lock.is_file() else None,
        # The view the lab's jobs ran their tools from (benchmark.toolchain) and what it holds.
        "toolchain": {"view": toolchain.view_of(lab), "root": toolchain.root(toolchain.view_of(lab)),
                      "versions": toolchain.versions(toolchain.view_of(lab))},
        "tools": tool_versions(search_path),
        # What the nodes install beside what the source ran, and every departure from
        # the source (the lab file's deviations and those the kit derives): the report shows both.
        "filesystem": labs.release(lab),
        "deviations": [d.to_json() for d in deviations.listing(lab, lab_file)],
    }
    launched = launched_from(os.environ.get("PFSLAB_LAUNCHED_FROM", ""))
    if launched:
        data["launched_from"] = launched
    (run_dir / "provenance.json").write_text(json.dumps(data, indent=2) + "\n")
    return data


def launched_from(value: str) -> dict[str, str] | None:
    """A run on a remote lab's login node, launched by the kit's machine: ``PFSLAB_LAUNCHED_FROM``
    is "HOST [COMMIT]" of that machine (scripts/lib/login.sh), whose checkout the login
    node's kit is a copy of (lab-up checked its digest)."""
    host, _, commit = value.strip().partition(" ")
    if not host:
        return None
    entry = {"host": host, "via": "login node"}
    if commit.strip():
        entry["commit"] = commit.strip()
    return entry
