"""The lab instance (pfslab/instance.py): checkout id, names keyed on lab and checkout,
the owner taken from the user, BRIDGE/SUBNET overrides and the collision check."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslab import KIT_ROOT, instance, labs, layout


def resolved(name: str = "local", root: Path = Path("/home/ann/pfslab"), env: dict[str, str] | None = None,
             bridge: str | None = None, subnet: str | None = None) -> dict[str, Any]:
    lab = labs.load(name)
    if bridge or subnet:
        lab = instance.apply_local(lab, bridge, subnet)
    return instance.with_instance(layout.resolved(lab), env or {"USER": "ann"}, root)


def test_checkout_id_is_stable_per_path_and_differs_between_clones() -> None:
    a, b = Path("/home/ann/pfslab"), Path("/home/ann/pfslab-2")
    assert instance.checkout_id(a) == instance.checkout_id(a)
    assert re.fullmatch(r"[0-9a-f]{8}", instance.checkout_id(a))
    assert instance.checkout_id(a) != instance.checkout_id(b)
    # This checkout's id is of its real path.
    assert instance.checkout_id() == instance.checkout_id(KIT_ROOT.resolve())


def test_names_outside_the_checkout_are_keyed_on_lab_and_checkout() -> None:
    a = resolved(root=Path("/home/ann/pfslab"))["instance"]
    b = resolved(root=Path("/home/bob/pfslab"))["instance"]
    other_lab = instance.describe("local-small", "ann", Path("/home/ann/pfslab"))
    for key in ("id", "netns_prefix", "run_root", "cgroup"):
        assert len({a[key], b[key], other_lab[key]}) == 3, key
    assert a["id"] == f"local-{a['checkout']}"
    assert a["run_root"] == f"/run/pfslab/local-{a['checkout']}"
    assert re.fullmatch(r"pfs-[0-9a-f]{6}", a["netns_prefix"])
    assert a["cgroup"] == f"pfslab-throttle-local-{a['checkout']}"
    # Terraform's local-lab module allows run roots of at most 40 characters (sockets).
    assert len(a["run_root"]) <= 40


def test_a_local_labs_mount_path_is_per_checkout_a_cloud_labs_is_not() -> None:
    a, b = resolved(root=Path("/a")), resolved(root=Path("/b"))
    assert a["filesystem"]["mount"] == f"/mnt/pfslab/local-{a['instance']['checkout']}"
    assert a["filesystem"]["mount"] != b["filesystem"]["mount"]
    cloud = resolved("aws-cephfs")
    assert cloud["filesystem"]["mount"] == labs.load("aws-cephfs")["filesystem"]["mount"]


@pytest.mark.parametrize("env, want", [
    ({"OWNER": "team-a", "SUDO_USER": "ann", "USER": "root"}, "team-a"),
    ({"SUDO_USER": "ann", "USER": "root"}, "ann"),
    ({"USER": "bob"}, "bob"),
])
def test_the_owner_is_the_user_unless_given(env: dict[str, str], want: str) -> None:
    assert instance.owner(labs.load("aws-cephfs"), env) == want


def test_an_explicit_owner_in_a_lab_file_is_an_override_below_owner() -> None:
    lab = labs.load("aws-cephfs")
    lab["targets"]["aws"]["owner"] = "hpc-ops"
    assert instance.owner(lab, {"USER": "bob"}) == "hpc-ops"
    assert instance.owner(lab, {"USER": "bob", "OWNER": "ann"}) == "ann"


def test_a_bad_owner_is_refused_in_one_line() -> None:
    with pytest.raises(instance.InstanceError, match=r"^owner 'a;b' is not allowed; give OWNER= 1-128 letters"):
        instance.owner(None, {"OWNER": "a;b"})


def test_no_shipped_lab_forces_one_owner_on_everybody() -> None:
    for path in sorted((KIT_ROOT / "labs").glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        owners = {t: s["owner"] for t, s in (raw.get("targets") or {}).items() if isinstance(s, dict) and "owner" in s}
        assert not owners, f"{path.name} sets {owners}"


def test_bridge_and_subnet_given_at_lab_up_replace_the_lab_files() -> None:
    lab = resolved(bridge="pfslab1", subnet="10.98.0.0/24")
    assert lab["targets"]["local"]["bridge"] == "pfslab1"
    assert lab["network"]["subnet"] == "10.98.0.0/24"
    # The layout (node addresses) follows the new subnet.
    assert all(n["address"].startswith("10.98.0.") for n in lab[layout.KEY]["nodes"])


@pytest.mark.parametrize("bridge, subnet, message", [
    ("PfsLab1", None, "BRIDGE=PfsLab1 is not allowed; give 1-12 lower-case letters or digits"),
    ("pfslab-one-two", None, "BRIDGE=pfslab-one-two is not allowed"),
    (None, "10.98.0.0/33", "SUBNET=10.98.0.0/33 is not allowed; give an IPv4 network such as 10.98.0.0/24"),
    (None, "10.98.0.1/24", "SUBNET=10.98.0.1/24 is not allowed"),
    (None, "10.98.0.0/30", "SUBNET=10.98.0.0/30 is not allowed; give a network of at least 16 addresses"),
])
def test_bad_bridge_or_subnet_is_refused_in_one_line(bridge: str | None, subnet: str | None, message: str) -> None:
    with pytest.raises(instance.InstanceError, match="^" + re.escape(message)):
        instance.apply_local(labs.load("local"), bridge, subnet)


def record(run_base: Path, lab: dict[str, Any]) -> None:
    """What a local lab's lab-up leaves in its run root (terraform_data.record)."""
    path = Path(lab["instance"]["run_root"].replace(str(instance.RUN_BASE), str(run_base))) / "lab.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(lab))


