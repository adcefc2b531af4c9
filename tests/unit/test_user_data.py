"""cloud-init user-data of every shipped lab x target, rendered and validated.

``scripts/render-user-data`` applies the provider-free root ``terraform/envs/render``
(no resources) for each lab and every target it maps (its ``target`` and each key
of its ``targets``), with ``extends`` resolved by the kit. Every node's user-data must
pass ``cloud-init schema --config-file`` (Debian's cloud-init, run on the first node
of each node group; every node through the same validator in one process), and
every first-boot script (what existing hosts run) must parse as POSIX sh.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslab import labs, registry

KIT = Path(__file__).resolve().parents[2]
CLOUD_INIT = shutil.which("cloud-init")
TERRAFORM = shutil.which("terraform")

pytestmark = pytest.mark.skipif(TERRAFORM is None, reason="terraform is not installed (make deps)")


def _pairs() -> list[tuple[str, str]]:
    pairs = []
    for name in labs.lab_names():
        lab = labs.load(name)
        for target in dict.fromkeys([lab["target"], *lab.get("targets", {})]):
            # A target that provisions nothing (site) boots nothing: no user-data.
            if registry.targets()[target].provisions:
                pairs.append((name, target))
    return pairs


def _render(lab: str, target: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KIT / "scripts" / "render-user-data"), lab, target, str(out)],
        capture_output=True, text=True, check=False, timeout=300,
    )


# Validate every file of a directory with cloud-init's own schema code (system python3).
_VALIDATE_ALL = """
import sys, pathlib
from cloudinit.config.schema import get_schema, validate_cloudconfig_file
bad = []
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.yaml")):
    try:
        validate_cloudconfig_file(str(f), get_schema())
    except Exception as err:  # SchemaValidationError and YAML errors alike
        bad.append(f"{f.name}: {err}")
print("\\n".join(bad))
sys.exit(1 if bad else 0)
"""


@pytest.mark.parametrize(("lab", "target"), _pairs(), ids=lambda v: str(v))
def test_user_data_of_every_node_is_valid_cloud_config(lab: str, target: str, tmp_path: Path) -> None:
    result = _render(lab, target, tmp_path)
    # What the lab file itself maps (a resolved lab has every target section it uses).
    mapped = target == "local" or target in labs.resolve(labs.lab_path(lab)).get("targets", {})
    if result.returncode != 0:
        # Only a seed lab whose target has no mapping yet may have problems, and they say so.
        assert not mapped, f"render of {lab} for {target} failed:\n{result.stderr}"
        assert f"targets.{target}" in result.stderr, result.stderr
    nodes = result.stdout.split()
    assert nodes, f"no node rendered for {lab} on {target}:\n{result.stderr}"
    expected = [n["name"] for n in labs.nodes(labs.load(lab))]
    assert sorted(nodes) == sorted(expected)
    plan = json.loads((tmp_path / "plan.json").read_text())

    for node in nodes:
        text = (tmp_path / f"{node}.yaml").read_text()
        assert text.startswith("#cloud-config\n")
        doc = yaml.safe_load(text)
        files = {f["path"]: f for f in doc["write_files"]}
        config = json.loads(files["/etc/pfslab/node.json"]["content"])
        assert config["node"]["name"] == node and config["target"] == target
        assert [n["name"] for n in config["cluster"]["nodes"]] == expected
        assert json.loads(files["/etc/pfslab/inventory.json"]["content"])["lab"] == lab
        steps = [cmd[3:] for cmd in doc["runcmd"] if isinstance(cmd, list) and cmd[0] == "env"]
        assert steps == [[f"/opt/pfslab/scripts/roles/{s[0]}", s[1], s[2]] for s in plan["boot_steps"][node]]
        assert steps[0] == ["/opt/pfslab/scripts/roles/common", "up", "tuning"]
        assert "PRIVATE KEY" not in text and "keyring" not in json.dumps(config["cluster"])
        script = tmp_path / f"{node}.sh"
        sh = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True, check=False)
        assert sh.returncode == 0, f"{script.name}: {sh.stderr}"

    if CLOUD_INIT is None:
        pytest.skip("cloud-init is not installed (apt-get install cloud-init)")
    first_of_group: dict[str, str] = {}
    for node in labs.nodes(labs.load(lab)):
        first_of_group.setdefault(node["group"], node["name"])
    for node in first_of_group.values():
        check = subprocess.run([CLOUD_INIT, "schema", "--config-file", str(tmp_path / f"{node}.yaml")],
                               capture_output=True, text=True, check=False)
        assert check.returncode == 0, f"{lab}/{target}/{node}: {check.stdout}{check.stderr}"
    every = subprocess.run(["/usr/bin/python3", "-c", _VALIDATE_ALL, str(tmp_path)], capture_output=True, text=True, check=False)
    assert every.returncode == 0, f"{lab}/{target}: invalid user-data:\n{every.stdout}{every.stderr}"


def test_a_broken_user_data_is_caught_by_the_validator(tmp_path: Path) -> None:
    if CLOUD_INIT is None:
        pytest.skip("cloud-init is not installed")
    (tmp_path / "bad.yaml").write_text("#cloud-config\nruncmd: []\nwrite_files: [{content: x}]\n")
    check = subprocess.run([CLOUD_INIT, "schema", "--config-file", str(tmp_path / "bad.yaml")], capture_output=True, text=True, check=False)
    assert check.returncode != 0
    every = subprocess.run(["/usr/bin/python3", "-c", _VALIDATE_ALL, str(tmp_path)], capture_output=True, text=True, check=False)
    assert every.returncode == 1 and "bad.yaml" in every.stdout


def test_wipe_devices_reach_only_the_nodes_of_their_group(tmp_path: Path) -> None:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not installed (make deps-test installs it)")
    lab = yaml.safe_load((KIT / "labs" / "baremetal-cephfs-hosts.yaml").read_text())
    lab["name"] = "wipe-test"
    osd = next(g for g in lab["node_groups"] if g["name"] == "osd")
    osd["wipe_devices"] = ["/dev/disk/by-id/nvme-old-data-1"]
    path = tmp_path / "wipe-test.yaml"
    path.write_text(yaml.safe_dump(lab))
    out = tmp_path / "render"
    result = _render(str(path), "baremetal", out)
    assert result.returncode == 0, result.stderr

    def node_config(node: str) -> dict[str, Any]:
        files = yaml.safe_load((out / f"{node}.yaml").read_text().split("\n", 1)[1])["write_files"]
        config: dict[str, Any] = json.loads(next(f["content"] for f in files if f["path"] == "/etc/pfslab/node.json"))
        return config

    assert node_config("osd1")["wipe_devices"] == ["/dev/disk/by-id/nvme-old-data-1"]
    assert "wipe_devices" not in node_config("mon0")


def test_an_invalid_lab_leaves_no_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "user-data" / "nope"
    result = _render("nope", "aws", out)
    assert result.returncode == 2
    assert "[render] error: lab nope is not valid (see above)" in result.stderr
    assert not (tmp_path / "user-data").exists()
