"""Hardware-derived thresholds: what a lab's hardware allows, and what the seeds reached of it.

For labs with no published number for a figure (new hardware, cloud reproductions),
the theoretical sequential peak is the smallest of three sums read from the lab
file: the data drives (count x per-drive MB/s, or arrays x their peak), the storage
servers' links and the clients' links. The threshold is that peak times the
efficiency the BeeGFS seed reached (97 % read, 89 % write of its network peak),
and the derivation is kept, line by line, for the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from pfslab import registry
from pfslab.references import POLICY_PATH

@dataclass
class Derivation:
    direction: str  # read or write
    peak_gbps: float  # GB/s, decimal
    threshold_gbps: float
    efficiency: float
    limit: str  # which term bounds the peak: drives, storage links or client links
    lines: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)


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


def derive(lab: dict[str, Any]) -> dict[str, Derivation]:
    """Read and write derivations for a lab; empty when the lab file lacks the hardware."""
    policy = yaml.safe_load(POLICY_PATH.read_text())["efficiency"]
    groups = lab["node_groups"]
    servers = [g for g in groups if registry.data_roles() & set(g["roles"])]
    clients = [g for g in groups if registry.client_roles() & set(g["roles"])]
    storage_links, storage_lines = _links(servers, clients=False)
    client_links, client_lines = _links(clients, clients=True)
    out: dict[str, Derivation] = {}
    for direction in ("read", "write"):
        drives, drive_lines = _drives(servers, direction)
        if not drives:
            continue  # without the drives' bandwidth it says nothing about the storage
        terms = {"drives": drives, "storage links": storage_links, "client links": client_links}
        known = {k: v for k, v in terms.items() if v}
        limit = min(known, key=lambda k: known[k] or 0.0)
        peak = float(known[limit] or 0.0)
        efficiency = float(policy[direction]["value"])
        lines = drive_lines + storage_lines + client_lines + [
            f"theoretical {direction} peak = min({', '.join(f'{k} {v:g}' for k, v in known.items())}) = {peak:g} GB/s ({limit})",
            f"threshold = {efficiency:.0%} of it = {peak * efficiency:.4g} GB/s (the efficiency the BeeGFS seed reached)",
        ]
        out[direction] = Derivation(direction, peak, peak * efficiency, efficiency, limit, lines, policy[direction]["source"])
    return out
