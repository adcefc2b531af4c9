"""A lab's layout: the facts derived from its node groups, computed here only.

Nodes are named ``<group><index>`` in node-group order; each gets the address of its
position in the lab's subnet (from ``network.first_address``) unless it is an existing
host with an address of its own (``targets.baremetal.hosts``), and the Ceph OSD ids of
its data drives (global, consecutive in node order, at least one per OSD node). The
clients are the nodes with a client role of the registry; the login node (the one a
remote lab is reached through) is ``network.login`` or the first client, and on a
cloud target only it gets a public address unless ``public_ip`` says otherwise; the phases
list, per start phase of the family, the node/role pairs that start in it. A lab with a
``scheduler`` gets its roles here, as registry/schedulers/<type>.json places them (Slurm:
the controller on the login node, a Slurm node on every client), all in the last phase
(after the clients mount).

``pfslab lab show`` writes this as the ``derived`` part of ``build/<lab>/lab.json``;
Terraform's lab plan reads it from there instead of expanding the groups itself.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pfslab import registry

#: The key of a resolved lab that holds its layout.
KEY = "derived"


def nodes(lab: dict[str, Any]) -> list[dict[str, Any]]:
    """The lab's nodes in order: name, group, index, roles, the group's hardware and the
    devices its roles may erase although they hold something (wipe_devices)."""
    return [
        {"name": f"{group['name']}{index}", "group": group["name"], "index": index,
         "roles": group["roles"], "hardware": group.get("hardware", {}),
         "wipe_devices": group.get("wipe_devices", [])}
        for group in lab["node_groups"]
        for index in range(group["count"])
    ]


def data_drives(node: dict[str, Any]) -> int:
    return sum(d["count"] for d in node["hardware"].get("drives", []) if d["use"] == "data")


def osds_per_node(node: dict[str, Any]) -> int:
    """One OSD per data drive of a ceph-osd node; one (on a file) when it lists none."""
    return max(1, data_drives(node)) if "ceph-osd" in node["roles"] else 0


def osd_count(lab: dict[str, Any]) -> int:
    return sum(osds_per_node(n) for n in nodes(lab))


def address_count(lab: dict[str, Any]) -> int:
    """How many host numbers of the subnet the lab's nodes take, the reserved ones included."""
    return len(nodes(lab)) + int(lab["network"]["first_address"])


def is_client(node: dict[str, Any]) -> bool:
    return bool(registry.client_roles() & set(node["roles"]))


def login(lab: dict[str, Any]) -> str:
    """The node a remote lab is reached through: ``network.login``, else the first client
    in node order (benchmarks are launched there), else the first node."""
    listed = nodes(lab)
    named = lab.get("network", {}).get("login")
    if named:
        return str(named)
    return str(next((n["name"] for n in listed if is_client(n)), listed[0]["name"]))


def _exposure(lab: dict[str, Any], target: str) -> str:
    """Which nodes the kit's machine reaches directly: ``all``, ``login`` (the others only
    through it) or ``none`` (cloud nodes without a public address). Cloud targets state it
    (``public_ip``); existing hosts behind a login node name its ``login_address``; any
    other lab's nodes are reached as they are."""
    settings = lab.get("targets", {}).get(target, {})
    if "public_ip" in settings:
        return str(settings["public_ip"])
    if settings.get("login_address"):
        return "login"
    return "none"


def scheduler_roles(lab: dict[str, Any], node: dict[str, Any], entry: str) -> list[str]:
    """The roles the lab's scheduler (registry/schedulers/<type>.json) gives ``node``:
    those ``on`` the login node (``entry``) or on every client, in the file's order."""
    kind = (lab.get("scheduler") or {}).get("type")
    if kind is None or kind == "none":
        return []
    on = {"login": node["name"] == entry, "clients": is_client(node)}
    return [r.name for r in registry.scheduler(kind).roles if on[r.on]]


def derive(lab: dict[str, Any], target: str | None = None) -> dict[str, Any]:
    """The layout of a resolved lab (defaults filled in) on ``target`` (default: its own)."""
    target = target or lab["target"]
    subnet = ipaddress.ip_network(lab["network"]["subnet"])
    first = int(lab["network"]["first_address"])
    # Existing hosts (bare metal's targets.baremetal.hosts): no other target's settings have hosts.
    hosts: dict[str, str] = lab.get("targets", {}).get(target, {}).get("hosts", {})
    out: list[dict[str, Any]] = []
    next_osd = 0
    entry = login(lab)
    for position, node in enumerate(nodes(lab)):
        count = osds_per_node(node)
        out.append({
            **node,
            "roles": node["roles"] + scheduler_roles(lab, node, entry),
            # The image a node boots unless its target's group names one: the client
            # image when every role it plays is a client role.
            "image": "client" if all(r in registry.client_roles() for r in node["roles"]) else "server",
            "position": position,
            "address": hosts.get(node["name"], str(subnet[first + position])),
            "osd_ids": list(range(next_osd, next_osd + count)),
        })
        next_osd += count
    family = registry.family(lab["filesystem"]["type"])
    phases = [
        [{"node": n["name"], "role": role} for role in roles for n in out if role in n["roles"]]
        for roles in family.phases(registry.phase_count())
    ]
    kind = (lab.get("scheduler") or {}).get("type")
    if kind is not None and kind != "none":
        phases[-1] += [{"node": n["name"], "role": role} for role in registry.scheduler(kind).role_names()
                       for n in out if role in n["roles"]]
    names = [n["name"] for n in out]
    exposure = _exposure(lab, target)
    public = {"all": names, "login": [entry], "none": []}[exposure]
    return {
        "target": target,
        "nodes": out,
        "clients": sorted(n["name"] for n in out if is_client(n)),
        "login": entry,
        # The nodes with a public address, and the node every other one is reached
        # through (ProxyJump) when only the login node has one.
        "public_nodes": public,
        "ssh_jump": {n: entry for n in names if exposure == "login" and n != entry},
        "phases": phases,
    }


def resolved(lab: dict[str, Any], target: str | None = None) -> dict[str, Any]:
    """The lab as the kit hands it on (build/<lab>/lab.json): itself plus its layout."""
    return {**lab, KEY: derive(lab, target)}
