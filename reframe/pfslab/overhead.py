"""Does the kit cost throughput? The same command by hand and through ReFrame, alternating.

``scripts/bench-overhead`` renders one case of the running lab (IOR N-1, or fio where
IOR is missing) with the kit's own renderer, runs that command directly in a shell,
then runs the same case through ``scripts/bench``, and repeats. Alternating spreads
the machine's drift over both sides. The last line is the kit/hand throughput ratio.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, labs, state, workloads
from pfslab.parsers import parse_text
from pfslab.rfm_paths import tool_search_path
from pfslab.units import convert
from pfslab.errors import KitError

#: Preferred workloads, in order, by tool: the first whose tool is installed is measured.
CANDIDATES: tuple[tuple[str, tuple[str, ...]], ...] = (("ior", ("write", "read")), ("fio", ("write_iops", "read_iops")))


class OverheadError(KitError, RuntimeError):
    """The comparison cannot run; the message says why."""


def choose(lab: dict[str, Any]) -> tuple[dict[str, Any], str, tuple[str, ...]]:
    for tool, operations in CANDIDATES:
        path = shutil.which(tool, path=tool_search_path())
        if path is None:
            continue
        for workload in lab.get("workloads", []):
            if workload["tool"] == tool:
                return workload, path, operations
    raise OverheadError("neither IOR nor fio is installed, or the lab has no workload for them")


def by_hand(lab: dict[str, Any], case: workloads.Case, tool_path: str, inventory: dict[str, Any]) -> dict[str, float]:
    """Run the case's commands directly, as an engineer would type them; figures in MiB/s or IOPS."""
    address = {n["name"]: n["address"] for n in inventory["nodes"]}
    clients = [workloads.Client(c, address[c]) for c in inventory["clients"]]
    launcher: dict[str, Any] = inventory.get("launcher", {})
    mount = lab["filesystem"]["mount"]
    scratch = f"{mount}/{lab.get('benchmark', {}).get('scratch', 'pfslab-bench')}/overhead-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="pfslab-overhead-", dir=KIT_ROOT / "build") as work:
        ctx = workloads.Context(clients=clients, scratch_dir=scratch, work_dir=work, tool_path=tool_path,
                                iozone_master=launcher.get("master_address"))
        rendered = workloads.render(lab, case, ctx)
        for name, content in rendered.files.items():
            Path(work, name).write_text(content)
        env = dict(os.environ, **launcher.get("env", {}))
        figures: dict[str, float] = {}
        os.makedirs(scratch, exist_ok=True)
        try:
            for step in rendered.steps:
                if step.kind != "run":
                    continue
                out = subprocess.run(["bash", "-c", step.command], capture_output=True, text=True, env=env, cwd=work, check=False)
                if out.returncode != 0:
                    raise OverheadError(f"the command by hand failed ({out.returncode}): {step.command}\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
                texts = [Path(p).read_text() for p in sorted(Path(work).glob(Path(step.output).name))] if "*" in step.output else [out.stdout]
                for text in texts:
                    parsed = parse_text(case_tool(lab, case), text)
                    for op in step.measures:
                        figure = parsed.operation(op)
                        unit = "MiB/s" if figure.unit.endswith("B/s") else figure.unit
                        figures[op] = figures.get(op, 0.0) + convert(figure.mean, figure.unit, unit)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return figures


def case_tool(lab: dict[str, Any], case: workloads.Case) -> str:
    return str(workloads.find(lab, case.workload)["tool"])


def through_kit(case: workloads.Case, test_class: str) -> dict[str, float]:
    before = set(_run_dirs(case.lab))
    pattern = f"{test_class}%case={case.name}"
    subprocess.run([str(KIT_ROOT / "scripts" / "bench"), "-n", pattern], capture_output=True, text=True, check=False)
    new = sorted(set(_run_dirs(case.lab)) - before)
    if not new:
        raise OverheadError("scripts/bench made no run directory")
    report = json.loads((new[-1] / "report.json").read_text())
    cases = [tc for run in report["runs"] for tc in run["testcases"]]
    if len(cases) != 1 or cases[0]["result"] != "pass":
        reason = cases[0].get("fail_reason") if cases else "no test matched"
        raise OverheadError(f"the run through the kit did not pass: {reason} ({new[-1]})")
    return {key.rsplit(":", 1)[-1]: float(v[0]) for key, v in cases[0]["perfvalues"].items()}


def _run_dirs(lab: str) -> list[Path]:
    root = state.RUNS_DIR / lab
    return [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []


def measure(rounds: int, threads: int) -> list[str]:
    lab_name = state.active_lab()
    inventory = state.inventory(lab_name) if lab_name else None
    if not lab_name or inventory is None:
        raise OverheadError("no lab is up; run 'make lab-up' first")
    lab = labs.load(lab_name)
    workload, tool_path, operations = choose(lab)
    case = workloads.Case(lab_name, str(workload["id"]), threads, workloads.lab_mode(lab))
    test_class = {"ior": "IOR", "fio": "Fio"}[str(workload["tool"])]
    lines = [f"comparing {case.name} ({workload['tool']}: {tool_path}), {rounds} rounds, hand and kit alternating"]
    hand: dict[str, list[float]] = {op: [] for op in operations}
    kit: dict[str, list[float]] = {op: [] for op in operations}
    for round_no in range(1, rounds + 1):
        figures_hand = by_hand(lab, case, tool_path, inventory)
        figures_kit = through_kit(case, test_class)
        for op in operations:
            hand[op].append(figures_hand[op])
            kit[op].append(figures_kit[op])
        lines.append(f"round {round_no}: " + ", ".join(f"{op} hand {figures_hand[op]:.1f} kit {figures_kit[op]:.1f}" for op in operations))
    ratios = {op: (sum(kit[op]) / len(kit[op])) / (sum(hand[op]) / len(hand[op])) for op in operations}
    lines.extend(f"{op}: kit/hand {ratio:.3f}" for op, ratio in ratios.items())
    overall = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    lines.append(f"kit/hand throughput ratio: {overall:.3f}")
    return lines
