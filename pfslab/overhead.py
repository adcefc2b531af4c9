"""Does the kit cost throughput? The same command by hand and through ReFrame, alternating.

``scripts/bench-overhead`` renders one case of the running lab per tool (IOR and fio,
each the lab's first workload of it) with the kit's own renderer, runs those commands
directly in a shell and the same case through ``scripts/bench``, and repeats, the
order swapped every round, so that the machine's drift is spread over both sides.
Each tool gets its kit/hand throughput ratio; the last line is the lowest of them.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from pfslab import KIT_ROOT, handrun, labs, state, workloads
from pfslab.rfm_paths import tool_search_path
from pfslab.units import convert
from pfslab.errors import KitError

#: The tools compared, each with the figures its ratio is taken over.
CANDIDATES: dict[str, tuple[str, ...]] = {"ior": ("write", "read"), "fio": ("write_iops", "read_iops")}
#: Each tool's ReFrame test class (reframe/*.py).
TEST_CLASSES: dict[str, str] = {"ior": "IOR", "fio": "Fio"}


class OverheadError(KitError, RuntimeError):
    """The comparison cannot run; the message says why."""


def choose(lab: dict[str, Any], tools: list[str]) -> list[tuple[dict[str, Any], str, tuple[str, ...]]]:
    """Per tool asked for: the lab's first workload of it, the tool's path and its figures."""
    chosen = []
    for tool in tools:
        if tool not in CANDIDATES:
            raise OverheadError(f"tool {tool!r} is not allowed; allowed: {', '.join(CANDIDATES)}")
        path = shutil.which(tool, path=tool_search_path(lab))
        workload = next((w for w in lab.get("workloads", []) if w["tool"] == tool), None)
        if path is None or workload is None:
            why = "is not installed" if path is None else f"has no workload in lab {lab['name']}"
            raise OverheadError(f"{tool} {why}; choose among the others: {', '.join(CANDIDATES)}")
        chosen.append((workload, path, CANDIDATES[tool]))
    return chosen


def by_hand(lab: dict[str, Any], case: workloads.Case, tool_path: str, inventory: dict[str, Any]) -> dict[str, float]:
    """Run the case's commands directly, as an engineer would type them; figures in MiB/s or IOPS."""
    mount = lab["filesystem"]["mount"]
    scratch = f"{mount}/{labs.setting(lab, 'benchmark.scratch')}/overhead-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="pfslab-overhead-", dir=KIT_ROOT / "build") as work:
        # The job drops the caches where the lab says so (rfm.py): by hand too, or the
        # two sides would not do the same work.
        per_step = handrun.run_case(lab, workloads.find(lab, case.workload), case, inventory,
                                    work_dir=Path(work), scratch_dir=scratch, tool_path=tool_path,
                                    drop_caches=True)
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


def measure(rounds: int, threads: int, tools: list[str]) -> Iterator[str]:
    """Lines to print as they come: each round's figures, each tool's ratio, then the lowest ratio."""
    lab_name = state.active_lab()
    inventory = state.inventory(lab_name) if lab_name else None
    if not lab_name or inventory is None:
        raise OverheadError("no lab is up; run 'make lab-up' first")
    # As its lab-up resolved it: a local lab's mount path is its instance's, not the file's.
    lab = state.lab(lab_name)
    overall: dict[str, float] = {}
    for workload, tool_path, operations in choose(lab, tools):
        tool = str(workload["tool"])
        case = workloads.Case(lab_name, str(workload["id"]), threads, workloads.lab_mode(lab))
        yield f"comparing {case.name} ({tool}: {tool_path}), {rounds} rounds, hand and kit alternating"
        hand: dict[str, list[float]] = {op: [] for op in operations}
        kit: dict[str, list[float]] = {op: [] for op in operations}
        missed: set[str] = set()
        for round_no in range(1, rounds + 1):
            # Hand first in odd rounds, the kit first in even ones (ABBA): a drift of the
            # lab over the rounds (its OSDs filling, its caches warming) favours neither.
            if round_no % 2:
                figures_hand = by_hand(lab, case, tool_path, inventory)
                figures_kit, misses = through_kit(case, TEST_CLASSES[tool])
            else:
                figures_kit, misses = through_kit(case, TEST_CLASSES[tool])
                figures_hand = by_hand(lab, case, tool_path, inventory)
            missed.update(misses)
            for op in operations:
                hand[op].append(figures_hand[op])
                kit[op].append(figures_kit[op])
            yield f"round {round_no}: " + ", ".join(
                f"{op} hand {figures_hand[op]:.1f} kit {figures_kit[op]:.1f}" for op in operations)
        ratios = {op: (sum(kit[op]) / len(kit[op])) / (sum(hand[op]) / len(hand[op])) for op in operations}
        yield from (f"{tool} {op}: kit/hand {ratio:.3f}" for op, ratio in ratios.items())
        if missed:
            yield (f"note: through the kit, {', '.join(sorted(missed))} missed the lab's reference in some round "
                   "(the ratio above compares the figures; the verdict of those runs is in their run directories)")
        overall[tool] = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
        yield f"{tool}: kit/hand throughput ratio {overall[tool]:.3f}"
    low = min(overall, key=lambda t: overall[t])
    yield f"kit/hand throughput ratio: {overall[low]:.3f} (the lowest, {low}; " + \
        ", ".join(f"{t} {r:.3f}" for t, r in overall.items()) + ")"
