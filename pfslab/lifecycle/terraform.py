"""Terraform driven for a lab (scripts/lab up and down): the lab's root (the target's
terraform_root, or its adapter's target_root), its state and data under build/<lab>/,
the kit's CLI settings, the variables built from the resolved lab, the logged apply and
destroy (a line as each role starts or stops), and why an init could not install the
providers."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.lifecycle import Refusal, log

TAG = "lab"
MIRROR_VAR = "PFSLAB_TF_PROVIDERS"
#: What Terraform prints as a role's resource is made or removed (the local root's
#: ``role["node/role"]``), and the line lab-up and lab-down show for it.
_ROLE_DONE = re.compile(r'.*role\["([^/"]*)/([^"]*)"\]: (Creation|Destruction) complete after ([0-9a-z]*)')


def role_line(line: str) -> str | None:
    """``[lab] started ROLE on NODE (TIME)`` (or stopped) for Terraform's line of a role's resource."""
    m = _ROLE_DONE.match(line)
    if m is None:
        return None
    node, role, done, took = m.groups()
    return f"[{TAG}] {'started' if done == 'Creation' else 'stopped'} {role} on {node} ({took})"


def cli_config(kit: Path, env: Mapping[str, str]) -> Path:
    """Terraform's CLI settings (TF_CLI_CONFIG_FILE): terraform/terraformrc, and when
    PFSLAB_TF_PROVIDERS names a folder of providers (an air-gapped site's filesystem
    mirror), a copy of it under build/ that installs every provider from that folder and
    none from the registry. Made when Terraform runs: a check that refuses before writes
    nothing (scripts/lib/common.sh's use_tf_cli_config says the same)."""
    rc = kit / "terraform" / "terraformrc"
    mirror = env.get(MIRROR_VAR, "")
    if not mirror:
        return rc
    if not (mirror.startswith("/") and '"' not in mirror and Path(mirror).is_dir()):
        raise Refusal(f"{MIRROR_VAR}={mirror} is not an absolute path of a folder (a Terraform filesystem mirror: "
                      "<dir>/registry.terraform.io/<namespace>/<type>/<version>/<os_arch>/)")
    config = kit / "build" / "terraformrc"
    config.parent.mkdir(parents=True, exist_ok=True)
    staged = config.with_name(f"terraformrc.{os.getpid()}")
    staged.write_text(rc.read_text() + "\n# Written by use_tf_cli_config (scripts/lib/common.sh) from "
                      f"{MIRROR_VAR}.\nprovider_installation {{\n  filesystem_mirror {{\n    path = \"{mirror}\"\n"
                      "  }\n}\n")
    staged.replace(config)
    return config


def providers_of(directory: Path) -> str:
    """The providers a Terraform directory declares (required_providers sources), comma-separated."""
    found: set[str] = set()
    for tf in sorted(directory.glob("*.tf")):
        for line in tf.read_text().splitlines():
            m = re.match(r'^ *source *= *"([^./"][^"]*)"', line)
            if m:
                found.add(m.group(1))
    return ",".join(sorted(found))


def providers_unavailable(directory: Path, init_log: str, env: Mapping[str, str]) -> str:
    """Why a directory's providers cannot be installed here, from its init log (empty: they
    can, or init failed for another reason; a package that does not match the lock file is
    an error, never "unavailable")."""
    text = " ".join(init_log.split())
    if "doesn't match any of the checksums" in text:
        return ""
    if "was not found in any of the search locations" in text:
        return f"its providers ({providers_of(directory)}) are not in {MIRROR_VAR}={env.get(MIRROR_VAR, '')}"
    if "Failed to query available provider packages" in text or "could not connect to registry" in text:
        return (f"its providers ({providers_of(directory)}) cannot be installed: no registry access and no "
                f"{MIRROR_VAR} folder holding them")
    return ""


@dataclass
class Terraform:
    """Terraform for one lab in one root: ``terraform -chdir=ROOT ...`` with the lab's data
    (TF_DATA_DIR=build/<lab>/.terraform) and state (build/<lab>/terraform.tfstate)."""

    lab: str
    root: Path
    state_dir: Path
    kit: Path = KIT_ROOT

    @property
    def state(self) -> Path:
        return self.state_dir / "terraform.tfstate"

    @property
    def data_dir(self) -> Path:
        return self.state_dir / ".terraform"

    def argv(self, args: Sequence[str]) -> list[str]:
        return ["terraform", f"-chdir={self.root}", *args]

    def env(self) -> dict[str, str]:
        return dict(os.environ, TF_IN_AUTOMATION="1", TF_DATA_DIR=str(self.data_dir),
                    TF_CLI_CONFIG_FILE=str(cli_config(self.kit, os.environ)))

    def run(self, args: Sequence[str], stdout: int | None = None, stderr: int | None = None,
            to: Path | None = None) -> int:
        """Terraform's exit status; its output to ``to`` (stdout, and stderr when
        ``stderr`` is STDOUT) or passed through."""
        env = self.env()
        if to is None:
            return subprocess.run(self.argv(args), env=env, stdout=stdout, stderr=stderr, check=False).returncode
        with to.open("w") as out:
            return subprocess.run(self.argv(args), env=env, stdout=out, stderr=stderr, check=False).returncode

    def output_to(self, name: str, path: Path) -> int:
        """``terraform output -json NAME`` written whole to ``path`` (through a new file)."""
        staged = path.with_name(path.name + ".new")
        status = self.run(["output", "-json", name], to=staged)
        if status == 0:
            staged.replace(path)
        return status

    def logged(self, args: Sequence[str], log_file: Path, shown: Callable[[str], str | None] = role_line) -> int:
        """Apply or destroy with its whole output kept in ``log_file`` and a line on stderr
        for each line ``shown`` names (a role started or stopped: nothing long is silent)."""
        with log_file.open("w") as kept, subprocess.Popen(self.argv([*args, "-no-color"]), env=self.env(),
                                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                           text=True, errors="replace") as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                kept.write(line)
                kept.flush()
                said = shown(line.rstrip("\n"))
                if said is not None:
                    print(said, file=sys.stderr, flush=True)
        return proc.returncode


def tail(path: Path, count: int = 15) -> None:
    """The last lines of a log, on stderr (what failed, before the one-line refusal)."""
    lines = path.read_text(errors="replace").splitlines(keepends=True) if path.is_file() else []
    sys.stderr.write("".join(lines[-count:]))
    sys.stderr.flush()


def said(path: Path, pattern: str) -> None:
    """Terraform's summary lines (``Apply complete``, ``Destroy complete``), as ``[lab] terraform: ...``."""
    if not path.is_file():
        return
    for line in path.read_text(errors="replace").splitlines():
        if re.search(pattern, line):
            print(f"[{TAG}] terraform: {line}", file=sys.stderr, flush=True)


def lab_vars(state_dir: Path, resolved: Path, kit: Path = KIT_ROOT) -> list[str]:
    """The variables every root takes: the lab as this command resolved it (kept with the
    lab's state from here on), the kit and the state folder."""
    state_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(resolved, state_dir / "lab.json")
    return ["-var", f"lab_file={state_dir}/lab.json", "-var", f"kit_root={kit}", "-var", f"state_root={state_dir}"]


def ssh_key(state_dir: Path, lab: str) -> Path:
    """The lab's SSH key, made before apply: only the public half goes to Terraform."""
    directory = state_dir / "ssh"
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    key = directory / "id_ed25519"
    if not (key.is_file() and key.stat().st_size > 0):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"pfslab-{lab}", "-f", str(key)],
                       stdout=subprocess.DEVNULL, check=True)
    return directory / "id_ed25519.pub"


