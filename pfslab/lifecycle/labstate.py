"""What scripts/lab's commands share: the lab as this command resolved it (once, kept
outside build/ until Terraform needs it), build/<lab>/, the active-lab mark and
build/env.sh, the target's registry flags and adapter, the kit's own command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, registry
from pfslab.lifecycle import Refusal, check_lab_name, log
from pfslab.lifecycle.adapter import Exit, Shell

TAG = "lab"


def say(message: str) -> None:
    log(TAG, message)


def require_cmd(*commands: str) -> None:
    for command in commands:
        if shutil.which(command) is None:
            raise Refusal(f"missing command '{command}'; run 'make deps' first")


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise Refusal(f"{what} needs root (it creates network namespaces, mounts and daemons); run it as root "
                      "or with sudo")


def field_of(data: dict[str, Any], path: str) -> Any:
    """A dotted field of a resolved lab (jq's getpath): None when absent."""
    value: Any = data
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def shown(value: Any) -> str:
    """A field as lab_field prints it: strings bare, other values as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@dataclass
class Kit:
    """The checkout this command works in."""

    root: Path = KIT_ROOT

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def active_file(self) -> Path:
        return self.build / "active-lab"

    @property
    def env_file(self) -> Path:
        return self.build / "env.sh"

    def state_dir(self, lab: str) -> Path:
        return self.build / lab

    def inventory(self, lab: str) -> Path:
        return self.state_dir(lab) / "inventory.json"

    def cli(self) -> str:
        return str(self.root / ".venv" / "bin" / "pfslab")

    def pfslab(self, *args: str, env: dict[str, str] | None = None) -> int:
        """The kit's command, its output passed through."""
        sys.stderr.flush()
        return subprocess.run([self.cli(), *args], env=env, check=False).returncode

    def recorded_lab(self) -> str | None:
        """The lab this checkout has up (build/active-lab), checked as a lab name."""
        if not (self.active_file.is_file() and self.active_file.stat().st_size > 0):
            return None
        lab = self.active_file.read_text().rstrip("\n")
        check_lab_name(lab)
        return lab

    def write_env(self, lab: str) -> None:
        """The lab becomes the active one, and build/env.sh points ReFrame at it. Written to a
        new file, then moved over the old one: a site lab's lab-up, run as a user, replaces
        the marks a root lab-up left in a build/ it may write."""
        staged = self.active_file.with_name("active-lab.new")
        staged.write_text(f"{lab}\n")
        staged.replace(self.active_file)
        staged = self.env_file.with_name("env.sh.new")
        staged.write_text(
            f"# Written by 'make lab-up': source it (the kit's venv activate does) to run ReFrame on lab {lab}.\n"
            f"export PFSLAB_ROOT='{self.root}'\n"
            f"export PFSLAB_LAB='{lab}'\n"
            f"export RFM_CONFIG_FILES='{self.root}/reframe/config/settings.py'\n")
        staged.replace(self.env_file)

    def forget(self, lab: str) -> None:
        """build/<lab> removed; the active mark and env.sh too when they name this lab."""
        shutil.rmtree(self.state_dir(lab), ignore_errors=True)
        if self.recorded_lab() == lab:
            self.active_file.unlink(missing_ok=True)
            self.env_file.unlink(missing_ok=True)
        try:
            self.build.rmdir()
        except OSError:
            pass


@dataclass
class Resolved:
    """The lab as this command resolved it: a private file (PFSLAB_LAB_JSON, which the
    kit's shell reads through lab_field) and its data."""

    name: str
    path: Path
    data: dict[str, Any]

    def field(self, path: str) -> Any:
        value = field_of(self.data, path)
        if value is None:
            raise Refusal(f"lab {self.name} has no field {path}")
        return value

    def text(self, path: str) -> str:
        return shown(self.field(path))

    @property
    def target(self) -> str:
        return str(self.field("target"))


@dataclass
class Command:
    """One scripts/lab command: the kit, the lab it resolved, the clock it reports with."""

    kit: Kit = field(default_factory=Kit)
    start: float = field(default_factory=time.monotonic)
    resolved: Resolved | None = None
    _temp: list[Path] = field(default_factory=list)

    def seconds(self) -> int:
        return int(time.monotonic() - self.start)

    def cleanup(self) -> None:
        for path in self._temp:
            path.unlink(missing_ok=True)

    def _keep(self, lab: str, text: str) -> Resolved:
        fd, name = tempfile.mkstemp()
        path = Path(name)
        self._temp.append(path)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        # The kit's shell (adapters, remote.sh) reads the same copy.
        os.environ["PFSLAB_LAB_JSON"] = str(path)
        self.resolved = Resolved(lab, path, json.loads(text))
        return self.resolved

    def local_settings(self, lab: str) -> list[str]:
        """A local lab's host-specific settings given at lab-up (BRIDGE, SUBNET); for a lab that
        is up, those its lab-up was given, so a repairing lab-up without them keeps the lab
        where it is."""
        bridge, subnet = os.environ.get("PFSLAB_BRIDGE", ""), os.environ.get("PFSLAB_SUBNET", "")
        kept = self.kit.state_dir(lab) / "lab.json"
        if kept.is_file() and kept.stat().st_size > 0:
            data = json.loads(kept.read_text())
            if target_flags(str(data.get("target"))).namespaces:
                bridge = bridge or str(field_of(data, "targets.local.bridge") or "")
                subnet = subnet or str(field_of(data, "network.subnet") or "")
        return (["--bridge", bridge] if bridge else []) + (["--subnet", subnet] if subnet else [])

    def resolve(self, lab: str) -> Resolved:
        """The lab validated, `extends` and defaults applied, its layout and instance derived
        (``pfslab lab show --instance``); its errors are one line each."""
        done = subprocess.run([self.kit.cli(), "lab", "show", lab, "--instance", *self.local_settings(lab)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        if done.returncode != 0:
            out = done.stdout.rstrip("\n").removeprefix("pfslab lab: ")
            for line in out.split("\n"):
                print(f"[{TAG}] error: {line}", file=sys.stderr)
            raise Exit(2)
        return self._keep(lab, done.stdout)

    def resolved_or_resolve(self, lab: str) -> Resolved:
        """Taking a lab down uses the copy its lab-up resolved: the lab as it was brought up,
        even when labs/ changed since."""
        kept = self.kit.state_dir(lab) / "lab.json"
        if kept.is_file() and kept.stat().st_size > 0:
            return self._keep(lab, kept.read_text())
        return self.resolve(lab)

    def lab(self) -> Resolved:
        assert self.resolved is not None
        return self.resolved


def target_flags(target: str) -> registry.Target:
    known = registry.targets()
    if target not in known:
        raise Refusal(f"target '{target}' has no targets/{target}/target.json or targets/{target}/adapter.sh")
    return known[target]


def use_target(kit: Kit, target: str) -> Shell:
    """The target's adapter (targets/<target>/adapter.sh), through the kit's shell."""
    folder = kit.root / "targets" / target
    if not ((folder / "target.json").is_file() and (folder / "adapter.sh").is_file()):
        raise Refusal(f"target '{target}' has no targets/{target}/target.json or targets/{target}/adapter.sh")
    return Shell(target, kit.root)
