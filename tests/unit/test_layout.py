"""The lab's layout (pfslab.layout), derived once and read by Terraform and ReFrame."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pfslab import labexport, labs, layout, registry, state

PFSLAB = Path(sys.executable).with_name("pfslab")


def local_lab() -> dict[str, Any]:
    return labs.load("local")


def test_nodes_addresses_and_osd_ids_follow_the_groups() -> None:
    lab = local_lab()
    lab["network"]["first_address"] = 20
    # Two data drives on each OSD node: two OSD ids each, consecutive in node order.
    osd_group = next(g for g in lab["node_groups"] if "ceph-osd" in g["roles"])
    osd_group["hardware"] = {"drives": [{"kind": "nvme", "count": 2, "size_gb": 8, "use": "data"}]}
    derived = layout.derive(lab)
    names = [n["name"] for n in derived["nodes"]]
    assert names == ["mon0", "osd0", "osd1", "osd2", "cli0", "cli1"]
    assert [n["address"] for n in derived["nodes"]][:2] == ["10.99.0.20", "10.99.0.21"]
    assert [n["position"] for n in derived["nodes"]] == list(range(6))
    by_name = {n["name"]: n for n in derived["nodes"]}
    assert [by_name[f"osd{i}"]["osd_ids"] for i in range(3)] == [[0, 1], [2, 3], [4, 5]]
    assert by_name["cli0"]["osd_ids"] == [] and layout.osd_count(lab) == 6
    assert derived["clients"] == ["cli0", "cli1"]
    # Nodes that only run client roles boot the client image unless a target says otherwise.
    assert [by_name[n]["image"] for n in ("mon0", "osd0", "cli0")] == ["server", "server", "client"]
    assert derived["target"] == "local"


def test_phases_start_each_family_in_registry_order() -> None:
    beegfs = layout.derive(labs.load("beegfs-medium"))
    first = [pair["role"] for pair in beegfs["phases"][0]]
    assert first == ["beegfs-mgmt"], "the management service starts before meta, storage and clients"
    later = [pair["role"] for phase in beegfs["phases"][1:] for pair in phase]
    assert "beegfs-mgmt" not in later
    ceph = layout.derive(local_lab())
    assert ceph["phases"][0] == [{"node": "mon0", "role": "ceph-mon"}]
    assert {p["node"] for phase in ceph["phases"] for p in phase if p["role"] == "ceph-osd"} == {"osd0", "osd1", "osd2"}


def test_a_scheduler_puts_its_controller_on_the_login_node_and_slurmd_on_clients_last() -> None:
    lab = labs.load("local-slurm")
    derived = layout.derive(lab)
    roles = {n["name"]: n["roles"] for n in derived["nodes"]}
    assert roles["cli0"] == ["ceph-client", "slurm-controller", "slurm-node"]
    assert roles["cli1"] == ["ceph-client", "slurm-node"]
    assert all(not r.startswith("slurm-") for n in ("mon0", "osd0") for r in roles[n])
    # The scheduler's roles do not change which image a client boots.
    assert {n["name"]: n["image"] for n in derived["nodes"]}["cli1"] == "client"
    assert derived["phases"][-1][-3:] == [
        {"node": "cli0", "role": "slurm-controller"}, {"node": "cli0", "role": "slurm-node"},
        {"node": "cli1", "role": "slurm-node"}]
    assert all(not p["role"].startswith("slurm-") for phase in derived["phases"][:-1] for p in phase)
    # A lab naming its login node gets the controller there.
    lab["network"]["login"] = "mon0"
    roles = {n["name"]: n["roles"] for n in layout.derive(lab)["nodes"]}
    assert roles["mon0"][-1] == "slurm-controller" and "slurm-controller" not in roles["cli0"]
    # Without a scheduler, nothing is added.
    assert all(not r.startswith("slurm-") for n in layout.derive(local_lab())["nodes"] for r in n["roles"])


def test_the_scheduler_roles_and_their_nodes_come_from_its_registry_file(monkeypatch: pytest.MonkeyPatch) -> None:
    # A scheduler whose file puts a second login role first and its client role on the
    # login node only: the layout follows the file, not a list of its own.
    made = registry.Scheduler("slurm", "test", (
        registry.SchedulerRole("slurm-db", "db", "login", ()),
        registry.SchedulerRole("slurm-controller", "controller", "login", ("install",)),
        registry.SchedulerRole("slurm-node", "node", "clients", ("install",)),
    ))
    monkeypatch.setattr(registry, "schedulers", lambda: {"slurm": made})
    derived = layout.derive(labs.load("local-slurm"))
    roles = {n["name"]: n["roles"] for n in derived["nodes"]}
    assert roles["cli0"] == ["ceph-client", "slurm-db", "slurm-controller", "slurm-node"]
    assert roles["cli1"] == ["ceph-client", "slurm-node"]
    assert [p["role"] for p in derived["phases"][-1] if p["node"] == "cli0"][-3:] == ["slurm-db", "slurm-controller", "slurm-node"]


def test_existing_hosts_keep_their_addresses_on_baremetal_only() -> None:
    lab = labs.load("baremetal-cephfs-hosts")
    hosts = lab["targets"]["baremetal"]["hosts"]
    # Addresses the subnet's numbering would not give.
    hosts.update({name: f"192.0.2.{200 + i}" for i, name in enumerate(sorted(hosts))})
    on_metal = {n["name"]: n["address"] for n in layout.derive(lab, "baremetal")["nodes"]}
    assert all(on_metal[name] == address for name, address in hosts.items())
    elsewhere = {n["name"]: n["address"] for n in layout.derive(lab, "aws")["nodes"]}
    assert all(elsewhere[name] != address for name, address in hosts.items())


def test_lab_show_writes_the_layout_for_the_target() -> None:
    shown = subprocess.run([str(PFSLAB), "lab", "show", "--target", "aws", "local"],
                           capture_output=True, text=True, check=True)
    data = json.loads(shown.stdout)
    assert data["derived"] == layout.derive(labs.with_defaults(local_lab(), "aws"), "aws")
    assert data["derived"]["target"] == "aws"


def test_export_plans_each_lab_for_the_targets_it_is_meant_for(tmp_path: Path) -> None:
    count = labexport.export(tmp_path)
    pairs = json.loads((tmp_path / "pairs.json").read_text())
    assert count == len(pairs) == len(list(tmp_path.glob("*@*.json")))
    assert pairs["local/local"] == {"file": "local@local.json", "target": "local", "mapped": True, "planned": True}
    assert pairs["local/aws"]["planned"] is False
    assert pairs["aws-cephfs/aws"]["mapped"] is True
    # A seed lab on bare metal with neither hosts nor MAAS is planned but not mapped.
    assert pairs["pixstor-capex/baremetal"] == {
        "file": "pixstor-capex@baremetal.json", "target": "baremetal", "mapped": False, "planned": True}
    resolved = json.loads((tmp_path / "aws-cephfs@aws.json").read_text())
    assert resolved["derived"]["target"] == "aws" and resolved["targets"]["aws"]["expiry_hours"] >= 1


def test_a_run_reads_its_own_copy_of_the_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_of_lab = copy.deepcopy(layout.resolved(local_lab()))
    copy_of_lab["title"] = "the lab as this run recorded it"
    (tmp_path / "lab.json").write_text(json.dumps(copy_of_lab))
    monkeypatch.setenv("PFSLAB_RUN_DIR", str(tmp_path))
    assert state.lab("local")["title"] == "the lab as this run recorded it"
    # Another lab's copy is not taken for this one, nor a copy without a layout.
    assert state.lab("aws-cephfs")["name"] == "aws-cephfs"
    del copy_of_lab["derived"]
    (tmp_path / "lab.json").write_text(json.dumps(copy_of_lab))
    assert state.lab("local")["title"] != "the lab as this run recorded it"
    assert "derived" in state.lab("local")
