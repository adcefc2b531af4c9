"""The lab's life on the kit's machine: health (preflight, the run's watchdog, lab-status), a local
lab-up's repair, lab-down's sweep, the bench launch, with more to come (up). Shell scripts under scripts/ call it through
``python -m pfslab`` and stay thin."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.errors import KitError
from pfslab.model import Inventory, ModelError


class Refusal(KitError):
    """Bad input or a precondition not met: one line, exit 2 (scripts/lib/common.sh's die)."""


def log(tag: str, message: str) -> None:
    print(f"[{tag}] {message}", file=sys.stderr, flush=True)


def refuse(tag: str, err: Refusal) -> int:
    print(f"[{tag}] error: {err}", file=sys.stderr, flush=True)
    return 2


def build_dir() -> Path:
    """build/ of the checkout (PFSLAB_BUILD overrides it, as for the shell)."""
    return Path(os.environ.get("PFSLAB_BUILD") or KIT_ROOT / "build")


def inventory_at(path: Path) -> Inventory:
    """The lab's inventory, typed; one that is not what the kit writes is a refusal."""
    try:
        return Inventory.load(path)
    except ModelError as err:
        raise Refusal(str(err)) from None


def check_lab_name(lab: str) -> None:
    """A lab name is checked before a path is built from it: the schema's own pattern."""
    pattern = json.loads((KIT_ROOT / "labs" / "schema.json").read_text())["properties"]["name"]["pattern"]
    if not re.search(pattern, lab):
        raise Refusal(f"LAB={lab} is not a lab name (lower-case letters, digits, '.', '+', '-', at most 40, "
                      f"starting with a letter; pattern {pattern})")
