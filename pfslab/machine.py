"""The machine a lab runs on, as the verdict must know it: a fingerprint.

A baseline measured on one machine says nothing about another. Every baseline the
kit writes carries the fingerprint of the machine it was measured on, and is used
only where the fingerprint matches; elsewhere the verdict says "no baseline for this
machine" and falls back to the thresholds the lab calibrated on the spot.

For a lab on this host (target ``local``) the machine is the host: CPU model, the
CPUs this process may use (so a lab pinned to fewer CPUs is another machine), memory
and the device that holds the lab's backing files. For a lab elsewhere it is the
hardware its lab file declares.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, registry


def _cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Processor", "cpu model"):
                return value.strip()
    except OSError:
        pass
    return "unknown"


def _memory_gib(meminfo: Path = Path("/proc/meminfo")) -> int:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20)
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _mount_of(path: Path, mounts: Path = Path("/proc/self/mounts")) -> tuple[str, str]:
    """(source device, file system type) of the mount holding ``path``."""
    best, source, fstype = "", "unknown", "unknown"
    target = str(path.resolve())
    try:
        lines = mounts.read_text().splitlines()
    except OSError:
        return source, fstype
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        if (target == point or target.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, source, fstype = point, fields[0], fields[2]
    return source, fstype


def _block_facts(source: str, sys_block: Path = Path("/sys/class/block")) -> dict[str, Any]:
    """Model, rotational flag and size of the block device behind a mount source."""
    name = Path(source).name
    dev = sys_block / name
    if not dev.exists():
        return {}
    # A partition's queue and model live on its parent disk.
    disk = dev.resolve().parent if (dev / "partition").exists() else dev.resolve()

    def read(path: Path) -> str:
        try:
            return path.read_text().strip()
        except OSError:
            return ""

    facts: dict[str, Any] = {"rotational": read(disk / "queue" / "rotational") == "1"}
    model = read(disk / "device" / "model")
    if model:
        facts["model"] = model
    sectors = read(dev / "size")
    if sectors.isdigit():
        facts["size_gib"] = round(int(sectors) * 512 / 2**30)
    return facts


def host_facts(backing: Path | None = None) -> dict[str, Any]:
    """What makes this host the machine it is, for a lab that runs on it."""
    where = backing or KIT_ROOT / "build"
    while not where.exists() and where != where.parent:
        where = where.parent
    source, fstype = _mount_of(where)
    return {
        "kind": "host",
        "cpu_model": _cpu_model(),
        "cpus": len(os.sched_getaffinity(0)),
        "memory_gib": _memory_gib(),
        "backing": {"source": source, "fstype": fstype, **_block_facts(source)},
    }


def declared_facts(lab: dict[str, Any]) -> dict[str, Any]:
    """The hardware a lab file declares (a lab on other machines)."""
    hardware = [{"group": g["name"], "count": g["count"], "hardware": g.get("hardware", {})}
                for g in lab.get("node_groups", [])]
    return {"kind": "declared", "target": lab.get("target"), "node_groups": hardware}


def facts_for(lab: dict[str, Any]) -> dict[str, Any]:
    return host_facts() if registry.target_of(lab).namespaces else declared_facts(lab)


def fingerprint(facts: dict[str, Any]) -> str:
    """A short stable name for a set of facts: equal facts, equal names."""
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()
    return f"{facts.get('kind', 'machine')}-{digest[:12]}"


def describe(facts: dict[str, Any]) -> str:
    """One line a reader recognises a machine by."""
    if facts.get("kind") == "host":
        backing = facts.get("backing", {})
        disk = backing.get("model") or backing.get("source", "?")
        kind = "HDD" if backing.get("rotational") else "SSD/virtual"
        cpus = facts.get("cpus")
        return (f"{facts.get('cpu_model')}, {cpus} CPU{'' if cpus == 1 else 's'}, {facts.get('memory_gib')} GiB, "
                f"backing {disk} ({backing.get('fstype')}, {kind})")
    groups = ", ".join(f"{g['count']} x {g['group']}" for g in facts.get("node_groups", []))
    return f"declared hardware of target {facts.get('target')}: {groups}"
