"""A target's adapter (targets/<target>/adapter.sh: the target_* functions that differ
between targets) and the shell functions lab-up and lab-down still call in the kit's
bash (scripts/lib/remote.sh, login.sh), run from Python: each call is one ``bash`` that
sources scripts/lib/common.sh and remote.sh, then the target's adapter, and runs one
function. Their refusals (``die``) print their own line and exit 2: :class:`Exit`
carries that status on without a second line.

The adapters read the lab through ``lab_field`` (PFSLAB_LAB_JSON, set by the caller) and
two helpers that scripts/lab used to define: ``state_dir`` and ``tf_cloud``, which runs
Terraform in the lab's remote root through ``pfslab labctl terraform``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pfslab import KIT_ROOT

#: What every call runs before its function (the target's adapter only when one is named).
PRELUDE = r'''set -euo pipefail
source "$PFSLAB_ROOT/scripts/lib/common.sh"
source "$PFSLAB_ROOT/scripts/lib/remote.sh"
state_dir() { echo "$PFSLAB_ROOT/build/$1"; }
tf_cloud() { "$PFSLAB_ROOT/.venv/bin/pfslab" labctl terraform "$@"; }
if [[ -n ${PFSLAB_ADAPTER_TARGET:-} ]]; then use_target "$PFSLAB_ADAPTER_TARGET"; fi
'''


class Exit(Exception):
    """End the command with this status: what failed has said why already."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@dataclass
class Shell:
    """Functions of the kit's shell, with the adapter of ``target`` (none: the libraries only)."""

    target: str = ""
    kit: Path = KIT_ROOT
    tag: str = "lab"
    _functions: frozenset[str] | None = field(default=None, repr=False)
    _console_cmd: str = ""

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ, PFSLAB_ROOT=str(self.kit), PFSLAB_LOG_TAG=self.tag,
                   PFSLAB_ADAPTER_TARGET=self.target)
        env.update(extra or {})
        return env

    def argv(self, function: str, args: Sequence[str], code: str = '"$@"') -> list[str]:
        """``bash -c`` running ``code`` after the prelude: by default the function
        ``function`` with ``args``; with other ``code``, that code with ``function`` and
        ``args`` as its "$@"."""
        return ["bash", "-c", PRELUDE + code, "pfslab-shell", function, *args]

    def script(self, code: str, *args: str) -> str:
        """Run shell ``code`` with ``args`` as its "$@"; its output without its last newline
        (:class:`Exit` when it fails)."""
        done = subprocess.run(["bash", "-c", PRELUDE + code, "pfslab-shell", *args], env=self.env(),
                              stdout=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0:
            raise Exit(done.returncode)
        return done.stdout.rstrip("\n")

    def run(self, function: str, *args: str, stdin: int | None = None) -> int:
        """Run a function, its output passed through; its exit status."""
        return subprocess.run(self.argv(function, args), env=self.env(), stdin=stdin, check=False).returncode

    def call(self, function: str, *args: str) -> None:
        """Run a function; :class:`Exit` with its status when it fails."""
        status = self.run(function, *args)
        if status != 0:
            raise Exit(status)

    def output(self, function: str, *args: str, stderr: int | None = None) -> tuple[int, str, str]:
        """Run a function, its stdout kept (and its stderr, with ``stderr=subprocess.PIPE``)."""
        done = subprocess.run(self.argv(function, args), env=self.env(), stdout=subprocess.PIPE, stderr=stderr,
                              text=True, check=False)
        return done.returncode, done.stdout, done.stderr or ""

    def value(self, function: str, *args: str) -> str:
        """A function's output without its last newline; :class:`Exit` when it fails."""
        status, out, _ = self.output(function, *args)
        if status != 0:
            raise Exit(status)
        return out.rstrip("\n")

    def _scan(self) -> None:
        # One bash for what the adapter defines: which target_* functions, and the
        # command its console needs (TARGET_CONSOLE_CMD).
        status, out, _ = self.output("eval", 'compgen -A function target_ || true; '
                                             'echo "console=${TARGET_CONSOLE_CMD:-}"')
        if status != 0:
            raise Exit(status)
        lines = out.splitlines()
        self._functions = frozenset(ln for ln in lines if ln.startswith("target_"))
        self._console_cmd = next((ln.split("=", 1)[1] for ln in lines if ln.startswith("console=")), "")

    def has(self, function: str) -> bool:
        """Whether the target's adapter defines ``function`` (bash's ``declare -F``)."""
        if self._functions is None:
            self._scan()
        assert self._functions is not None
        return function in self._functions

    def console_cmd(self) -> str:
        if self._functions is None:
            self._scan()
        return self._console_cmd
