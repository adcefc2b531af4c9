"""Starve a running local lab's daemons of CPU, to prove that the verdict notices
(``scripts/throttle``)::

    scripts/throttle on [PERCENT] [DAEMON]    default: 5 % of one CPU for all ceph-osd
    scripts/throttle off                      release them
    scripts/throttle status

The daemons (found by their pid files under the lab instance's run root) move into one
cgroup with a CPU quota: cgroup v2 ``cpu.max`` where the cpu controller is on the
unified hierarchy, else v1 ``cpu.cfs_quota_us``. The cgroup's name is the lab
instance's (``instance.cgroup``): another checkout's lab of the same name has its own,
so throttling one never starves or releases the other. ``make lab-down`` releases them
too."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT
from pfslab.lifecycle import Refusal, check_lab_name, log

TAG = "throttle"
V2_ROOT = Path("/sys/fs/cgroup")
V1_ROOT = Path("/sys/fs/cgroup/cpu")
#: The quota's period, in microseconds.
PERIOD_US = 100000


@dataclass(frozen=True)
class Cgroups:
    """Where the cgroup file systems are (the tests give a scratch tree)."""

    v2: Path = V2_ROOT
    v1: Path = V1_ROOT

    def rmdir(self, path: Path) -> None:
        path.rmdir()


def lab_name(kit: Path = KIT_ROOT) -> str:
    """The lab that is up: the one `make lab-up` recorded in build/active-lab."""
    try:
        lab = (kit / "build" / "active-lab").read_text().strip()
        check_lab_name(lab)
    except (OSError, Refusal):
        lab = ""
    if not lab:
        raise Refusal("no lab is up; run 'make lab-up' first")
    return lab


def instance_field(lab: str, field: str, kit: Path = KIT_ROOT) -> str:
    """A field of the lab instance (``instance.<field>``) as the lab was brought up:
    PFSLAB_LAB_JSON when it is that lab's (scripts/lab sets it), else build/<lab>/lab.json."""
    candidates = [os.environ.get("PFSLAB_LAB_JSON", ""), str(kit / "build" / lab / "lab.json")]
    for path in filter(None, candidates):
        try:
            data: Any = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("name") == lab:
            value = (data.get("instance") or {}).get(field)
            if isinstance(value, str) and value:
                return value
            break
    raise Refusal(f"lab {lab} has no field instance.{field}")


def group_dir(cgroup: str, fs: Cgroups) -> Path:
    """The cgroup directory to use (v2 if its cpu controller is there, else v1)."""
    try:
        v2 = "cpu" in (fs.v2 / "cgroup.controllers").read_text().split()
    except OSError:
        v2 = False
    if v2:
        return fs.v2 / cgroup
    if (fs.v1 / "cpu.cfs_quota_us").is_file():
        return fs.v1 / cgroup
    raise Refusal("no cgroup cpu controller here (neither cgroup v2 cpu.max nor v1 cpu.cfs_quota_us)")


def daemon_pids(run_root: Path, daemon: str) -> list[str]:
    """The pids in the daemon's pid files (``<run root>/*/<daemon>.*.pid``)."""
    pids: list[str] = []
    for pidfile in sorted(run_root.glob(f"*/{daemon}.*.pid")):
        try:
            pids += pidfile.read_text().split()
        except OSError:
            continue
    return pids


def on(args: Sequence[str], fs: Cgroups, kit: Path = KIT_ROOT) -> None:
    percent_text = args[0] if args else "5"
    daemon = args[1] if len(args) > 1 else "ceph-osd"
    if not re.fullmatch(r"[0-9]+", percent_text) or not 1 <= int(percent_text) <= 100:
        raise Refusal(f"PERCENT={percent_text} is not allowed; give a whole number from 1 to 100")
    percent = int(percent_text)
    lab = lab_name(kit)
    directory = group_dir(instance_field(lab, "cgroup", kit), fs)
    directory.mkdir(parents=True, exist_ok=True)
    quota = PERIOD_US * percent // 100
    if (directory / "cpu.max").is_file():
        (directory / "cpu.max").write_text(f"{quota} {PERIOD_US}\n")
    else:
        (directory / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
        (directory / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    moved = 0
    for pid in daemon_pids(Path(instance_field(lab, "run_root", kit)), daemon):
        # cgroup.procs takes one pid per write.
        (directory / "cgroup.procs").write_text(f"{pid}\n")
        moved += 1
    if not moved:
        fs.rmdir(directory)
        raise Refusal(f"no running {daemon} in lab {lab}")
    log(TAG, f"{moved} {daemon} process(es) of lab {lab} limited to {percent} % of one CPU ({directory})")


def off(fs: Cgroups, kit: Path = KIT_ROOT) -> None:
    lab = lab_name(kit)
    name = instance_field(lab, "cgroup", kit)
    for directory in (fs.v2 / name, fs.v1 / name):
        if not directory.is_dir():
            continue
        for pid in (directory / "cgroup.procs").read_text().split():
            try:
                (directory.parent / "cgroup.procs").write_text(f"{pid}\n")
            except OSError:
                pass  # a daemon that exited meanwhile cannot move: not an error
        fs.rmdir(directory)
        log(TAG, f"released the daemons of lab {lab} ({directory} removed)")


def status(fs: Cgroups, kit: Path = KIT_ROOT) -> str:
    lab = lab_name(kit)
    name = instance_field(lab, "cgroup", kit)
    for directory in (fs.v2 / name, fs.v1 / name):
        if not directory.is_dir():
            continue
        procs = (directory / "cgroup.procs").read_text().count("\n")
        quota_file = directory / "cpu.max"
        if not quota_file.is_file():
            quota_file = directory / "cpu.cfs_quota_us"
        return f"{directory}: {procs} process(es), quota {quota_file.read_text().strip()}"
    return f"lab {lab}: nothing throttled"


def main(args: Sequence[str], fs: Cgroups | None = None, kit: Path = KIT_ROOT) -> int:
    fs = fs or Cgroups()
    action = args[0] if args else ""
    if action == "on":
        on(args[1:], fs, kit)
    elif action == "off":
        off(fs, kit)
    elif action == "status":
        print(status(fs, kit))
    else:
        raise Refusal(f"action '{action}' is not one of on, off, status")
    return 0