def expiry(state_dir: Path, hours: float, now: datetime | None = None) -> str:
    """The expiry tag, fixed at the first lab-up so later applies do not change the tags."""
    path = state_dir / "expiry"
    if not (path.is_file() and path.stat().st_size > 0):
        at = (now or datetime.now(timezone.utc)) + timedelta(hours=hours)
        path.write_text(at.strftime("%Y-%m-%dT%H:%M:%SZ") + "\n")
    return path.read_text().rstrip("\n")


def deployment(state_dir: Path) -> str:
    """The deployment tag: a random id drawn at the first lab-up and kept with the lab's state.
    What carries it was made by this lab's lab-up (lab-down removes it, also what an apply
    killed part way left out of the state); what carries the lab's tags without it was
    made by someone else (lab-down only reports it, unless PURGE=1)."""
    path = state_dir / "deployment"
    if not (path.is_file() and path.stat().st_size > 0):
        path.write_text(secrets.token_hex(8))
    return path.read_text()


def stop_orphan_providers(lab: str, state_dir: Path, proc: Path = Path("/proc")) -> None:
    """Terraform killed by SIGKILL leaves its provider running (nothing tells it); one the
    lab's own .terraform holds is this lab's alone: it is stopped, by its path."""
    providers = os.path.realpath(state_dir / ".terraform" / "providers")
    for entry in proc.glob("[0-9]*"):
        try:
            exe = os.readlink(entry / "exe")
        except OSError:
            continue
        if not exe.startswith(providers + "/"):
            continue
        log(TAG, f"stopping process {entry.name}: a Terraform provider of lab {lab} whose terraform was killed")
        try:
            os.kill(int(entry.name), 15)
        except OSError:
            pass
