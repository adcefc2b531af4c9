"""Thresholds a lab derives on the spot, from the machine it runs on.

A lab with no published numbers (the embedded local lab, a user's new hardware) is
judged against what it showed it can do when it was known healthy: right after
``make lab-up`` the kit runs short fio probes through one client of the lab
(sequential 1 MiB write and read, random 4 KiB write and read, file create, stat and
remove, 4 KiB files written and synced one by one), a few rounds each, and keeps the
median of every figure. A benchmark's
figure then passes when it reaches a stated fraction (its *floor*) of the probe of
the same kind. Both the probes and the floors are written once, in
``reframe/references/policy.yaml`` (section ``calibration``), with the reason for
each floor; the probe figures live with the lab (``build/<lab>/calibration.json``)
and are copied into every run, so a verdict shows its whole derivation and a report
is rebuilt from the run directory alone.

No figure measured on another machine enters: the probes run on the user's own
machine, through the user's own lab.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from shutil import which
from typing import Any

import yaml

from pfslab import handrun, labs, machine, state, workloads
from pfslab.errors import KitError
from pfslab.rfm_paths import tool_search_path
from pfslab.references import POLICY_PATH, Reference
from pfslab.units import convert, kind_of

FILE_NAME = "calibration.json"


class CalibrationError(KitError, RuntimeError):
    """The calibration cannot run or its file is unusable; the message says why."""


@dataclass(frozen=True)
class ProbeStep:
    args: str  # fio arguments; {dir} is the probe's directory in the file system
    gives: dict[str, str]  # calibration figure -> the fio operation it is read from


@dataclass(frozen=True)
class Probe:
    """One or more fio runs in one directory (file stat and remove need the files created before)."""

    id: str
    steps: tuple[ProbeStep, ...]


@dataclass(frozen=True)
class Rule:
    figure: str  # a workload's figure (write, read_iops, file_creation ...)
    probe: str
    probe_figure: str | None  # None: the probe's figure of the same kind (bandwidth or rate)
    floor: float  # fraction of the probe figure the benchmark figure must reach
    pattern: str | None = None  # None: every workload's figure; else only a workload of this pattern's


@lru_cache(maxsize=1)
def policy() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(POLICY_PATH.read_text())["calibration"]
    return data


def probes() -> list[Probe]:
    return [Probe(str(p["id"]), tuple(ProbeStep(str(step["args"]), {str(k): str(v) for k, v in step["gives"].items()})
                                      for step in p["steps"]))
            for p in policy()["probes"]]


def _all_rules() -> list[Rule]:
    out: list[Rule] = []
    for group in policy()["floors"]:
        probe, _, probe_figure = str(group["probe"]).partition(".")
        patterns: list[str | None] = [str(p) for p in group.get("patterns", [])] or [None]
        for pattern in patterns:
            out.extend(Rule(str(figure), probe, probe_figure or None, float(group["floor"]), pattern)
                       for figure in group["figures"])
    return out


def rules() -> dict[str, Rule]:
    """Figure -> the probe (figure) that judges it and its floor, in any workload."""
    return {rule.figure: rule for rule in _all_rules() if rule.pattern is None}


def pattern_rules() -> dict[tuple[str, str], Rule]:
    """(figure, workload pattern) -> the rule that judges that figure in workloads of that
    pattern instead of the general one (4 KiB files synced one by one are not empty files)."""
    return {(rule.figure, rule.pattern): rule for rule in _all_rules() if rule.pattern}


def unjudged() -> dict[str, str]:
    """Figures the calibration deliberately does not judge, with the reason."""
    return {str(figure): str(group["why"]).strip() for group in policy().get("unjudged", []) for figure in group["figures"]}


def _probe_entry(calibration: dict[str, Any], rule: Rule, kind: str | None) -> tuple[str, dict[str, Any]] | None:
    """The probe figure a rule reads: the one it names, else the one of the measured kind."""
    figures: dict[str, Any] = calibration["probes"].get(rule.probe, {})
    if rule.probe_figure is not None:
        entry = figures.get(rule.probe_figure)
        return (rule.probe_figure, entry) if entry is not None else None
    for name, entry in figures.items():
        if kind is None or kind_of(str(entry["unit"])) == kind:
            return name, entry
    return None


def rounds() -> int:
    return int(policy().get("rounds", 3))


def path_for(lab: str) -> Path:
    return state.BUILD_DIR / lab / FILE_NAME


def wanted(lab: dict[str, Any]) -> bool:
    """Does this lab judge its figures by calibration (lab file: ``benchmark.calibrate``)?"""
    return bool(lab.get("benchmark", {}).get("calibrate", False))


# ---- running the probes ------------------------------------------------------------------

def _probe_workload(probe: Probe) -> dict[str, Any]:
    return {"id": f"calibration/{probe.id}", "tool": "fio", "pattern": "random",
            "steps": [{"args": step.args, "measures": sorted(set(step.gives.values()))} for step in probe.steps]}


def _shown(value: float, unit: str) -> tuple[float, str]:
    """A figure as the kit shows it: bandwidths in MiB/s, rates as measured."""
    return (convert(value, unit, "MiB/s"), "MiB/s") if kind_of(unit) == "bandwidth" else (value, unit)


@dataclass
class _Bench:
    """What running probes on a lab needs: the lab, its inventory, fio, where files go."""

    lab: dict[str, Any]
    inventory: dict[str, Any]
    fio: str
    scratch_root: str

    @classmethod
    def of(cls, lab_name: str) -> _Bench:
        # As its lab-up resolved it: a local lab's mount path is its instance's, not the file's.
        lab = state.lab(lab_name)
        inventory = state.inventory(lab_name)
        if inventory is None:
            raise CalibrationError(f"lab {lab_name} is not up; run 'make lab-up LAB={lab_name}'")
        fio = which("fio", path=tool_search_path(lab))
        if fio is None:
            raise CalibrationError("fio is not installed (the calibration probes are fio runs); run 'make deps'")
        scratch_root = f"{lab['filesystem']['mount']}/{labs.setting(lab, 'benchmark.scratch')}"
        return cls(lab, inventory, fio, scratch_root)

    def probe(self, probe: Probe, client: str, work_dir: Path, scratch: str, timeout_s: float) -> list[tuple[str, float, str]]:
        """One run of a probe: (figure, value, unit) for each figure it gives."""
        case = workloads.Case(self.lab["name"], f"calibration/{probe.id}", 1, "quick")
        per_step = handrun.run_case(self.lab, _probe_workload(probe), case, self.inventory, work_dir=work_dir,
                                    scratch_dir=f"{scratch}/{probe.id}", tool_path=self.fio,
                                    client_names=[client], timeout_s=timeout_s)
        return [(name, *figures[op]) for step, figures in zip(probe.steps, per_step) for name, op in step.gives.items()]


def run(lab_name: str, say: Any = print) -> dict[str, Any]:
    """Run every probe ``rounds()`` times through the lab's first client; write and return the calibration."""
    bench = _Bench.of(lab_name)
    client = bench.inventory["clients"][0]
    out_dir = state.BUILD_DIR / lab_name / "calibration"
    samples: dict[tuple[str, str], list[tuple[float, str]]] = {}
    started = time.time()
    total = rounds()
    for round_no in range(1, total + 1):
        scratch = f"{bench.scratch_root}/calibration-{uuid.uuid4().hex[:8]}"
        try:
            for probe in probes():
                figures = bench.probe(probe, client, out_dir / f"r{round_no}" / probe.id, scratch, 120)
                for name, value, unit in figures:
                    samples.setdefault((probe.id, name), []).append((value, unit))
                shown = ", ".join(f"{name} {v:.4g} {u}" for name, value, unit in figures for v, u in [_shown(value, unit)])
                say(f"calibration round {round_no}/{total}: {probe.id}: {shown}")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    facts = machine.facts_for(bench.lab)
    result: dict[str, Any] = {
        "lab": lab_name,
        "client": client,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 1),
        "rounds": total,
        "machine": {"id": machine.fingerprint(facts), "facts": facts, "description": machine.describe(facts)},
        "probes": {},
    }
    for (probe_id, name), found in sorted(samples.items()):
        unit = found[0][1]
        values = [convert(v, u, unit) for v, u in found]
        result["probes"].setdefault(probe_id, {})[name] = {
            "value": statistics.median(values), "unit": unit, "samples": values,
        }
    path_for(lab_name).write_text(json.dumps(result, indent=2) + "\n")
    return result


