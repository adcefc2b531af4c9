"""Does the kit cost throughput? The same command by hand and through ReFrame, alternating.

``scripts/bench-overhead`` renders one case of the running lab (IOR N-1, or fio where
IOR is missing) with the kit's own renderer, runs that command directly in a shell,
then runs the same case through ``scripts/bench``, and repeats. Alternating spreads
the machine's drift over both sides. The last line is the kit/hand throughput ratio.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, handrun, labs, state, workloads
from pfslab.rfm_paths import tool_search_path
from pfslab.units import convert
from pfslab.errors import KitError

#: Preferred workloads, in order, by tool: the first whose tool is installed is measured.
CANDIDATES: tuple[tuple[str, tuple[str, ...]], ...] = (("ior", ("write", "read")), ("fio", ("write_iops", "read_iops")))


class OverheadError(KitError, RuntimeError):
    """The comparison cannot run; the message says why."""


def choose(lab: dict[str, Any]) -> tuple[dict[str, Any], str, tuple[str, ...]]:
    for tool, operations in CANDIDATES:
        path = shutil.which(tool, path=tool_search_path(lab))
        if path is None:
            continue
        for workload in lab.get("workloads", []):
            if workload["tool"] == tool:
                return workload, path, operations
    raise OverheadError("neither IOR nor fio is installed, or the lab has no workload for them")


def by_hand(lab: dict[str, Any], case: workloads.Case, tool_path: str, inventory: dict[str, Any]) -> dict[str, float]:
    """Run the case's commands directly, as an engineer would type them; figures in MiB/s or IOPS."""
    mount = lab["filesystem"]["mount"]
    scratch = f"{mount}/{labs.setting(lab, 'benchmark.scratch')}/overhead-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="pfslab-overhead-", dir=KIT_ROOT / "build") as work:
        per_step = handrun.run_case(lab, workloads.find(lab, case.workload), case, inventory,
                                    work_dir=Path(work), scratch_dir=scratch, tool_path=tool_path)
    return {op: convert(value, unit, "MiB/s" if unit.endswith("B/s") else unit)
            for figures in per_step for op, (value, unit) in figures.items()}


def through_kit(case: workloads.Case, test_class: str) -> tuple[dict[str, float], list[str]]:
    before = set(_run_dirs(case.lab))
    pattern = f"^{test_class}_.*{workloads.name_filter(case.name)}"
    subprocess.run([str(KIT_ROOT / "scripts" / "bench"), "-n", pattern], capture_output=True, text=True, check=False)
    new = sorted(set(_run_dirs(case.lab)) - before)
    if not new:
        raise OverheadError("scripts/bench made no run directory")
    report = json.loads((new[-1] / "report.json").read_text())
    cases = [tc for run in report["runs"] for tc in run["testcases"]]
    # A figure that misses its reference is still a figure: the ratio needs it, and the
    # miss is reported beside the ratio. Only a run without figures stops the comparison.
    if len(cases) != 1 or not cases[0].get("perfvalues"):
        reason = cases[0].get("fail_reason") if cases else "no test matched"
        raise OverheadError(f"the run through the kit measured nothing: {reason} ({new[-1]})")
    misses = [key.rsplit(":", 1)[-1] for key, v in cases[0]["perfvalues"].items() if len(v) > 5 and v[5] == "fail"]
    return {key.rsplit(":", 1)[-1]: float(v[0]) for key, v in cases[0]["perfvalues"].items()}, misses


def _run_dirs(lab: str) -> list[Path]:
    root = state.RUNS_DIR / lab
    return [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []


def measure(rounds: int, threads: int) -> list[str]:
    lab_name = state.active_lab()
    inventory = state.inventory(lab_name) if lab_name else None
    if not lab_name or inventory is None:
        raise OverheadError("no lab is up; run 'make lab-up' first")
    # As its lab-up resolved it: a local lab's mount path is its instance's, not the file's.
    lab = state.lab(lab_name)
    workload, tool_path, operations = choose(lab)
    case = workloads.Case(lab_name, str(workload["id"]), threads, workloads.lab_mode(lab))
    test_class = {"ior": "IOR", "fio": "Fio"}[str(workload["tool"])]
    lines = [f"comparing {case.name} ({workload['tool']}: {tool_path}), {rounds} rounds, hand and kit alternating"]
    hand: dict[str, list[float]] = {op: [] for op in operations}
    kit: dict[str, list[float]] = {op: [] for op in operations}
    missed: set[str] = set()
    for round_no in range(1, rounds + 1):
        figures_hand = by_hand(lab, case, tool_path, inventory)
        figures_kit, misses = through_kit(case, test_class)
        missed.update(misses)
        for op in operations:
            hand[op].append(figures_hand[op])
            kit[op].append(figures_kit[op])
        lines.append(f"round {round_no}: " + ", ".join(f"{op} hand {figures_hand[op]:.1f} kit {figures_kit[op]:.1f}" for op in operations))
    ratios = {op: (sum(kit[op]) / len(kit[op])) / (sum(hand[op]) / len(hand[op])) for op in operations}
    lines.extend(f"{op}: kit/hand {ratio:.3f}" for op, ratio in ratios.items())
    overall = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    if missed:
        lines.append(f"note: through the kit, {', '.join(sorted(missed))} missed the lab's reference in some round "
                     "(the ratio above compares the figures; the verdict of those runs is in their run directories)")
    lines.append(f"kit/hand throughput ratio: {overall:.3f}")
    return lines
