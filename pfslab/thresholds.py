"""Which threshold judges a figure, and why: the one place that decides.

In order: a reference of the lab's references file for that point (a published
value, a hardware derivation, or a baseline measured on *this* machine); else, for a
lab that calibrates, the floor of its own calibration probe; else none, with the
reason. A baseline measured on another machine never judges: it is named in the
reason instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pfslab import calibration, machine, references, state, workloads
from pfslab.errors import KitError


@dataclass
class Judge:
    lab: dict[str, Any]
    refs: list[references.Reference]
    machine_id: str | None
    calibration: dict[str, Any] | None

    def reference(self, workload: str, operation: str, threads: int, mode: str,
                  nodes: int | None = None, kind: str | None = None) -> tuple[references.Reference | None, str]:
        """The threshold of one figure and where it comes from (or why there is none).

        ``kind`` is the figure's unit kind (bandwidth, rate, time) once it is measured;
        a calibrated threshold needs it to pick the probe figure of the same kind."""
        ref = references.lookup(self.refs, workload, operation, threads, mode, nodes, self.machine_id)
        if ref is not None:
            return ref, references.basis(ref)
        if references.sweep_references(self.refs, workload, operation, mode, self.machine_id):
            return None, "judged over the whole sweep (see the sweep rows)"
        other = references.elsewhere(self.refs, workload, operation, threads, mode, nodes, self.machine_id)
        note = (f"no baseline for this machine (the one in the references file was measured on {other.machine}); "
                if other is not None else "")
        if calibration.wanted(self.lab):
            if self.calibration is None:
                return None, note + (f"no threshold: lab {self.lab['name']} has no calibration "
                                     "('make lab-up' calibrates a new lab; 'make calibrate' runs it again)")
            if kind is None:
                return None, note + "judged by the lab's calibration once the figure is measured"
            cal = calibration.threshold(self.calibration, operation, kind, self._pattern(workload))
            if cal is not None:
                return cal, note + references.basis(cal)
            why = calibration.unjudged().get(operation) or (
                "a completion time: reported, not judged (no probe predicts an application's compute)"
                if kind == "time" else f"no calibration probe judges {operation}")
            return None, note + f"no threshold: {why}"
        return None, note + "no published or baseline value for this figure"


    def _pattern(self, workload: str) -> str | None:
        try:
            return str(workloads.find(self.lab, workload)["pattern"])
        except KitError:
            return None  # not a workload of this lab (a calibration probe's own id)


def machine_id_for(lab: dict[str, Any]) -> str:
    return machine.fingerprint(machine.facts_for(lab))


def calibration_file(lab_name: str, run_dir: Path | None = None) -> Path:
    """The run's copy when there is one (``make bench`` stores it), else the lab's."""
    if run_dir is not None and (run_dir / calibration.FILE_NAME).is_file():
        return run_dir / calibration.FILE_NAME
    return calibration.path_for(lab_name)


@lru_cache(maxsize=8)
def _judge(lab_name: str, run_dir: str, stamps: tuple[int, ...]) -> Judge:
    lab = state.lab(lab_name)
    cal = calibration.load(calibration_file(lab_name, Path(run_dir) if run_dir else None))
    return Judge(lab, references.load(lab_name), machine_id_for(lab), cal)


def for_lab(lab_name: str) -> Judge:
    """The judge of a lab as ReFrame runs it now (every test of a run asks; built once)."""
    run_dir = os.environ.get("PFSLAB_RUN_DIR", "")
    files = [references.path_for(lab_name), calibration_file(lab_name, Path(run_dir) if run_dir else None)]
    stamps = tuple(p.stat().st_mtime_ns if p.is_file() else 0 for p in files)
    return _judge(lab_name, run_dir, stamps)

