"""Which copy of a lab this is: the checkout it runs from and the user it belongs to.

Two checkouts of the kit on one host may both bring up ``local``; two users of one
cloud account may both bring up ``aws-cephfs``. Everything a lab leaves on a shared
host (network namespaces, ``/run/pfslab/...``, cgroups, the login node's mount path)
is named after the lab *instance*, the lab name plus the checkout id, and every cloud
resource is tagged with the owner as well as the lab. Both are computed here only,
written into the resolved lab (``build/<lab>/lab.json``, key ``instance``) at lab-up,
and read from there by the shell scripts and Terraform.
"""

from __future__ import annotations

import copy
import getpass
import ipaddress
import json
import os
import re
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, names, registry
from pfslab.errors import KitError

#: The key of a resolved lab that holds its instance.
KEY = "instance"
RUN_BASE = names.RUN_BASE
#: What a cloud tag value may hold (AWS and Azure); the schema's owner pattern.
OWNER_PATTERN = re.compile(r"^[A-Za-z0-9_.:/=+@ -]{1,128}$")
_BRIDGE = re.compile(r"^[a-z][a-z0-9]{0,11}$")


class InstanceError(KitError):
    """An override or a collision, said in one line."""


#: The checkout's real path: a checkout reached through a symlink is the same checkout.
CHECKOUT: Path = KIT_ROOT.resolve()


def checkout_id(root: Path = CHECKOUT) -> str:
    """The checkout id of ``root`` (resolved by the caller): pfslab.names."""
    return names.checkout_id(root)


def owner(lab: dict[str, Any] | None = None, environ: dict[str, str] | None = None) -> str:
    """Who the lab's cloud resources belong to: ``OWNER`` (``make ... OWNER=``), else the
    lab file's explicit ``targets.<target>.owner``, else the user who ran sudo, else the
    user. Never a fixed name: two users' labs must not look like one user's."""
    env = os.environ if environ is None else environ
    explicit = ((lab or {}).get("targets", {}).get((lab or {}).get("target", ""), {}) or {}).get("owner")
    value = env.get("OWNER") or explicit or env.get("SUDO_USER") or env.get("USER") or getpass.getuser()
    # fullmatch: a '$' would let a trailing newline through, and tags would then match nothing.
    if not OWNER_PATTERN.fullmatch(value):
        raise InstanceError(f"owner {value!r} is not allowed; give OWNER= 1-128 letters, digits, spaces or _ . : / = + - @")
    return str(value)


def describe(name: str, lab_owner: str, root: Path = CHECKOUT, nodes: list[str] | None = None) -> dict[str, Any]:
    """The instance block of lab ``name`` run from checkout ``root``: every name its
    lab leaves on a shared host or in a cloud account, from pfslab.names, and per node
    (``nodes``, in the layout's order) its namespace and the host side of its veth pair."""
    checkout = checkout_id(root)
    instance = names.instance_id(name, checkout)
    prefix = names.netns_prefix(instance)
    return {
        "checkout": checkout,
        "root": str(root),
        "id": instance,
        "owner": lab_owner,
        "cloud_name": names.cloud_name(name, lab_owner),
        "netns_prefix": prefix,
        "run_root": names.run_root(name, checkout),
        "cgroup": names.cgroup(instance),
        "login_link": names.login_link(prefix),
        "nodes": {node: {"netns": names.node_netns(prefix, node), "veth": names.node_veth(prefix, position)}
                  for position, node in enumerate(nodes or [])},
    }


def apply_local(lab: dict[str, Any], bridge: str | None, subnet: str | None) -> dict[str, Any]:
    """The lab with the host-specific settings of a local lab given at lab-up (``BRIDGE=``,
    ``SUBNET=``) in place of the lab file's; refused in one line when malformed."""
    out = copy.deepcopy(lab)
    if bridge:
        if not _BRIDGE.match(bridge):
            raise InstanceError(f"BRIDGE={bridge} is not allowed; give 1-12 lower-case letters or digits, starting with a letter (e.g. pfslab1)")
        out.setdefault("targets", {}).setdefault("local", {})["bridge"] = bridge
    if subnet:
        try:
            net = ipaddress.IPv4Network(subnet)
        except ValueError:
            raise InstanceError(f"SUBNET={subnet} is not allowed; give an IPv4 network such as 10.98.0.0/24") from None
        if net.prefixlen > 28:
            raise InstanceError(f"SUBNET={subnet} is not allowed; give a network of at least 16 addresses (/28 or larger), such as 10.98.0.0/24")
        out.setdefault("network", {})["subnet"] = str(net)
    return out


