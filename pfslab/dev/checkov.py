"""Static security checks of every Terraform directory (terraform/ and targets/) with
checkov (framework terraform), offline (scripts/checkov [CHECKOV_ARGS...]).

checkov lives in its own virtual environment, build/checkov-venv (made on first use from
requirements-checkov.lock, hash-checked; PFSLAB_CHECKOV_VENV chooses another), because its
dependencies conflict with the kit's. Without a Prisma Cloud API key checkov knows no
severities, so every failed check fails the run: a check that does not apply is skipped in
the code, next to the resource, with its reason (#checkov:skip=CKV_...:why).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.dev.common import Refusal, Tool, ensure_locked_venv

TOOL = Tool("checkov")
#: The version is pinned in requirements-checkov.txt; this lock (scripts/lock-python) holds
#: it and every dependency with their sha256 hashes.
LOCK = KIT_ROOT / "requirements-checkov.lock"


def body(argv: list[str]) -> int:
    venv = Path(os.environ.get("PFSLAB_CHECKOV_VENV") or KIT_ROOT / "build" / "checkov-venv")
    ensure_locked_venv(TOOL, venv, LOCK, "checkov")
    # --skip-download and BC_SKIP_MAPPING: no call to Prisma Cloud (no key, no network).
    # The shared Terraform and every target's folder (its root and module).
    result = subprocess.run([str(venv / "bin" / "checkov"), "-d", str(KIT_ROOT / "terraform"), "-d", str(KIT_ROOT / "targets"),
                             "--framework", "terraform", "--skip-download", "--quiet", "--compact", "--output", "cli", *argv],
                            env={**os.environ, "BC_SKIP_MAPPING": "TRUE"}, capture_output=True, text=True)
    sys.stderr.write("".join(line + "\n" for line in result.stdout.splitlines() if line))
    if result.returncode != 0:
        if "Failed checks" not in result.stdout:
            sys.stderr.write(result.stderr)
        raise Refusal("checkov found failed checks (above): fix them, or skip one that does not apply with "
                      "'#checkov:skip=CKV_...:reason' in the resource")
    TOOL.log("checkov: no failed check in terraform/ and targets/ (skips carry their reasons in the code)")
    return 0


if __name__ == "__main__":
    sys.exit(TOOL.main(body))
