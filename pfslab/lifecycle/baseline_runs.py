"""make baseline REPEAT=n (scripts/baseline): run the active lab's suite n times on a
known-good lab and write reframe/references/<lab>.yaml from the runs (median, tolerance
from spread: pfslab/baseline.py)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.lifecycle import Refusal, check_lab_name, log

TAG = "baseline"


def repeat_of(text: str) -> int:
    if not text.isdigit() or int(text) < 2:
        raise Refusal(f"REPEAT={text} is not allowed; a baseline needs a whole number of runs, at least 2")
    return int(text)


def newest_since(runs: Path, since: float) -> Path | None:
    """The run directory made last at or after SINCE (whole seconds, as find -newermt)."""
    made = [d for d in runs.iterdir() if d.is_dir() and d.stat().st_mtime > since] if runs.is_dir() else []
    return sorted(made)[-1] if made else None


def main(repeat_text: str, bench_args: Sequence[str]) -> int:
    from pfslab import baseline, labs

    repeat = repeat_of(repeat_text)
    active = KIT_ROOT / "build" / "active-lab"
    lab = active.read_text().strip() if active.is_file() else ""
    if not lab:
        raise Refusal("no lab is up; run 'make lab-up' first")
    check_lab_name(lab)
    runs: list[Path] = []
    for i in range(1, repeat + 1):
        log(TAG, f"run {i} of {repeat}")
        before = int(time.time())
        # Each run shows its progress lines; its verdict table is kept in the run directory.
        done = subprocess.run([str(KIT_ROOT / "scripts" / "bench"), *bench_args], stdout=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            log(TAG, f"run {i} had failures; only figures every run passed become baselines")
        run = newest_since(KIT_ROOT / "build" / "runs" / lab, before)
        if run is None:
            raise Refusal(f"run {i} of lab {lab} left no run directory under {KIT_ROOT / 'build' / 'runs' / lab}")
        runs.append(run)
    labs.load(lab)
    path, count = baseline.write(lab, runs)
    print(f"{path}: {count} baseline references from {len(runs)} runs")
    return 0
