"""Hardware-derived thresholds: what a lab's hardware allows, and what the seeds reached of it.

For labs with no published number for a figure (new hardware, cloud reproductions),
the theoretical sequential peak is the smallest of three sums read from the lab
file: the data drives (count x per-drive MB/s, or arrays x their peak), the storage
servers' links and the clients' links. The threshold is that peak times the
efficiency the seed reached *with the same access pattern*: what the seed measured
divided by its own theoretical peak (``reframe/references/policy.yaml``,
``efficiency``). N threads to N files and N threads to one shared file reach very
different shares of the same links (seed 002: 97 % vs 49 % read), so each pattern has
its own, and a pattern the seeds give no figure for gets no derived threshold. Every
derivation is kept line by line, each line with the figures it used, for the verdict
and the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from pfslab import labs, registry
from pfslab.references import POLICY_PATH, ReferenceError


@dataclass
class Efficiency:
    """What a seed reached with one pattern and direction, over its own theoretical peak."""

    pattern: str
    direction: str
    reached_gbps: float
    peak_gbps: float
    source: dict[str, Any]  # where the reached figure is printed
    peak_source: dict[str, Any]  # where the theoretical peak is printed

    @property
    def value(self) -> float:
        return self.reached_gbps / self.peak_gbps

    def line(self) -> str:
        return (f"{self.pattern} {self.direction} efficiency = {self.reached_gbps:g} GB/s reached / "
                f"{self.peak_gbps:g} GB/s theoretical = {self.value:.1%} "
                f"({self.source.get('document')}: {self.source.get('where')}; of {self.peak_source.get('where')})")


@dataclass
class Derivation:
    pattern: str  # the workload pattern it applies to (seq-nn, seq-n1)
    direction: str  # read or write
    peak_gbps: float  # GB/s, decimal
    threshold_gbps: float
    efficiency: Efficiency
    limit: str  # which term bounds the peak: drives, storage links or client links
    lines: list[str] = field(default_factory=list)

    @property
    def source(self) -> dict[str, Any]:
        return self.efficiency.source

    def summary(self) -> str:
        """One line for a verdict row: the figures the threshold is made of."""
        e = self.efficiency
        return (f"{self.peak_gbps:g} GB/s ({self.limit}) x {e.value:.1%} ({self.pattern} {self.direction}: "
                f"{e.reached_gbps:g} / {e.peak_gbps:g} GB/s, {e.source.get('document')}) = {self.threshold_gbps:.4g} GB/s")


def efficiencies() -> dict[str, dict[str, Efficiency]]:
    """pattern -> direction -> the efficiency the policy states for it."""
    policy = yaml.safe_load(POLICY_PATH.read_text())["efficiency"]
    peak = policy["theoretical_peak"]
    # A misspelt pattern would never match a workload and silently derive nothing.
    allowed = labs.schema_enum("workload", "pattern")
    for pattern in policy["patterns"]:
        if pattern not in allowed:
            raise ReferenceError(f"{POLICY_PATH.name}: efficiency pattern {pattern!r} is not a workload pattern; "
                                 f"allowed: {', '.join(allowed)}")
    return {
        pattern: {
            direction: Efficiency(pattern, direction, float(entry["reached_gbps"]), float(peak["gbps"]),
                                  entry["source"], peak["source"])
            for direction, entry in by_direction.items()
        }
        for pattern, by_direction in policy["patterns"].items()
    }


def _link_gbps(nic: dict[str, Any]) -> float:
    """Usable GB/s of one link: the lab's stated figure, else the line rate / 8."""
    return float(nic.get("effective_gbytes_per_s") or nic["speed_gbps"] / 8.0)


def _links(groups: list[dict[str, Any]], *, clients: bool) -> tuple[float, list[str]]:
    total, terms = 0.0, []
    for group in groups:
        for nic in group.get("hardware", {}).get("nics", []):
            if nic.get("use") in ("management", "metadata"):
                continue  # carries no benchmark data
            count = group["count"] * nic["count"]
            each = _link_gbps(nic)
            total += count * each
            terms.append(f"{count} x {each:g} GB/s ({group['name']}: {nic.get('model', nic['type'])})")
    kind = "client" if clients else "storage"
    return total, [f"{kind} links: " + " + ".join(terms) + f" = {total:g} GB/s"] if terms else []


def _drives(groups: list[dict[str, Any]], direction: str) -> tuple[float | None, list[str]]:
    total, terms, missing = 0.0, [], False
    key = "read_mbps" if direction == "read" else "write_mbps"
    array_key = "max_read_gbps" if direction == "read" else "max_write_gbps"
    for group in groups:
        hardware = group.get("hardware", {})
        for drive in hardware.get("drives", []):
            if drive.get("use") != "data":
                continue
            if key not in drive:
                missing = True
                continue
            count = group["count"] * drive["count"]
            total += count * drive[key] / 1000.0
            terms.append(f"{count} x {drive[key] / 1000.0:g} GB/s ({drive.get('model', drive['kind'])})")
        for array in hardware.get("arrays", []):
            if array.get("use", "data") != "data" or array_key not in array:
                continue
            count = group["count"] * array["count"]
            total += count * array[array_key]
            terms.append(f"{count} x {array[array_key]:g} GB/s ({array['model']})")
    if not terms:
        return None, ["drives: no per-drive bandwidth in the lab file" if missing else "drives: none listed"]
    return total, [f"drives ({direction}): " + " + ".join(terms) + f" = {total:g} GB/s"]


def derive(lab: dict[str, Any]) -> dict[str, dict[str, Derivation]]:
    """pattern -> direction -> derivation, for the patterns the policy has an efficiency
    for; empty when the lab file lacks the hardware."""
    groups = lab["node_groups"]
    servers = [g for g in groups if registry.data_roles() & set(g["roles"])]
    clients = [g for g in groups if registry.client_roles() & set(g["roles"])]
    storage_links, storage_lines = _links(servers, clients=False)
    client_links, client_lines = _links(clients, clients=True)
    out: dict[str, dict[str, Derivation]] = {}
    for pattern, by_direction in efficiencies().items():
        for direction, efficiency in by_direction.items():
            drives, drive_lines = _drives(servers, direction)
            if not drives:
                continue  # without the drives' bandwidth it says nothing about the storage
            terms = {"drives": drives, "storage links": storage_links, "client links": client_links}
            known = {k: v for k, v in terms.items() if v}
            limit = min(known, key=lambda k: known[k] or 0.0)
            peak = float(known[limit] or 0.0)
            threshold = peak * efficiency.value
            lines = drive_lines + storage_lines + client_lines + [
                f"theoretical {direction} peak = min({', '.join(f'{k} {v:g}' for k, v in known.items())}) = {peak:g} GB/s ({limit})",
                efficiency.line(),
                f"threshold = {peak:g} GB/s x {efficiency.value:.1%} = {threshold:.4g} GB/s "
                f"(what the seed's {pattern} {direction} reached of its hardware, scaled to this lab's)",
            ]
            out.setdefault(pattern, {})[direction] = Derivation(pattern, direction, peak, threshold, efficiency,
                                                                limit, lines)
    return out
