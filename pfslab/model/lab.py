"""build/<lab>/lab.json, typed: the resolved lab (pfslab/labs.py) and, once laid out for
this machine, its instance block (pfslab/names.py's names, :mod:`pfslab.instance`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pfslab.model.fields import Fields, read_object


@dataclass(frozen=True)
class InstanceNode:
    netns: str
    #: The host side of the node's veth pair.
    veth: str


@dataclass(frozen=True)
class InstanceBlock:
    """The names one lab instance's things have on a shared host (``instance``)."""

    id: str
    root: str
    netns_prefix: str
    run_root: str
    cgroup: str
    #: Per node, in the layout's order.
    nodes: tuple[tuple[str, InstanceNode], ...]

    @classmethod
    def from_fields(cls, block: Fields) -> InstanceBlock:
        nodes = block.obj("nodes")
        return cls(block.text("id"), block.text("root", ""), block.text("netns_prefix"), block.text("run_root"),
                   block.text("cgroup"),
                   tuple((name, _node(nodes.obj(name))) for name in nodes.data))


def _node(node: Fields) -> InstanceNode:
    return InstanceNode(node.text("netns"), node.text("veth"))


@dataclass(frozen=True)
class Lab:
    name: str
    target: str
    #: The file system's mount path (a local instance's own, once laid out).
    mount: str
    #: targets.local.bridge: a local lab's bridge (None when the lab file sets none).
    bridge: str | None = None
    #: None: a lab not laid out for this machine (labs/<lab>.yaml resolved only).
    instance: InstanceBlock | None = None
    scheduler_type: str | None = None

    @classmethod
    def from_json(cls, data: object, source: str = "the resolved lab") -> Lab:
        top = Fields(data, source)
        targets = top.optional_obj("targets")
        local = targets.optional_obj("local") if targets is not None else None
        block = top.optional_obj("instance")
        scheduler = top.optional_obj("scheduler")
        return cls(
            name=top.text("name"),
            target=top.text("target"),
            mount=top.obj("filesystem").text("mount"),
            bridge=local.optional_text("bridge") if local is not None else None,
            instance=InstanceBlock.from_fields(block) if block is not None else None,
            scheduler_type=scheduler.optional_text("type") if scheduler is not None else None,
        )

    @classmethod
    def load(cls, path: Path) -> Lab:
        return cls.from_json(read_object(path, "a resolved lab"), str(path))


@dataclass(frozen=True)
class BridgeClaim:
    """What another local lab instance's record (/run/pfslab/*/lab.json) says of the bridge
    it uses. Read leniently, unlike :class:`Lab`: the record may be another checkout's,
    written by an older kit, and a record that cannot be read must still keep its bridge."""

    name: str | None
    id: str | None
    root: str | None
    bridge: str | None

    @classmethod
    def from_json(cls, record: dict[str, object]) -> BridgeClaim:
        block = _object(record.get("instance"))
        local = _object(_object(record.get("targets")).get("local"))
        return cls(_text(record.get("name")), _text(block.get("id")), _text(block.get("root")),
                   _text(local.get("bridge")))


def _object(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return None if value is None else str(value)