def test_a_second_checkout_on_the_same_bridge_is_refused_naming_the_first(tmp_path: Path) -> None:
    first = resolved(root=Path("/home/ann/pfslab"))
    record(tmp_path, first)
    second = resolved(root=Path("/home/ann/pfslab-2"))
    problems = instance.collisions(second, tmp_path)
    assert problems[0] == (
        "bridge pfslab0 is used by lab local of the checkout /home/ann/pfslab; give this lab another: "
        "make lab-up LAB=local BRIDGE=pfslab1 SUBNET=10.98.0.0/24 (README: Two checkouts on one host)")
    assert problems[1].startswith("subnet 10.99.0.0/24 overlaps 10.99.0.0/24 of lab local of the checkout /home/ann/pfslab")
    assert len(problems) == 2


def test_an_overlapping_subnet_is_refused_even_on_another_bridge(tmp_path: Path) -> None:
    record(tmp_path, resolved(root=Path("/a")))
    problems = instance.collisions(resolved(root=Path("/b"), bridge="pfslab1", subnet="10.99.0.0/16"), tmp_path)
    assert len(problems) == 1 and problems[0].startswith("subnet 10.99.0.0/16 overlaps 10.99.0.0/24 of lab local of the checkout /a")


def test_another_bridge_and_subnet_come_up_beside_and_the_suggestion_skips_used_ones(tmp_path: Path) -> None:
    record(tmp_path, resolved(root=Path("/a")))
    record(tmp_path, resolved(root=Path("/b"), bridge="pfslab1", subnet="10.98.0.0/24"))
    assert instance.collisions(resolved(root=Path("/c"), bridge="pfslab2", subnet="10.97.0.0/24"), tmp_path) == []
    third = instance.collisions(resolved(root=Path("/c")), tmp_path)
    assert third[0].endswith("BRIDGE=pfslab2 SUBNET=10.97.0.0/24 (README: Two checkouts on one host)")


def test_a_labs_own_record_is_no_collision(tmp_path: Path) -> None:
    lab = resolved(root=Path("/a"))
    record(tmp_path, lab)
    assert instance.collisions(lab, tmp_path) == []


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).with_name("pfslab")), *args], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "PFSLAB_ROOT": str(KIT_ROOT), "USER": "ann"})


def test_lab_show_instance_records_the_instance_and_settings() -> None:
    out = run_cli("lab", "show", "local", "--instance", "--bridge", "pfslab1", "--subnet", "10.98.0.0/24")
    assert out.returncode == 0, out.stderr
    lab = json.loads(out.stdout)
    assert lab["instance"]["checkout"] == instance.checkout_id()
    assert lab["instance"]["owner"] == "ann"
    assert (lab["targets"]["local"]["bridge"], lab["network"]["subnet"]) == ("pfslab1", "10.98.0.0/24")


def test_lab_show_refuses_a_bad_bridge_and_a_bridge_for_a_cloud_lab() -> None:
    out = run_cli("lab", "show", "local", "--bridge", "Bad")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.splitlines() == [
        "pfslab lab: BRIDGE=Bad is not allowed; give 1-12 lower-case letters or digits, starting with a letter (e.g. pfslab1)"]
    out = run_cli("lab", "show", "aws-cephfs", "--bridge", "pfslab1")
    assert out.returncode == 2 and "BRIDGE and SUBNET are settings of a local lab; lab aws-cephfs runs on aws" in out.stderr


def test_calibration_probes_go_to_the_mount_path_the_lab_came_up_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not the lab file's: on the local target that path is not mounted (the instance's is)."""
    from pfslab import calibration, state

    lab = resolved(root=Path("/home/ann/pfslab"))
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "lab.json").write_text(json.dumps(lab))
    (tmp_path / "local" / "inventory.json").write_text(json.dumps({"lab": "local", "clients": ["cli0"]}))
    monkeypatch.setattr(state, "BUILD_DIR", tmp_path)
    monkeypatch.delenv("PFSLAB_RUN_DIR", raising=False)
    monkeypatch.setattr(calibration, "which", lambda *a, **k: "/usr/bin/fio")
    bench = calibration._Bench.of("local")
    assert bench.scratch_root == f"/mnt/pfslab/local-{lab['instance']['checkout']}/pfslab-bench"
