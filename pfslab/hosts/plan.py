"""What a lab says of its hosts on this machine, read from the lab as the kit resolves it
(``pfslab lab show LAB --instance``): every name comes from this checkout's instance,
so two checkouts' hosts never collide. Pure: nothing here touches the machine."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pfslab.hosts import HostsRefusal

#: A data drive's size when the lab's hardware gives none.
DEFAULT_DATA_GB = 8


@dataclass(frozen=True)
class HostNode:
    name: str
    address: str
    #: The image it runs: server or client (the layout's image role).
    image: str
    #: The switch's side of its veth pair (the name pfslab/names.py derived for the node).
    switch_port: str
    #: Devices it shows inside (e.g. /dev/vdb), each a sparse file on a loop device.
    data_devices: tuple[str, ...]
    data_size_gb: int


@dataclass(frozen=True)
class HostsLab:
    name: str
    target: str
    #: The lab's file system type (families/<fs>/).
    filesystem: str
    netns_prefix: str
    login_link: str
    #: The login node (network.login): the one host this machine reaches.
    login: str
    prefix_len: int
    login_address: str
    ssh_key: Path
    known_hosts_file: Path | None
    nodes: tuple[HostNode, ...]
    #: build/hosts/<lab>: the hosts' disks, layers, PIDs and consoles.
    state: Path

    @property
    def switch_ns(self) -> str:
        return f"{self.netns_prefix}-hsw"

    def host_ns(self, node: str) -> str:
        return f"{self.netns_prefix}-h-{node}"

    def node_names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def node(self, name: str) -> HostNode:
        """The host named ``name``, or a refusal naming the lab's hosts."""
        if not name:
            raise HostsRefusal(f"name the host: one of {' '.join(self.node_names())}")
        for node in self.nodes:
            if node.name == name:
                return node
        raise HostsRefusal(f"host '{name}' is not a host of lab {self.name}; its hosts: {' '.join(self.node_names())}")

    def images(self) -> list[str]:
        """The image roles the hosts run, each once, sorted."""
        return sorted({n.image for n in self.nodes})

    @property
    def login_peer(self) -> str:
        return login_peer(self.login_address, self.target)


def login_peer(address: str, target: str) -> str:
    """This machine's address on the login host's link: the other usable address of the
    /30 that ``address`` (targets.<target>.login_address) is in."""
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        raise HostsRefusal(f"targets.{target}.login_address {address} is not an IPv4 address; the hosts' link to "
                           "this machine is the /30 it is in") from None
    offset = int(ip) & 3
    if offset not in (1, 2):
        raise HostsRefusal(f"targets.{target}.login_address {address} must be a usable address of its /30 (the 2nd "
                           "or 3rd); the hosts' link to this machine is that /30")
    return str(ipaddress.IPv4Address(int(ip) - offset + (3 - offset)))


def own_target(lab: dict[str, Any]) -> dict[str, Any]:
    """The lab's block for its own target (targets.<target>), {} when it has none."""
    block = lab.get("targets", {}).get(lab.get("target"), {})
    return block if isinstance(block, dict) else {}


def has_hosts(lab: dict[str, Any]) -> bool:
    return bool(own_target(lab).get("hosts"))


def _data_size_gb(node: dict[str, Any]) -> int:
    for drive in node.get("hardware", {}).get("drives", []) or []:
        if drive.get("use") == "data" and drive.get("size_gb") is not None:
            return int(drive["size_gb"])
    return DEFAULT_DATA_GB


def _kit_path(path: str, kit_root: Path) -> Path:
    return Path(path) if path.startswith("/") else kit_root / path


def from_resolved(lab: dict[str, Any], kit_root: Path) -> HostsLab:
    """The hosts of a resolved lab with its instance block (``pfslab lab show --instance``)."""
    target = own_target(lab)
    instance = lab["instance"]
    groups = target.get("groups", {}) or {}
    nodes = tuple(
        HostNode(
            name=n["name"],
            address=n["address"],
            image=n["image"],
            switch_port=instance["nodes"][n["name"]]["veth"],
            data_devices=tuple((groups.get(n.get("group"), {}) or {}).get("data_devices", []) or []),
            data_size_gb=_data_size_gb(n),
        )
        for n in lab["derived"]["nodes"]
    )
    known = target.get("known_hosts_file")
    if not target.get("ssh_key"):
        raise HostsRefusal(f"lab {lab['name']} sets no targets.{lab['target']}.ssh_key: the key its hosts take "
                           "(made here if missing, as a cloud injects one) needs a path")
    return HostsLab(
        name=lab["name"],
        target=lab["target"],
        filesystem=lab["filesystem"]["type"],
        netns_prefix=instance["netns_prefix"],
        login_link=instance["login_link"],
        login=lab["derived"]["login"],
        prefix_len=int(str(lab["network"]["subnet"]).split("/")[1]),
        login_address=str(target.get("login_address", "")),
        ssh_key=_kit_path(str(target["ssh_key"]), kit_root),
        known_hosts_file=_kit_path(str(known), kit_root) if known else None,
        nodes=nodes,
        state=kit_root / "build" / "hosts" / lab["name"],
    )


def labs_with_hosts(labs_dir: Path) -> list[str]:
    """The labs whose own target lists existing hosts behind a login address: those this
    machine can stand in for. Read from the lab files as written (no extends)."""
    found = []
    for path in sorted(labs_dir.glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and has_hosts(data) and own_target(data).get("login_address"):
            found.append(path.stem)
    return found


def known_hosts_lines(node: str, public_keys: list[str]) -> list[str]:
    """A host's record as a site keeps it: ``<node> <type> <base64>`` per host key (its
    comment dropped)."""
    lines = []
    for key in public_keys:
        fields = key.split()
        if len(fields) >= 2:
            lines.append(f"{node} {fields[0]} {fields[1]}")
    return lines
