"""``make lint`` (scripts/lint): shellcheck every shell script of the kit, mypy --strict its
Python package and the targets' Python modules (targets/<t>/*.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.dev.common import Refusal, Tool, require_cmd

TOOL = Tool("lint")
SHELL_TREES = ("scripts", "families", "targets", ".ci", "packer")
NOT_SHELL = (".py", ".md", ".yaml", ".json", ".txt", ".hcl", ".tf", ".bats")
SHEBANG = re.compile(r"^#!.*\b(ba)?sh\b")


def tracked(root: Path, *pathspecs: str) -> list[str]:
    """Files git knows under the pathspecs, committed or not (ignored ones left out)."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard", "--", *pathspecs],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def is_shell(path: Path) -> bool:
    """A shell script: *.sh or *.bash, or a file of another kind whose first line is a
    sh or bash shebang."""
    if path.name.endswith((".sh", ".bash")):
        return True
    if path.name.endswith(NOT_SHELL):
        return False
    try:
        with path.open("rb") as f:
            first = f.readline().decode(errors="replace")
    except OSError:
        return False
    return bool(SHEBANG.match(first))


def shell_scripts(root: Path) -> list[Path]:
    return [root / f for f in tracked(root, *SHELL_TREES) if is_shell(root / f)]


def mypy(root: Path, target: str) -> bool:
    return subprocess.run([str(root / ".venv" / "bin" / "mypy"), "--config-file", str(root / "pyproject.toml"),
                           "--no-error-summary", target], cwd=root).returncode == 0


def body(argv: list[str]) -> int:
    del argv  # scripts/lint takes none
    root = KIT_ROOT
    require_cmd("shellcheck")
    files = shell_scripts(root)
    if not files:
        raise Refusal("found no shell scripts to check")
    rc = subprocess.run(["shellcheck", "-x", *map(str, files)], cwd=root).returncode
    if rc != 0:
        return rc
    TOOL.log(f"shellcheck: {len(files)} scripts clean")
    if not mypy(root, "pfslab"):
        raise Refusal("mypy found problems in pfslab/ (listed above)")
    # A target's Python module (targets/<t>/<python>, e.g. targets/aws/cloud.py) is in no
    # package: mypy names it by its file name, so two targets' cloud.py would clash in one
    # run. One run each.
    modules = tracked(root, "targets/*/*.py")
    for module in modules:
        if not mypy(root, module):
            raise Refusal(f"mypy found problems in {module} (listed above)")
    TOOL.log(f"mypy --strict: pfslab/ and {len(modules)} target module(s) ({' '.join(modules) or 'none'}) clean")
    return 0


if __name__ == "__main__":
    sys.exit(TOOL.main(body))
