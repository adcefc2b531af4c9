"""A node's toolchain profile: what its clients need beyond spack/spack.yaml.

spack.yaml is the toolchain of x86_64 clients of any file system (the committed
spack.lock). Two things differ between labs' clients and cannot be one lock: the machine
(an aarch64 client runs other binaries) and what a file system's family adds (BeeGFS:
IOR +beegfs, compiled against the BeeGFS client headers, which only BeeGFS clients have).
A family says what it adds in its family.json (``toolchain``: Spack requirements, and
system packages taken as externals, whose versions are the node's). A profile states
them in a config scope (DIR/packages.yaml) that Spack reads with -C, above the
environment's own settings; the default profile has none.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pfslab.spackstep.step import StepError

#: The Spack target of each machine (uname -m) the kit builds for; None: spack.yaml's own.
TARGETS: dict[str, str | None] = {"x86_64": None, "aarch64": "aarch64"}
#: The target spack.yaml pins on every requirement list.
SPACK_YAML_TARGET = "x86_64_v2"


def profile_target(machine: str) -> str | None:
    """The Spack target of MACHINE; None for spack.yaml's own (x86_64_v2)."""
    if machine not in TARGETS:
        raise StepError(f"toolchain: machine '{machine}' (uname -m) is not one the kit builds for ({', '.join(TARGETS)})")
    return TARGETS[machine]


def family_file(root: Path, filesystem: str) -> Path:
    """families/<filesystem>/family.json, or a refusal naming the known file systems."""
    path = root / "families" / filesystem / "family.json"
    if not (path.is_file() and path.stat().st_size):
        known = [str(json.loads(p.read_text()).get("filesystem")) for p in sorted((root / "families").glob("*/family.json"))]
        raise StepError(f"unknown file system '{filesystem}': one of {', '.join(known)} (families/<fs>/family.json)")
    return path


def _family(root: Path, filesystem: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(family_file(root, filesystem).read_text())
    return data


def family_toolchain(root: Path, filesystem: str) -> dict[str, Any] | None:
    """What the family of FILESYSTEM adds to its clients' toolchain (family.json's
    ``toolchain``); None when it adds nothing."""
    toolchain = _family(root, filesystem).get("toolchain")
    return toolchain if isinstance(toolchain, dict) else None


def _installed_version(deb: str, rpm: str) -> str:
    """The installed version of a system package (epoch and release dropped), or ''."""
    if shutil.which("dpkg-query"):
        command = ["dpkg-query", "-W", "-f", "${Version}", deb]
    elif shutil.which("rpm"):
        command = ["rpm", "-q", "--qf", "%{VERSION}", rpm]
    else:
        return ""
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    version = done.stdout.strip("\n")
    return version.split(":", 1)[-1].split("-", 1)[0]


def external_versions(root: Path, filesystem: str, environ: Mapping[str, str]) -> list[str]:
    """The installed version of each system package the family of FILESYSTEM takes as a
    Spack external (toolchain.externals), in the family file's order, e.g. 7.4.5; a
    refusal naming the package when it is not installed (PFSLAB_SYSROOT: tests' root)."""
    family = _family(root, filesystem)
    out = []
    for external in (family.get("toolchain") or {}).get("externals") or []:
        spack, deb, rpm, path = (str(external.get(k) or "") for k in ("spack", "deb", "rpm", "file"))
        version = _installed_version(deb, rpm)
        if not (re.fullmatch(r"[0-9]+(\.[0-9]+)+", version) and Path(environ.get("PFSLAB_SYSROOT", "") + path).is_file()):
            raise StepError(
                f"toolchain: the {filesystem} toolchain profile takes {spack} from the system ({path}), and {deb} (deb) / "
                f"{rpm} (rpm) is not installed; 'scripts/roles/{family.get('family')} install client' installs it"
            )
        out.append(version)
    return out


def retargeted_packages(spack_yaml: str, target: str) -> list[str]:
    """spack.yaml's packages section for another target: every requirement list replaced
    (require::) by the same list with spack.yaml's target swapped for TARGET. Spack gives
    a package with requirements of its own none of `all`'s, so each list carries the
    target, and only replacing the lists replaces it."""
    out, inside = [], False
    for line in spack_yaml.splitlines():
        if line == "  packages:":
            inside = True
            continue
        if inside and re.match(r"  [^ #]", line):
            inside = False
        if not inside or re.match(r" *#", line) or not line:
            continue
        line = line.removeprefix("  ")
        line = re.sub(r"^( *)require:$", r"\1require::", line)
        out.append(line.replace(f"target={SPACK_YAML_TARGET}", f"target={target}"))
    return out


def _text(value: Any) -> str:
    """A value as jq's string interpolation writes it."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def profile_yaml(machine: str, filesystem: str, toolchain: dict[str, Any] | None, versions: Sequence[str], spack_yaml: str) -> str | None:
    """The packages.yaml of the profile of MACHINE clients on FILESYSTEM ('' = any), given
    the family's toolchain and the versions of its externals; None for the default."""
    target = profile_target(machine)
    if target is None and toolchain is None:
        return None
    externals = (toolchain or {}).get("externals") or []
    if len(versions) < len(externals):
        names = ", ".join(_text(e.get("spack")) for e in externals)
        raise StepError(f"toolchain: the {filesystem} profile needs the installed versions of {names}")
    # The header is byte for byte the shell step's: the file is part of the inputs digest.
    lines = [f"# Written by scripts/lib/spack.sh: the toolchain profile of {machine} clients{' of ' + filesystem if filesystem else ''}.",
             "packages:"]  # fmt: skip
    if target is not None:
        lines += retargeted_packages(spack_yaml, target)
    for name, wanted in ((toolchain or {}).get("require") or {}).items():
        lines += [f"  {name}:", "    require:", *(f"    - {_text(v)}" for v in wanted)]
    for index, external in enumerate(externals):
        lines += [f"  {_text(external.get('spack'))}:", "    buildable: false", "    externals:",
                  f"    - spec: {_text(external.get('spack'))}@{versions[index]}",
                  f"      prefix: {_text(external.get('prefix'))}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def write_profile_scope(root: Path, spack_yaml: Path, directory: Path, machine: str, filesystem: str, versions: Sequence[str]) -> bool:
    """The profile into DIRECTORY/packages.yaml (removed for the default profile); True
    when it wrote one."""
    profile_target(machine)
    toolchain = family_toolchain(root, filesystem) if filesystem else None
    shutil.rmtree(directory, ignore_errors=True)
    text = profile_yaml(machine, filesystem, toolchain, versions, spack_yaml.read_text())
    if text is None:
        return False
    directory.mkdir(parents=True)
    (directory / "packages.yaml").write_text(text)
    return True