def check(lab_name: str, say: Any = print) -> str | None:
    """Before a run: the lab's quick probes once more, against their own calibration.

    Returns None when the lab still performs above the floors it is judged by, else one
    line naming the probe, what it measured now and at lab-up. A lab that crawls (a
    starved daemon, a failing drive) then fails at once, instead of running every test
    at a fraction of its speed for hours to reach the same verdict.
    """
    calibration = load(path_for(lab_name))
    if calibration is None:
        return None
    bench = _Bench.of(lab_name)
    wanted_ids = [str(i) for i in policy().get("check", [])]
    scratch = f"{bench.scratch_root}/check-{uuid.uuid4().hex[:8]}"
    out_dir = state.BUILD_DIR / lab_name / "calibration" / "check"
    floors = {r.probe: r.floor for r in _all_rules()}
    try:
        for probe in (p for p in probes() if p.id in wanted_ids):
            for name, value, unit in bench.probe(probe, calibration["client"], out_dir / probe.id, scratch, 60):
                then = calibration["probes"].get(probe.id, {}).get(name)
                if then is None:
                    continue
                now, shown = _shown(value, unit)
                at_up, _ = _shown(float(then["value"]), str(then["unit"]))
                ratio = now / at_up
                say(f"pre-run check: {probe.id} {name} {_fmt(now)} {shown}, {ratio:.0%} of its lab-up calibration")
                if ratio < floors[probe.id]:
                    return (f"it performs at {ratio:.0%} of its lab-up calibration, below the {floors[probe.id]:.0%} "
                            f"floor (pre-run {probe.id} {name}: {_fmt(now)} {shown} now, {_fmt(at_up)} at lab-up)")
    except KitError as err:
        return f"the pre-run check probe failed: {err}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return None