def with_instance(lab: dict[str, Any], environ: dict[str, str] | None = None, root: Path = CHECKOUT,
                  target: str | None = None) -> dict[str, Any]:
    """The resolved lab (laid out for ``target``, default its own) with its instance
    block. On the local target the common mount path (the host's view of the file
    system) is per instance too: two checkouts' labs would otherwise bind their clients
    over the same directory. A cloud node's mount path is its own machine's."""
    problem = names.checkout_path_problem(root)
    if problem:
        raise InstanceError(problem)
    out = dict(lab)
    nodes = [n["name"] for n in lab.get("derived", {}).get("nodes", [])]
    out[KEY] = describe(lab["name"], owner(lab, environ), root, nodes)
    # A lab whose storage is this checkout's local lab (checkout_mount: the shipped site
    # example) names that lab's mount the same way.
    settings = lab.get("targets", {}).get(lab["target"], {})
    if registry.targets()[target or lab["target"]].namespaces or settings.get("checkout_mount"):
        out["filesystem"] = {**lab["filesystem"], "mount": names.mount_path(lab["filesystem"]["mount"], out[KEY]["checkout"])}
    return out


def _records(run_base: Path) -> list[dict[str, Any]]:
    """The resolved labs of the local labs that are up on this host (their lab-up copies
    one into its run root), unreadable ones skipped."""
    found = []
    for path in sorted(run_base.glob("*/lab.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get(KEY), dict):
            found.append(data)
    return found


def _free_choice(records: list[dict[str, Any]]) -> str:
    """A bridge and a subnet no running lab uses, to suggest in the refusal."""
    bridges = {r.get("targets", {}).get("local", {}).get("bridge") for r in records}
    nets = [ipaddress.IPv4Network(r.get("network", {}).get("subnet", "0.0.0.0/32")) for r in records]
    bridge = next(f"pfslab{i}" for i in range(1, 100) if f"pfslab{i}" not in bridges)
    subnet = next(n for n in (ipaddress.IPv4Network(f"10.{o}.0.0/24") for o in range(98, 0, -1))
                  if not any(n.overlaps(m) for m in nets))
    return f"BRIDGE={bridge} SUBNET={subnet}"


def collisions(lab: dict[str, Any], run_base: Path = RUN_BASE) -> list[str]:
    """Why lab ``lab`` (resolved, with its instance) cannot come up beside the local labs
    already up on this host: another instance's bridge, an overlapping subnet, the same
    mount path. One line each, naming the other checkout and what to set instead."""
    mine = lab[KEY]["id"]
    others = [r for r in _records(run_base) if r[KEY].get("id") != mine]
    if not others:
        return []
    bridge = lab.get("targets", {}).get("local", {}).get("bridge")
    net = ipaddress.IPv4Network(lab["network"]["subnet"])
    fix = f"make lab-up LAB={lab['name']} {_free_choice(others)} (README: Two checkouts on one host)"
    problems = []
    for other in others:
        where = f"lab {other.get('name')} of the checkout {other[KEY].get('root')}"
        if other.get("targets", {}).get("local", {}).get("bridge") == bridge:
            problems.append(f"bridge {bridge} is used by {where}; give this lab another: {fix}")
        if ipaddress.IPv4Network(other.get("network", {}).get("subnet", "0.0.0.0/32")).overlaps(net):
            problems.append(f"subnet {net} overlaps {other['network']['subnet']} of {where}; give this lab another: {fix}")
        if other[KEY].get("netns_prefix") == lab[KEY]["netns_prefix"]:
            problems.append(f"namespace prefix {lab[KEY]['netns_prefix']} is used by {where} (two instances hashed alike); "
                            "take that lab down first, or run this one from another checkout path")
        if other.get("filesystem", {}).get("mount") == lab["filesystem"]["mount"]:
            problems.append(f"mount path {lab['filesystem']['mount']} is used by {where}; take that lab down first")
    return problems
