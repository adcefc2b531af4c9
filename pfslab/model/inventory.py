"""build/<lab>/inventory.json, typed: what Terraform's root (or a site lab's checks) wrote
of the running lab and what the lifecycle and the transports read of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from pfslab import registry
from pfslab.model.fields import Fields, ModelError, kind, read_object


@dataclass(frozen=True)
class Node:
    name: str
    address: str = ""
    #: A site lab's nodes have none: its daemons are the site's.
    roles: tuple[str, ...] = ()
    #: Where the kit's machine reaches it over SSH when not at ``address`` (a remote lab).
    ssh_address: str = ""
    #: The node SSH goes through to reach it, if any.
    ssh_jump: str = ""


@dataclass(frozen=True)
class Placement:
    """One role on one node, in the lab plan's start order (an inventory's ``phases``)."""

    node: str
    role: str


@dataclass(frozen=True)
class Local:
    """A local lab's own (target local): each node's namespace, its daemons' run root,
    its state root (node configs under <state_root>/nodes/<node>/node.json)."""

    netns: dict[str, str]
    run_root: str = ""
    state_root: str = ""


@dataclass(frozen=True)
class Inventory:
    target: str
    #: A site lab's inventory written before its checks found nodes has none.
    nodes: tuple[Node, ...] = ()
    #: The file system's mount path on the clients (and the host's view of a local lab's);
    #: :meth:`require_mount` where it must be there.
    mount: str | None = None
    title: str = ""
    #: None: an inventory without the list (the nodes with a client role are the clients).
    clients: tuple[str, ...] | None = None
    login: str = ""
    #: The login node whose inside view this is (the inventory lab-up ships to a remote
    #: lab's login node); empty on the kit's machine.
    inside: str = ""
    #: None: an inventory written before it had phases (roles in node order).
    phases: tuple[tuple[Placement, ...], ...] | None = None
    local: Local | None = None
    scheduler_type: str | None = None
    #: Where a remote lab's nodes keep the cluster's shared files (keys, configs).
    cluster_path: str = "/etc/pfslab/cluster"
    #: The lab's SSH key and user, if its inventory names them (a remote lab).
    ssh_key: str = ""
    ssh_user: str = ""
    #: Where it was read, for a refusal of what is missing.
    source: str = field(default="the inventory", compare=False)

    @classmethod
    def from_json(cls, data: object, source: str = "the inventory") -> Inventory:
        top = Fields(data, source)
        nodes = top.items("nodes") or []
        filesystem = top.optional_obj("filesystem")
        local = top.optional_obj("local")
        scheduler = top.optional_obj("scheduler")
        ssh = top.optional_obj("ssh")
        clients = top.texts("clients") if top.has("clients") else None
        return cls(
            target=top.text("target"),
            nodes=tuple(Node(n.text("name"), n.text("address", ""), n.texts("roles"), n.text("ssh_address", ""),
                             n.text("ssh_jump", "")) for n in nodes),
            mount=filesystem.optional_text("mount") if filesystem is not None else None,
            title=top.text("title", ""),
            clients=clients,
            login=top.text("login", ""),
            inside=top.text("inside", ""),
            phases=_phases(top),
            local=None if local is None else Local(local.text_map("netns"), local.text("run_root", ""),
                                                   local.text("state_root", "")),
            scheduler_type=None if scheduler is None else scheduler.optional_text("type"),
            cluster_path=top.text("cluster_path", "") or "/etc/pfslab/cluster",
            ssh_key="" if ssh is None else ssh.text("key", ""),
            ssh_user="" if ssh is None else ssh.text("user", ""),
            source=source,
        )

    @classmethod
    def load(cls, path: Path) -> Inventory:
        return cls.from_json(read_object(path, "an inventory"), str(path))

    def require_mount(self) -> str:
        if self.mount is None:
            raise ModelError(f"{self.source}: key 'filesystem.mount' is missing; allowed: a string")
        return self.mount

    @property
    def netns(self) -> dict[str, str]:
        return self.local.netns if self.local else {}

    @property
    def run_root(self) -> str:
        return self.local.run_root if self.local else ""

    @property
    def state_root(self) -> str:
        return self.local.state_root if self.local else ""

    def registry_target(self) -> registry.Target:
        """The target's registry entry (its flags: namespaces, provisions)."""
        return registry.target_of({"target": self.target})

    @property
    def login_node(self) -> str:
        """The node that launches the lab's runs: its ``login``, else its first client;
        empty for a lab without clients (nothing to benchmark from)."""
        return self.login or (self.clients[0] if self.clients else "")

    def address(self, node: str) -> str:
        return next((n.address for n in self.nodes if n.name == node), "")


def _phases(top: Fields) -> tuple[tuple[Placement, ...], ...] | None:
    """``phases``: a list of lists of {node, role}."""
    if not top.has("phases"):
        return None
    value = top.data["phases"]
    if not isinstance(value, list) or not all(isinstance(p, list) for p in value):
        raise ModelError(f"{top.source}: key 'phases' is {kind(value)}; allowed: a list of lists of "
                         "{\"node\": ..., \"role\": ...}")
    return tuple(tuple(_placement(Fields(e, top.source, f"phases[{i}][{j}]")) for j, e in enumerate(phase))
                 for i, phase in enumerate(value))


def _placement(entry: Fields) -> Placement:
    return Placement(entry.text("node"), entry.text("role"))