def load(path: Path) -> dict[str, Any] | None:
    """A calibration file, or None when there is none."""
    if not path.is_file():
        return None
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise CalibrationError(f"{path} is not valid JSON: {err}") from None
    if not isinstance(data.get("probes"), dict):
        raise CalibrationError(f"{path} has no probes; run 'make calibrate' again")
    return data


# ---- thresholds -----------------------------------------------------------------------------

def threshold(calibration: dict[str, Any] | None, figure: str, kind: str | None = None,
              pattern: str | None = None) -> Reference | None:
    """The calibrated reference for a figure measured as ``kind`` (bandwidth or rate),
    or None when no probe judges it.

    The reference value is the probe's figure (what the lab showed it can do) and its
    lower bound the floor. Bandwidths are stated in MiB/s, IOPS figures in IOPS and
    other rates in ops/s. Completion times have no probe: None.
    """
    if calibration is None or kind == "time":
        return None
    candidates = [pattern_rules().get((figure, pattern)) if pattern else None, rules().get(figure)]
    # A calibration made before a pattern's probe existed lacks it: the general rule judges.
    found_rule = next(((rule, entry) for rule in candidates if rule is not None
                       for entry in [_probe_entry(calibration, rule, kind)] if entry is not None), None)
    if found_rule is None:
        return None
    rule, found = found_rule
    probe_figure, probe = found
    probe_unit = str(probe["unit"])
    if kind_of(probe_unit) == "bandwidth":
        unit = "MiB/s"
    else:
        unit = "IOPS" if figure.endswith("_iops") else "ops/s"
    value = convert(float(probe["value"]), probe_unit, unit)
    basis = (f"calibrated on this machine: floor {rule.floor:.0%} of the lab's own {rule.probe} probe "
             f"({_fmt(value)} {unit} {probe_figure} at lab-up) = {_fmt(value * rule.floor)} {unit}")
    return Reference(
        workload="*", operation=figure, threads=None, nodes=None, value=value, unit=unit, kind="calibrated",
        mode=None, lower=rule.floor - 1.0, upper=None,
        source={"document": "make lab-up (calibration)", "where": basis}, noise=None,
    )


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def summary_lines(calibration: dict[str, Any]) -> list[str]:
    """The calibration as a reader wants it under a verdict: machine, then each probe figure."""
    lines = [f"thresholds calibrated on this machine at lab-up ({calibration.get('measured_at')}, "
             f"{calibration.get('rounds')} rounds through client {calibration.get('client')}; "
             f"machine: {calibration.get('machine', {}).get('description', '?')}):"]
    for probe_id, figures in calibration.get("probes", {}).items():
        shown_figures = []
        for name, entry in figures.items():
            unit = str(entry["unit"])
            shown = "MiB/s" if kind_of(unit) == "bandwidth" else unit
            samples = ", ".join(_fmt(convert(float(v), unit, shown)) for v in entry.get("samples", []))
            shown_figures.append(f"{name} {_fmt(convert(float(entry['value']), unit, shown))} {shown} (of {samples})")
        judged = sorted(r.figure + (f" ({r.pattern} workloads)" if r.pattern else "")
                        for r in _all_rules() if r.probe == probe_id)
        lines.append(f"  {probe_id}: {'; '.join(shown_figures)}; judges {', '.join(judged) or 'nothing'}")
    return lines
