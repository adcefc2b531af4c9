"""``make lock`` (scripts/lock-python): regenerate the hash-locked Python requirement files
from their pinned inputs, on a host that reaches PyPI. The inputs hold the versions the kit
chose (one fact, one place); the locks add every transitive package and the sha256 of each
of its files, and scripts/deps and scripts/checkov install only from them (pip
--require-hashes). Versions are resolved for this host's python3 (Debian 12: 3.11 on
Linux); tests/unit/test_python_locks.py fails while a lock is out of step with its inputs.
pip-tools runs from a throwaway environment (build/pip-tools-venv), never .venv.
"""

from __future__ import annotations

import os
import subprocess
import sys

from pfslab import KIT_ROOT
from pfslab.dev.common import Refusal, Tool, rel

TOOL = Tool("lock")
PIP_TOOLS_VERSION = "7.6.2"
TOOLS = KIT_ROOT / "build" / "pip-tools-venv"

#: Each lock and pip-compile's inputs for it. The dev lock is constrained by the runtime
#: one (-c): both install into .venv, so a package both need has one version.
LOCKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("requirements.lock", ("requirements.txt", "requirements-build.txt")),
    ("requirements-dev.lock", ("-c", "requirements.lock", "requirements.txt", "requirements-build.txt",
                               "requirements-dev.txt")),
    ("requirements-checkov.lock", ("requirements-checkov.txt",)),      # build/checkov-venv
    ("requirements-emulator.lock", ("requirements-emulator.txt",)),    # build/cloud-emulator/venv
)


def ensure_pip_tools() -> None:
    compile_ = TOOLS / "bin" / "pip-compile"
    if os.access(compile_, os.X_OK):
        version = subprocess.run([str(compile_), "--version"], capture_output=True, text=True).stdout.strip()
        if version.endswith(f" {PIP_TOOLS_VERSION}"):
            return
    TOOL.log(f"installing pip-tools {PIP_TOOLS_VERSION} into {rel(TOOLS)}")
    if subprocess.run(["python3", "-m", "venv", str(TOOLS)]).returncode != 0:
        raise Refusal("python3 -m venv failed; install python3-venv")
    if subprocess.run([str(TOOLS / "bin" / "pip"), "install", "-q", f"pip-tools=={PIP_TOOLS_VERSION}"],
                      stdout=sys.stderr).returncode != 0:
        raise Refusal(f"pip install pip-tools=={PIP_TOOLS_VERSION} failed (above)")


def compile_lock(out: str, inputs: tuple[str, ...]) -> None:
    """No index URL or find-links of this host goes into the file, only names, versions and hashes."""
    TOOL.log(f"writing {out} from {' '.join(inputs)}")
    env = {**os.environ, "PIP_FIND_LINKS": "", "CUSTOM_COMPILE_COMMAND": "make lock"}
    if subprocess.run([str(TOOLS / "bin" / "pip-compile"), "-q", "--generate-hashes", "--allow-unsafe", "--strip-extras",
                       "--no-emit-index-url", "--no-emit-find-links", "-o", out, *inputs], cwd=KIT_ROOT, env=env).returncode:
        raise Refusal(f"pip-compile of {out} failed (above)")


def body(argv: list[str]) -> int:
    del argv  # scripts/lock-python takes none
    ensure_pip_tools()
    for out, inputs in LOCKS:
        compile_lock(out, inputs)
    TOOL.log("done: review 'git diff -- requirements*.lock', then 'make deps' installs them")
    return 0


if __name__ == "__main__":
    sys.exit(TOOL.main(body))
