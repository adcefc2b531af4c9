"""A run directory (``build/runs/<lab>/<timestamp>/``) and everything a verdict or a
report needs from it: ReFrame's report, the lab as run, its references, provenance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pfslab import calibration, labs, references, sessions, shapes, state, sweeps, verdict, workloads
from pfslab.errors import KitError


#: Written into a run directory by the health watchdog when the lab turns unhealthy or degraded.
HEALTH_FILE = "lab-health.json"


class RunError(KitError, ValueError):
    """Not a usable run directory; the message says why."""


@dataclass
class Run:
    path: Path
    #: The run's session as ReFrame's results database holds it (:mod:`pfslab.sessions`);
    #: when set, it is the run's report instead of its report.json.
    session: dict[str, Any] | None = None

    @property
    def report(self) -> dict[str, Any]:
        """ReFrame's report of the run: its stored session once attached, else its report.json."""
        return self.session if self.session is not None else self.report_file

    @cached_property
    def report_file(self) -> dict[str, Any]:
        try:
            return verdict.load_report(self.path)
        except verdict.ReportError as err:
            raise RunError(str(err)) from None

    @property
    def session_uuid(self) -> str | None:
        """The UUID of the run's ReFrame session, as the run directory records it."""
        return sessions.session_uuid(self.provenance, self.report_file)

    @cached_property
    def provenance(self) -> dict[str, Any]:
        path = self.path / "provenance.json"
        data: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
        return data

    @cached_property
    def lab(self) -> dict[str, Any]:
        """The lab as the run used it: the stored resolved copy first, then the stored file."""
        resolved = self.path / "lab.json"
        if resolved.is_file():
            data: dict[str, Any] = json.loads(resolved.read_text())
            return data
        stored = self.path / "lab.yaml"
        if stored.is_file():
            return labs.load_stored(stored)
        name = self.provenance.get("lab") or self.path.parent.name
        return labs.load(name)

    @property
    def lab_name(self) -> str:
        return str(self.lab["name"])

    @property
    def mode(self) -> str:
        return str(self.provenance.get("mode") or labs.setting(self.lab, "benchmark.default_mode"))

    @cached_property
    def references(self) -> list[references.Reference]:
        stored = self.path / "references.yaml"
        return references.load(self.lab_name, stored if stored.is_file() else None)

    @cached_property
    def shapes(self) -> list[shapes.Shape]:
        stored = self.path / "references.yaml"
        return shapes.load(self.lab_name, stored if stored.is_file() else None)

    def patterns(self) -> dict[str, str]:
        """Workload id -> pattern, for the lab's own and imported workloads."""
        out = {w["id"]: w["pattern"] for w in self.lab.get("workloads", [])}
        for imported in self.lab.get("imports", []):
            for w in labs.load(imported).get("workloads", []):
                out[f"{imported}/{w['id']}"] = w["pattern"]
        return out

    @property
    def machine_id(self) -> str | None:
        """The fingerprint of the machine the run was made on (``make bench`` records it)."""
        found = self.provenance.get("machine", {}).get("id")
        return str(found) if found else None

    @cached_property
    def lab_state(self) -> dict[str, Any] | None:
        """What the health watchdog recorded when the lab turned unhealthy or degraded, if it did."""
        path = self.path / HEALTH_FILE
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    @cached_property
    def calibration(self) -> dict[str, Any] | None:
        return calibration.load(self.path / calibration.FILE_NAME)

    def test_rows(self) -> list[verdict.Row]:
        return verdict.rows(self.report)

    def rows(self) -> list[verdict.Row]:
        """Per-test rows, then the sweep-level ones (published plateaus, derived limits)."""
        per_test = self.test_rows()
        return per_test + sweeps.check(per_test, self.lab, self.references, self.mode, self.patterns(), self.machine_id,
                                       self.shapes)


def resolve(spec: str | None, lab: str | None = None) -> Run:
    """A run from a path, a ``<lab>/<timestamp>`` id, or the newest run (of ``lab``, else of any lab)."""
    if spec:
        for candidate in (Path(spec), state.RUNS_DIR / spec):
            if (candidate / "report.json").is_file():
                return Run(candidate)
        raise RunError(f"no run {spec!r}: give a run directory or <lab>/<timestamp> under {state.RUNS_DIR}")
    roots = [state.RUNS_DIR / lab] if lab else sorted(p for p in state.RUNS_DIR.glob("*") if p.is_dir())
    found = sorted((p for root in roots for p in root.glob("*") if (p / "report.json").is_file()),
                   key=lambda p: p.stat().st_mtime)
    if not found:
        raise RunError(f"no runs yet under {state.RUNS_DIR}: run 'make bench' first")
    return Run(found[-1])


__all__ = ["Run", "RunError", "resolve", "workloads"]
