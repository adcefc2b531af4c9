"""pfslab.model: the inventories and resolved labs the kit writes parse into the typed
model; a missing or mistyped key is refused in one line naming the file and the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pfslab import KIT_ROOT, cli, instance, labs, layout, registry
from pfslab.lifecycle import Refusal
from pfslab.lifecycle.teardown import Instance
from pfslab.model import BridgeClaim, Inventory, Lab, ModelError

RECORDED = sorted((KIT_ROOT / "tests" / "fixtures").rglob("inventory.json"))
RENDERED = sorted((KIT_ROOT / "tests" / "fixtures" / "model").glob("*.inventory.json"))
PAIRS = [(lab, target) for lab in labs.lab_names() for target in registry.targets()]


def _shown(lab: str, target: str) -> dict[str, Any] | None:
    """What scripts/render-user-data writes to lab.json (``pfslab lab show --target``),
    None for a lab the target cannot run."""
    try:
        return layout.resolved(labs.with_defaults(labs.load(lab), target), target)
    except Exception:  # noqa: BLE001 - a pair the kit itself refuses is no input of the model
        return None


def test_the_recorded_inventories_are_found() -> None:
    assert len(RECORDED) >= 4


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.parent.name)
def test_every_recorded_inventory_parses_into_what_it_holds(path: Path) -> None:
    raw = json.loads(path.read_text())
    inv = Inventory.load(path)
    assert inv.target == raw["target"] and inv.mount == raw["filesystem"]["mount"]
    assert [n.name for n in inv.nodes] == [n["name"] for n in raw["nodes"]]
    assert [list(n.roles) for n in inv.nodes] == [n["roles"] for n in raw["nodes"]]
    assert [n.address for n in inv.nodes] == [n["address"] for n in raw["nodes"]]
    assert list(inv.clients or []) == raw["clients"]
    assert inv.netns == raw["local"]["netns"] and inv.state_root == raw["local"]["state_root"]
    assert inv.registry_target() is registry.targets()[raw["target"]]


@pytest.mark.parametrize("path", RENDERED, ids=lambda p: p.name)
def test_a_remote_inventory_as_rendered_offline_parses(path: Path) -> None:
    raw = json.loads(path.read_text())
    inv = Inventory.load(path)
    assert [n.name for n in inv.nodes] == [n["name"] for n in raw["nodes"]]
    assert inv.login == raw["login"] and list(inv.clients or []) == raw["clients"]
    assert inv.local is None and inv.phases is None and not inv.registry_target().namespaces


def test_the_rendered_inventories_are_found() -> None:
    assert len(RENDERED) == 2


@pytest.mark.parametrize(("lab", "target"), PAIRS)
def test_every_lab_as_rendered_for_every_target_parses(lab: str, target: str) -> None:
    shown = _shown(lab, target)
    if shown is None:
        pytest.skip(f"lab {lab} does not run on {target}")
    parsed = Lab.from_json(shown, f"{lab}/{target}/lab.json")
    assert (parsed.name, parsed.target, parsed.mount) == (lab, shown["target"], shown["filesystem"]["mount"])
    assert parsed.bridge == shown.get("targets", {}).get("local", {}).get("bridge")
    assert parsed.instance is None


def test_rendered_pairs_are_most_of_them() -> None:
    # A parse test that skips everything would prove nothing.
    assert sum(_shown(lab, target) is not None for lab, target in PAIRS) >= len(labs.lab_names())


@pytest.mark.parametrize("lab", ["local", "beegfs-medium"])
def test_a_local_instance_gives_every_nodes_namespace_and_veth(lab: str) -> None:
    resolved = instance.with_instance(layout.resolved(labs.with_defaults(labs.load(lab), "local"), "local"),
                                      {"USER": "ann"}, target="local")
    block = Lab.from_json(resolved).instance
    assert block is not None
    assert block.id == resolved["instance"]["id"] and block.cgroup == resolved["instance"]["cgroup"]
    assert [(name, n.netns, n.veth) for name, n in block.nodes] == \
        [(name, n["netns"], n["veth"]) for name, n in resolved["instance"]["nodes"].items()]
    assert [name for name, _ in block.nodes] == [n["name"] for n in resolved[layout.KEY]["nodes"]]


def _recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORDED[0].read_text())
    return data


def _refusal(tmp_path: Path, data: object) -> str:
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError) as err:
        Inventory.load(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: key ")
    return message


def test_a_missing_key_is_refused_in_one_line_naming_the_file_and_key(tmp_path: Path) -> None:
    data = _recorded()
    del data["target"]
    assert _refusal(tmp_path, data).endswith("key 'target' is missing; allowed: a string")
    data = _recorded()
    del data["nodes"][1]["name"]
    assert _refusal(tmp_path, data).endswith("key 'nodes[1].name' is missing; allowed: a string")
    # Only the commands that read the mount need it (a bench's check reads the target only).
    data = _recorded()
    del data["filesystem"]
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match=f"^{path}: key 'filesystem.mount' is missing; allowed: a string$"):
        Inventory.load(path).require_mount()


def test_a_wrong_type_is_refused_with_what_is_allowed(tmp_path: Path) -> None:
    data = _recorded()
    data["clients"] = "cli0"
    assert _refusal(tmp_path, data).endswith("""key 'clients' is a string ("cli0"); allowed: a list of strings""")
    data = _recorded()
    data["local"]["netns"]["cli0"] = 7
    assert _refusal(tmp_path, data).endswith("key 'local.netns' is an object " + "(" + json.dumps(
        data["local"]["netns"])[:37] + "...); allowed: an object of strings")
    data = _recorded()
    data["phases"] = [{"node": "mon0", "role": "ceph-mon"}]
    assert "key 'phases' is a list" in _refusal(tmp_path, data)
    data = _recorded()
    data["nodes"][0]["roles"] = "ceph-mon"
    assert "key 'nodes[0].roles' is a string" in _refusal(tmp_path, data)


def test_extra_keys_are_tolerated_and_a_site_node_has_no_roles() -> None:
    data = _recorded()
    data["something_new"] = {"x": 1}
    data["nodes"] = [{"name": "n1", "address": "n1"}]
    inv = Inventory.from_json(data)
    assert inv.nodes[0].roles == () and inv.nodes[0].name == "n1"


def test_a_malformed_inventory_is_a_one_line_refusal_of_the_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PFSLAB_BUILD", str(tmp_path))
    data = _recorded()
    data["nodes"] = {"mon0": {}}
    (tmp_path / "lab1").mkdir()
    (tmp_path / "lab1" / "inventory.json").write_text(json.dumps(data))
    assert cli.main(["preflight", "lab1"]) == 2
    err = capsys.readouterr().err
    assert err == (f"[preflight] error: {tmp_path}/lab1/inventory.json: key 'nodes' is an object "
                   """({"mon0": {}}); allowed: a list of JSON objects\n""")


def test_a_resolved_lab_with_a_mistyped_instance_is_refused_by_teardown(tmp_path: Path) -> None:
    resolved = instance.with_instance(layout.resolved(labs.load("local")), {"USER": "ann"})
    resolved["instance"]["nodes"]["mon0"]["veth"] = ["v0"]
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(resolved))
    with pytest.raises(Refusal, match=r"key 'instance\.nodes\.mon0\.veth' is a list \(\[\"v0\"\]\); allowed: a string$"):
        Instance.load(str(path))


def test_another_instances_record_keeps_its_bridge_even_when_the_strict_parse_refuses_it() -> None:
    # A record written by another checkout's older kit: no cgroup, no filesystem.
    record: dict[str, object] = {"name": "old", "instance": {"id": "old-1", "root": "/o"},
                                 "targets": {"local": {"bridge": "pfslab0"}}}
    with pytest.raises(ModelError):
        Lab.from_json(record)
    assert BridgeClaim.from_json(record) == BridgeClaim("old", "old-1", "/o", "pfslab0")
    assert BridgeClaim.from_json({"name": "x", "targets": "?"}).bridge is None
