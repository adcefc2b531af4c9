"""What the kit's developer and CI commands share: their log lines and one-line refusals
(the form of scripts/lib/common.sh's ``log`` and ``die``), running a tool, a hash-locked
virtual environment of a tool's own, and Terraform's CLI settings.

Standard library only: ``scripts/deps`` runs :mod:`pfslab.dev.deps` with the system's
python3 before the kit's ``.venv`` exists.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.errors import KitError
from pfslab.spackstep.step import sha256_file


class Refusal(KitError):
    """Bad input or a precondition not met: one line, exit status 2 (``die``)."""


class Tool:
    """A command's log tag: ``[tag] message`` on stderr, stdout staying data."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def log(self, message: str) -> None:
        print(f"[{self.tag}] {message}", file=sys.stderr, flush=True)

    def main(self, body: Callable[[list[str]], int], argv: Sequence[str] | None = None) -> int:
        """Run ``body`` with the arguments; a :class:`Refusal` (any KitError) is one ``[tag] error:``
        line, exit 2.

        PFSLAB_ROOT is exported, as scripts/lib/common.sh did for the shell versions: the
        kit's commands these run read the same checkout."""
        os.environ["PFSLAB_ROOT"] = str(KIT_ROOT)
        try:
            return body(list(sys.argv[1:] if argv is None else argv))
        except KitError as err:  # a Refusal, or the kit's own error of a lab or file it read
            print(f"[{self.tag}] error: {err}", file=sys.stderr, flush=True)
            return 2


def rel(path: Path) -> str:
    """``path`` as the kit names it in messages: under the checkout, relative to it."""
    return str(path.relative_to(KIT_ROOT)) if path.is_relative_to(KIT_ROOT) else str(path)


def require_cmd(*commands: str) -> None:
    for command in commands:
        if shutil.which(command) is None:
            raise Refusal(f"missing command '{command}'; run 'make deps' first")


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise Refusal(f"{what} needs root (it creates network namespaces, mounts and daemons); run it as root or with sudo")


def stamp_matches(stamp: Path, want: str) -> bool:
    """Whether a stamp file holds ``want`` (what was installed from a file of that hash)."""
    try:
        return stamp.stat().st_size > 0 and stamp.read_text().strip() == want
    except OSError:
        return False


def ensure_locked_venv(tool: Tool, venv: Path, lock: Path, what: str) -> None:
    """A tool's own virtual environment (its dependencies conflict with the kit's), made from
    a hash-locked requirements file and made again when the lock changes: pip
    --require-hashes installs nothing the lock does not name and no file whose hash it
    does not list. ``what``: the package whose pinned line the log names (e.g. checkov)."""
    stamp, want = venv / ".pfslab-lock.sha256", sha256_file(lock)
    if os.access(venv / "bin" / "python", os.X_OK) and stamp_matches(stamp, want):
        return
    require_cmd("python3")
    pinned = re.search(rf"^{re.escape(what)}==\S*", lock.read_text(), re.M)
    tool.log(f"installing {pinned.group(0) if pinned else ''} into {rel(venv)} from {rel(lock)} (hash-checked)")
    shutil.rmtree(venv, ignore_errors=True)
    if subprocess.run(["python3", "-m", "venv", str(venv)]).returncode != 0:
        raise Refusal("python3 -m venv failed; install python3-venv")
    log = Path(f"{venv}.install.log")
    with log.open("w") as out:
        rc = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "--require-hashes",
                             "-r", str(lock)], stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise Refusal(f"pip install --require-hashes -r {rel(lock)} failed; see {log}")
    log.unlink()
    stamp.write_text(want + "\n")


def use_tf_cli_config() -> None:
    """Terraform's CLI settings (TF_CLI_CONFIG_FILE), as scripts/lib/common.sh's
    use_tf_cli_config: terraform/terraformrc, and when PFSLAB_TF_PROVIDERS names a folder
    of providers (a filesystem mirror), a copy under build/ installing every provider from
    it and none from the registry. ``terraform init`` checks both against the lock files."""
    base = KIT_ROOT / "terraform" / "terraformrc"
    os.environ["TF_CLI_CONFIG_FILE"] = str(base)
    mirror = os.environ.get("PFSLAB_TF_PROVIDERS", "")
    if not mirror:
        return
    if not (mirror.startswith("/") and '"' not in mirror and Path(mirror).is_dir()):
        raise Refusal(f"PFSLAB_TF_PROVIDERS={mirror} is not an absolute path of a folder (a Terraform filesystem mirror: "
                      "<dir>/registry.terraform.io/<namespace>/<type>/<version>/<os_arch>/)")
    config = KIT_ROOT / "build" / "terraformrc"
    config.parent.mkdir(parents=True, exist_ok=True)
    text = (base.read_text() + "\n# Written by use_tf_cli_config (scripts/lib/common.sh) from PFSLAB_TF_PROVIDERS.\n"
            f'provider_installation {{\n  filesystem_mirror {{\n    path = "{mirror}"\n  }}\n}}\n')
    partial = config.with_name(f"terraformrc.{os.getpid()}")
    partial.write_text(text)
    partial.replace(config)
    os.environ["TF_CLI_CONFIG_FILE"] = str(config)


def pfslab_cli() -> Path:
    """The kit's command in .venv (the kit's other commands, run as the shell ran them)."""
    cli = KIT_ROOT / ".venv" / "bin" / "pfslab"
    if not os.access(cli, os.X_OK):
        raise Refusal(f"the kit's command {cli} is missing; run 'make deps' first")
    return cli
