"""What is running: the active lab, its inventory and where runs are stored.

``make lab-up`` writes ``build/active-lab`` and ``build/<lab>/inventory.json``;
everything that needs to know the running lab reads them through here.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, names

BUILD_DIR: Path = KIT_ROOT / "build"
ACTIVE_FILE: Path = BUILD_DIR / "active-lab"
RUNS_DIR: Path = BUILD_DIR / "runs"


def active_lab() -> str | None:
    """The lab that is up (``PFSLAB_LAB`` overrides, for runs against another checkout's lab)."""
    name = os.environ.get("PFSLAB_LAB") or (ACTIVE_FILE.read_text().strip() if ACTIVE_FILE.is_file() else "")
    return name or None


def inventory_path(lab: str) -> Path:
    return BUILD_DIR / lab / "inventory.json"


def inventory(lab: str) -> dict[str, Any] | None:
    """The running lab's inventory, or None when the lab is not up."""
    path = inventory_path(lab)
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def resolved_lab_path(lab: str) -> Path:
    """The lab as ``make lab-up`` resolved it (``pfslab lab show``), with its layout."""
    return BUILD_DIR / lab / "lab.json"


def lab(name: str) -> dict[str, Any]:
    """The lab as this command must see it, resolved once with its layout: during a run,
    the run's copy (``$PFSLAB_RUN_DIR/lab.json``); for a lab that is up, the copy its
    lab-up wrote; otherwise resolved now from ``labs/``."""
    from pfslab import labs, layout

    run_dir = os.environ.get("PFSLAB_RUN_DIR")
    candidates = [Path(run_dir) / "lab.json"] if run_dir else []
    if inventory(name) is not None:
        candidates.append(resolved_lab_path(name))
    for path in candidates:
        if path.is_file():
            data: dict[str, Any] = json.loads(path.read_text())
            if data.get("name") == name and layout.KEY in data:
                return data
    return layout.resolved(labs.load(name))


def run_name(suffix: str = "") -> str:
    """A run directory's name: the UTC start time, then what kind of run it is
    (nothing for ``make bench``, ``-dry`` for a dry run, ``-<pid>`` for a plain
    ``reframe`` invocation); pfslab.names says what a name may be."""
    return names.run_name(time.time(), suffix)


def new_run_dir(lab: str, suffix: str = "", name: str | None = None) -> Path:
    """Make and return a new, unused run directory of the lab under build/runs/; with
    ``name`` (a run the kit's machine named, run on a remote lab's login node), that one,
    which must not exist yet."""
    if name is not None:
        problem = names.run_name_problem(name)
        if problem:
            raise ValueError(problem)
        path = RUNS_DIR / lab / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir()
        return path
    path = RUNS_DIR / lab / run_name(suffix)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            path = path.with_name(path.name + "+")
