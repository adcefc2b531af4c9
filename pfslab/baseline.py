"""References measured on a known-good lab (``make baseline``).

Several runs of the same suite give, per figure (workload, operation, threads,
mode), a median and a robust spread. The median becomes the reference and the
spread its tolerance, with the runs as provenance. Published references in the
same file (peaks, sustained values from a seed) are kept as they are.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from pfslab import labs, references
from pfslab.units import convert
from pfslab.verdict import final_testcases, load_report
from pfslab.workloads import parse_case_name
from pfslab.errors import KitError

Key = tuple[str, str, int, str, int | None]  # workload, operation, threads, mode, nodes


class BaselineError(KitError, ValueError):
    """The runs cannot make a baseline; the message says which and why."""


def _mode(run_dir: Path) -> str:
    provenance = run_dir / "provenance.json"
    if provenance.is_file():
        return str(json.loads(provenance.read_text()).get("mode", "full"))
    return "full"


def collect(run_dirs: list[Path], lab: str) -> dict[Key, list[tuple[float, str]]]:
    """Every measured figure of the runs, grouped by what it measures."""
    samples: dict[Key, list[tuple[float, str]]] = defaultdict(list)
    for run_dir in run_dirs:
        mode = _mode(run_dir)
        report = load_report(run_dir)
        for tc in final_testcases(report):
            if tc.get("system") != labs.system_name(lab) or tc.get("result") != "pass" or not tc.get("case"):
                continue
            _, workload, threads, nodes = parse_case_name(str(tc["case"]))
            for name, value in (tc.get("perfvalues") or {}).items():
                operation = name.rsplit(":", 1)[-1]
                samples[(workload, operation, threads, mode, nodes)].append((float(value[0]), str(value[4])))
    return samples


def spread(values: list[float]) -> tuple[float, float]:
    """Median and robust standard deviation (1.4826 x median absolute deviation)."""
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    return median, 1.4826 * mad


def machine_of(run_dirs: list[Path]) -> dict[str, Any] | None:
    """The machine every run was made on; runs from different machines make no baseline."""
    found: dict[str, dict[str, Any]] = {}
    for run_dir in run_dirs:
        provenance = run_dir / "provenance.json"
        data = json.loads(provenance.read_text()).get("machine") if provenance.is_file() else None
        found[str(data["id"]) if data else "unknown"] = data or {}
    if len(found) > 1:
        raise BaselineError(f"the runs were made on different machines ({', '.join(sorted(found))}); "
                            "a baseline holds for one machine only")
    only = next(iter(found.values()), {})
    return only or None


def derive(samples: dict[Key, list[tuple[float, str]]], runs: list[str], policy: dict[str, Any],
           machine_id: str | None = None) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for (workload, operation, threads, mode, nodes), found in sorted(samples.items(), key=lambda kv: str(kv[0])):
        unit = found[0][1]
        values = [convert(v, u, unit) for v, u in found]
        if len(values) < len(runs):
            continue  # a figure some runs lack (skipped there) is no baseline
        median, robust_sd = spread(values)
        if median <= 0:
            continue
        margin = min(max(policy["k"] * robust_sd / median, policy["min_margin"]), policy["max_margin"])
        entry: dict[str, Any] = {
            "workload": workload,
            "operation": operation,
            "threads": threads,
            "mode": mode,
            "value": round(median, 4),
            "unit": unit,
            "kind": "baseline",
            "tolerance": {"lower": round(-margin, 3), "upper": None},
            "noise": round(robust_sd / median, 4),
            "source": {
                "document": "make baseline",
                "where": f"median of {len(values)} runs: {', '.join(runs)}",
                "quote": "measured " + ", ".join(f"{v:.4g}" for v in values) + f" {unit}",
            },
        }
        if nodes is not None:
            entry["nodes"] = nodes
        if machine_id is not None:
            entry["machine"] = machine_id
        entries.append(entry)
    return entries


def write(lab: str, run_dirs: list[Path], path: Path | None = None) -> tuple[Path, int]:
    """Write (or update) the lab's references file; returns its path and the number of baselines."""
    if len(run_dirs) < 2:
        raise BaselineError(f"a baseline needs at least 2 runs to measure their spread, not {len(run_dirs)}")
    for run_dir in run_dirs:
        if not (run_dir / "report.json").is_file():
            raise BaselineError(f"{run_dir} is not a run directory (no report.json)")
    policy = dict(yaml.safe_load(references.POLICY_PATH.read_text())["baseline"])
    policy.update(policy.pop("labs", {}).get(lab, {}))
    runs = [f"{d.parent.name}/{d.name}" for d in run_dirs]
    measured_on = machine_of(run_dirs)
    machine_id = str(measured_on["id"]) if measured_on else None
    entries = derive(collect(run_dirs, lab), runs, policy, machine_id)
    if not entries:
        raise BaselineError("the runs passed no figure in common; nothing to make a baseline of")
    path = path or references.path_for(lab)
    kept: list[dict[str, Any]] = []
    old: dict[str, Any] = {}
    if path.is_file():
        old = yaml.safe_load(path.read_text()) or {}
        # A new baseline replaces this machine's old one; other machines' baselines stay.
        kept = [e for e in old.get("references") or []
                if e.get("kind") != "baseline" or (e.get("machine") and e.get("machine") != machine_id)]
    header = (
        f"# References of lab {lab}. Baselines are written by `make baseline` from the runs\n"
        f"# their source names, each for the machine it was measured on (`machines`: only\n"
        f"# there does it judge); other entries are published values, kept as written.\n"
    )
    machines = dict(old.get("machines") or {})
    if measured_on:
        machines[machine_id] = {"description": measured_on.get("description"), "facts": measured_on.get("facts")}
    # Everything else the file holds (notes on published claims ...) is kept as it was.
    document = {**old, "lab": lab, "references": kept + entries}
    if machines:
        document["machines"] = machines
    path.write_text(header + yaml.safe_dump(document, sort_keys=False, width=120))
    references.load(lab, path)  # what was written must load
    return path, len(entries)
