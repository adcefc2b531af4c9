"""Cloud and bare-metal reproductions: their lab files, target mappings and the Terraform code.

- every aws-*/azure-*/baremetal-* lab is valid, targets its cloud and maps every node group;
- the mapping agrees with the hardware the file describes (EFA NICs, local drives), the
  rule the lab plan enforces at plan time;
- every instance type or VM size it uses is explained in the file's comments, with what
  is not equivalent to the seed;
- a broken targets.<cloud> field is refused naming the field;
- the new JSON Schema definitions describe every field and admit no unknown one;
- the Terraform code (parsed with python-hcl2 where it is installed): every variable has
  a description, a type and a validation; every provider is pinned.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslab import labs, layout

KIT = Path(__file__).resolve().parents[2]
CLOUD_LABS = [n for n in labs.lab_names() if n.split("-")[0] in ("aws", "azure", "baremetal")]


def test_the_issue_s_cloud_labs_exist() -> None:
    assert {"aws-beegfs-medium", "aws-cephfs", "aws-nfs", "azure-beegfs-medium"} <= set(CLOUD_LABS)


@pytest.mark.parametrize("name", CLOUD_LABS)
def test_a_cloud_lab_targets_its_cloud_and_maps_every_group(name: str) -> None:
    lab = labs.load(name)
    target = name.split("-")[0]
    assert lab["target"] == target
    mapping = lab["targets"][target]
    groups = {g["name"] for g in lab["node_groups"]}
    if target in ("aws", "azure"):
        assert set(mapping["groups"]) == groups
        assert lab["reproduces"] in labs.lab_names(), f"{name} reproduces an unknown lab {lab['reproduces']!r}"
    else:
        mapped = set(mapping.get("hosts", {}))
        assert mapped == {n["name"] for n in labs.nodes(lab)} or "maas" in mapping


def _local_drives(group: dict[str, Any]) -> int:
    return sum(d["count"] for d in group.get("hardware", {}).get("drives", []) if d["kind"] in ("nvme", "ssd", "hdd") and d["use"] != "os")


def _efa(group: dict[str, Any]) -> int:
    return sum(n["count"] for n in group.get("hardware", {}).get("nics", []) if n["type"] == "efa")


@pytest.mark.parametrize("name", [n for n in CLOUD_LABS if not n.startswith("baremetal")])
def test_mapping_agrees_with_the_hardware_the_file_describes(name: str) -> None:
    lab = labs.load(name)
    target = lab["target"]
    for group in lab["node_groups"]:
        m = lab["targets"][target]["groups"][group["name"]]
        drives = m.get("instance_store_drives", m.get("local_nvme_drives", 0))
        assert drives == _local_drives(group), f"{name}: group {group['name']} maps {drives} local drives"
        if target == "aws":
            assert m.get("efa_interfaces", 0) == _efa(group), f"{name}: group {group['name']} EFA count"
        else:
            assert m.get("infiniband", False) == any(n["type"] == "infiniband" for n in group["hardware"]["nics"])
        # Drives the file system layout names must exist on the node.
        used = set()
        for layout in lab["filesystem"].get("beegfs", {}).get("servers", []):
            if group["name"] in layout["groups"]:
                for kind in ("meta", "storage"):
                    used |= set(layout.get(kind, {}).get("devices", []))
        used |= set(lab["filesystem"].get("nfs", {}).get("devices", [])) if "nfs-server" in group["roles"] else set()
        links = {f"/dev/disk/pfslab/data{i}" for i in range(drives)}
        assert used <= links, f"{name}: group {group['name']} uses {sorted(used - links)} beyond its {drives} drives"


@pytest.mark.parametrize("name", [n for n in CLOUD_LABS if not n.startswith("baremetal")])
def test_every_mapping_choice_is_explained_in_the_file(name: str) -> None:
    text = (KIT / "labs" / f"{name}.yaml").read_text()
    header = text.split("schema_version:")[0]
    lab = labs.load(name)
    for m in lab["targets"][lab["target"]]["groups"].values():
        kind = m.get("instance_type") or m.get("vm_size")
        assert kind in header, f"{name}: the header comment does not explain {kind}"
    assert "Not equivalent to the seed" in header
    assert "What maps to what, and why" in header


def _broken(tmp_path: Path, edit: Any) -> str:
    data = yaml.safe_load((KIT / "labs" / "aws-nfs.yaml").read_text())
    edit(data)
    (tmp_path / "aws-nfs.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(labs.LabError) as err:
        labs.load(str(tmp_path / "aws-nfs.yaml"))
    return str(err.value)


def test_an_unknown_aws_field_is_named(tmp_path: Path) -> None:
    msg = _broken(tmp_path, lambda d: d["targets"]["aws"]["groups"]["nfs"].update(instance_typo="d3en.12xlarge"))
    assert "targets.aws.groups.nfs.instance_typo: unknown field; allowed here: efa_interfaces, image, instance_store_drives, instance_type, root_volume_gb" in msg


def test_a_bad_efa_count_is_named(tmp_path: Path) -> None:
    msg = _broken(tmp_path, lambda d: d["targets"]["aws"]["groups"]["cli"].update(efa_interfaces="two"))
    assert "targets.aws.groups.cli.efa_interfaces: 'two' is not of type 'integer'" in msg


def test_a_missing_region_is_named(tmp_path: Path) -> None:
    msg = _broken(tmp_path, lambda d: d["targets"]["aws"].pop("region"))
    assert "targets.aws: 'region' is a required property" in msg


def test_a_bad_azure_size_is_named(tmp_path: Path) -> None:
    data = yaml.safe_load((KIT / "labs" / "azure-beegfs-medium.yaml").read_text())
    data["targets"]["azure"]["groups"]["ss"]["vm_size"] = "HB120rs_v3"
    (tmp_path / "azure-beegfs-medium.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(labs.LabError, match=r"targets\.azure\.groups\.ss\.vm_size: 'HB120rs_v3' is not allowed; allowed: "):
        labs.load(str(tmp_path / "azure-beegfs-medium.yaml"))


def _walk(schema: Any, path: str) -> list[str]:
    """Fields without a description, and objects that admit unknown fields."""
    problems: list[str] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema and schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties is not false")
        for key, sub in schema.get("properties", {}).items():
            if "description" not in sub and "$ref" not in sub:
                problems.append(f"{path}.{key}: no description")
            problems += _walk(sub, f"{path}.{key}")
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                problems += _walk(schema[key], f"{path}[]")
    return problems


def test_the_target_schemas_describe_every_field() -> None:
    schema = json.loads((KIT / "labs" / "schema.json").read_text())
    defs = schema["$defs"]
    mine = [k for k in defs if k.split("_")[0] in ("aws", "azure", "baremetal")]
    assert {"aws_target", "azure_target", "baremetal_target"} <= set(mine)
    problems = [p for k in mine for p in _walk(defs[k], k)]
    assert not problems, problems
    for cloud in ("aws", "azure", "baremetal"):
        assert defs["targets"]["properties"][cloud] == {"$ref": f"#/$defs/{cloud}_target"}


# ---- Terraform, statically (the cloud roots cannot be initialised here) ----------------

# The shared Terraform and every target's root and module (targets/<target>/).
TF_DIRS = sorted({p.parent for tree in ("terraform", "targets") for p in (KIT / tree).rglob("*.tf")
                  if ".terraform" not in p.parts})
# The local lab's root and modules take what the kit itself writes: no validation needed.
UNVALIDATED = {KIT / "terraform" / "modules" / "local-lab", KIT / "terraform" / "modules" / "local-lab" / "phase",
               KIT / "targets" / "local" / "root"}


def _hcl(path: Path) -> dict[str, Any]:
    hcl2 = pytest.importorskip("hcl2", reason="python-hcl2 is not installed (requirements.txt)")
    with path.open() as f:
        parsed: dict[str, Any] = hcl2.load(f)
    return parsed


@pytest.mark.parametrize("directory", TF_DIRS, ids=lambda p: str(p.relative_to(KIT)))
def test_every_variable_has_a_description_a_type_and_a_validation(directory: Path) -> None:
    for tf in sorted(directory.glob("*.tf")):
        for block in _hcl(tf).get("variable", []):
            for name, body in block.items():
                if name.startswith("__"):
                    continue
                where = f"{tf.relative_to(KIT)}: variable {name}"
                assert body.get("description"), f"{where} has no description"
                assert "type" in body, f"{where} has no type"
                if directory not in UNVALIDATED:
                    assert body.get("validation"), f"{where} has no validation"


@pytest.mark.parametrize("directory", TF_DIRS, ids=lambda p: str(p.relative_to(KIT)))
def test_every_provider_is_pinned(directory: Path) -> None:
    for tf in sorted(directory.glob("*.tf")):
        for block in _hcl(tf).get("terraform", []):
            for providers in block.get("required_providers", []):
                for name, spec in providers.items():
                    if name.startswith("__"):
                        continue
                    assert re.match(r"^~> [0-9]+\.[0-9]+$", str(spec.get("version", "")).strip('"')), f"{tf.relative_to(KIT)}: {name} is not pinned"


def _declared_variables(directory: Path) -> list[str]:
    return [
        name.strip('"')
        for tf in sorted(directory.glob("*.tf"))
        for block in _hcl(tf).get("variable", [])
        for name in block
        if not name.startswith("__")
    ]


@pytest.mark.parametrize("directory", TF_DIRS, ids=lambda p: str(p.relative_to(KIT)))
def test_every_variable_used_is_declared_once(directory: Path) -> None:
    """What `terraform validate` would say of roots and modules whose providers cannot
    be installed here, including variables shared through linked files."""
    declared = _declared_variables(directory)
    twice = sorted({n for n in declared if declared.count(n) > 1})
    assert not twice, f"{directory.relative_to(KIT)}: declared more than once: {twice}"
    used = {m for tf in directory.glob("*.tf") for m in re.findall(r"\bvar\.([A-Za-z_][\w-]*)", tf.read_text())}
    missing = sorted(used - set(declared))
    assert not missing, f"{directory.relative_to(KIT)}: used but not declared: {missing}"


def _aws_nfs(tmp_path: Path, edit: Any) -> dict[str, Any]:
    data = yaml.safe_load((KIT / "labs" / "aws-nfs.yaml").read_text())
    edit(data)
    (tmp_path / "aws-nfs.yaml").write_text(yaml.safe_dump(data))
    return labs.load(str(tmp_path / "aws-nfs.yaml"))


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/15"])
def test_ssh_from_a_network_wider_than_a_16_is_refused(tmp_path: Path, cidr: str) -> None:
    msg = _broken(tmp_path, lambda d: d["targets"]["aws"].update(ssh_cidrs=["203.0.113.0/24", cidr]))
    assert msg.count("\n") == 0
    assert f"targets.aws.ssh_cidrs[1]: {cidr!r} is not allowed; allowed: a network of prefix /16 or narrower" in msg
    assert "allow_wide_ssh_cidrs: true" in msg


@pytest.mark.parametrize("cidr", ["192.168.0.0/16", "203.0.113.7/32"])
def test_ssh_from_a_16_or_narrower_is_admitted(tmp_path: Path, cidr: str) -> None:
    lab = _aws_nfs(tmp_path, lambda d: d["targets"]["aws"].update(ssh_cidrs=[cidr]))
    assert lab["targets"]["aws"]["ssh_cidrs"] == [cidr]
    assert lab["targets"]["aws"]["allow_wide_ssh_cidrs"] is False


def test_a_lab_that_says_so_may_admit_ssh_from_anywhere(tmp_path: Path) -> None:
    lab = _aws_nfs(tmp_path, lambda d: d["targets"]["aws"].update(ssh_cidrs=["0.0.0.0/0"], allow_wide_ssh_cidrs=True))
    assert lab["targets"]["aws"]["ssh_cidrs"] == ["0.0.0.0/0"]
    # Saying false is the same as saying nothing.
    msg = _broken(tmp_path, lambda d: d["targets"]["aws"].update(ssh_cidrs=["0.0.0.0/0"], allow_wide_ssh_cidrs=False))
    assert "'0.0.0.0/0' is not allowed" in msg


def test_the_azure_target_has_the_same_ssh_rule(tmp_path: Path) -> None:
    data = yaml.safe_load((KIT / "labs" / "azure-beegfs-medium.yaml").read_text())
    data["targets"]["azure"]["ssh_cidrs"] = ["0.0.0.0/0"]
    (tmp_path / "azure-beegfs-medium.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(labs.LabError, match=r"targets\.azure\.ssh_cidrs\[0\]: '0\.0\.0\.0/0' is not allowed"):
        labs.load(str(tmp_path / "azure-beegfs-medium.yaml"))


def test_public_addresses_default_to_the_login_node_only() -> None:
    for name in ("aws-nfs", "aws-cephfs", "aws-beegfs-medium", "azure-beegfs-medium"):
        lab = labs.load(name)
        derived = layout.derive(lab)
        assert lab["targets"][lab["target"]]["public_ip"] == "login"
        assert derived["public_nodes"] == [derived["login"]]
        assert derived["login"] in derived["clients"]
        others = {n["name"] for n in derived["nodes"]} - {derived["login"]}
        assert derived["ssh_jump"] == {n: derived["login"] for n in others}


def test_public_ip_all_and_none(tmp_path: Path) -> None:
    every = layout.derive(_aws_nfs(tmp_path, lambda d: d["targets"]["aws"].update(public_ip="all")))
    assert every["public_nodes"] == [n["name"] for n in every["nodes"]] and every["ssh_jump"] == {}
    inside = layout.derive(_aws_nfs(tmp_path, lambda d: d["targets"]["aws"].update(public_ip="none")))
    assert inside["public_nodes"] == [] and inside["ssh_jump"] == {}
    msg = _broken(tmp_path, lambda d: d["targets"]["aws"].update(public_ip=True))
    assert "targets.aws.public_ip: True is not allowed; allowed: login, all, none" in msg


def test_the_lab_may_name_its_login_node(tmp_path: Path) -> None:
    lab = _aws_nfs(tmp_path, lambda d: d["network"].update(login="cli1"))
    derived = layout.derive(lab)
    assert derived["login"] == "cli1" and derived["public_nodes"] == ["cli1"] and "cli1" not in derived["ssh_jump"]
    msg = _broken(tmp_path, lambda d: d["network"].update(login="cli99"))
    assert "network.login: 'cli99' is not a node of the lab" in msg
