"""Run one rendered case directly, outside ReFrame, as an engineer would type it.

The calibration probes (:mod:`pfslab.calibration`) and the overhead comparison
(:mod:`pfslab.overhead`) both need a workload's exact command, launched the way the
lab launches it (its mpirun line, rsh agent and environment), with the figures read
by the kit's own parsers. This is that one path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, tools, workloads
from pfslab.errors import KitError
from pfslab.rfm_paths import tool_search_path
from pfslab.units import convert


class HandRunError(KitError, RuntimeError):
    """A command run by hand failed or printed no figures; the message says which and why."""


def clients(inventory: dict[str, Any]) -> list[workloads.Client]:
    address = {n["name"]: n["address"] for n in inventory["nodes"]}
    return [workloads.Client(c, address[c]) for c in inventory["clients"]]


def run_case(
    lab: dict[str, Any],
    workload: dict[str, Any],
    case: workloads.Case,
    inventory: dict[str, Any],
    *,
    work_dir: Path,
    scratch_dir: str,
    tool_path: str,
    client_names: list[str] | None = None,
    timeout_s: float = 300.0,
    drop_caches: bool = False,
) -> list[dict[str, tuple[float, str]]]:
    """Run every step of ``case`` once; return, per measuring step, each figure as (value, unit).

    ``drop_caches``: the caches are dropped where the kit's job drops them (before the
    steps when the lab drops them at all, and at each drop-caches step), so that a
    comparison with the job does the same work.

    Outputs stay in ``work_dir`` (the caller keeps or removes it); ``scratch_dir``
    inside the file system is removed afterwards. A step that exits non-zero, hangs
    past ``timeout_s`` or prints no figure is an error, never a number.
    """
    launcher: dict[str, Any] = inventory.get("launcher", {})
    chosen = [c for c in clients(inventory) if client_names is None or c.name in client_names]
    ctx = workloads.Context(clients=chosen, scratch_dir=scratch_dir, work_dir=str(work_dir), tool_path=tool_path,
                            iozone_master=launcher.get("master_address"),
                            hostfile_slots=lab.get("launcher", {}).get("hostfile_slots", True))
    rendered = workloads.render_workload(lab, workload, case, ctx)
    work_dir.mkdir(parents=True, exist_ok=True)
    for name, content in rendered.files.items():
        (work_dir / name).write_text(content)
    # The job's PATH (rfm.py): the mpirun of the tool's own view starts it, by hand too.
    env = dict(os.environ, **launcher.get("env", {}), PATH=tool_search_path(lab))
    per_step: list[dict[str, tuple[float, str]]] = []
    os.makedirs(scratch_dir, exist_ok=True)
    drops = drop_caches and lab.get("os_tuning", {}).get("drop_caches", "never") != "never"
    try:
        if drops:
            _drop_caches(str(case.lab), env)
        for n, step in enumerate(rendered.steps, start=1):
            if step.kind != "run":
                if drops:
                    _drop_caches(str(case.lab), env)
                continue
            log = work_dir / f"step{n}.log"
            try:
                out = subprocess.run(["bash", "-c", step.command], capture_output=True, text=True, env=env,
                                     cwd=work_dir, check=False, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise HandRunError(f"{case.workload}: step {n} did not finish in {timeout_s:.0f} s: {step.command}") from None
            log.write_text(out.stdout + out.stderr)
            if out.returncode != 0:
                tail = (out.stdout + out.stderr).strip().splitlines()[-1:] or ["no output"]
                raise HandRunError(f"{case.workload}: step {n} exited with status {out.returncode} ({tail[0]}); see {log}")
            if step.prepare:
                continue
            outputs = sorted(work_dir.glob(Path(step.output).name)) if "*" in step.output else []
            texts = [p.read_text() for p in outputs] if outputs else [out.stdout]
            figures: dict[str, tuple[float, str]] = {}
            for op in step.measures:
                total, unit = 0.0, ""
                for text in texts:
                    figure = tools.parse_text(str(workload["tool"]), text).operation(op)
                    unit = unit or figure.unit
                    total += convert(figure.mean, figure.unit, unit)
                figures[op] = (total, unit)
            per_step.append(figures)
    finally:
        shutil.rmtree(scratch_dir, ignore_errors=True)
    return per_step


def _drop_caches(lab: str, env: dict[str, str]) -> None:
    """The job's cache drop (scripts/drop-caches, as rfm.py's job scripts call it)."""
    done = subprocess.run([str(KIT_ROOT / "scripts" / "drop-caches"), lab], capture_output=True, text=True,
                          env=env, check=False, timeout=120)
    if done.returncode != 0:
        raise HandRunError(f"scripts/drop-caches {lab} failed: {(done.stderr or done.stdout).strip()}")
