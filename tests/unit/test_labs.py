"""Lab files: every shipped lab is valid; a broken one is refused naming its field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pfslab import labs, registry

KIT = Path(__file__).resolve().parents[2]
#: The kit's command, installed beside the interpreter running the tests (make deps).
PFSLAB = Path(sys.executable).with_name("pfslab")


def write_lab(tmp_path: Path, name: str, change: dict[str, object] | None = None, drop: str | None = None) -> Path:
    data = yaml.safe_load((KIT / "labs" / "local.yaml").read_text())
    data["name"] = name
    for dotted, value in (change or {}).items():
        node = data
        *parents, last = dotted.split(".")
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[last] = value  # type: ignore[index]
    if drop:
        del data[drop]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("name", labs.lab_names())
def test_every_shipped_lab_is_valid(name: str) -> None:
    lab = labs.load(name)
    assert lab["name"] == name
    assert labs.client_nodes(lab), f"lab {name} has no client nodes"


def test_local_lab_has_the_shape_the_issue_asks_for() -> None:
    lab = labs.load("local")
    roles = [role for node in labs.nodes(lab) for role in node["roles"]]
    assert roles.count("ceph-osd") >= 3
    assert roles.count("ceph-client") >= 2
    assert {"ceph-mon", "ceph-mgr", "ceph-mds"} <= set(roles)


def test_unknown_lab_names_the_labs_that_exist() -> None:
    with pytest.raises(labs.LabError, match=r"unknown lab 'nope'; labs that exist: .*local"):
        labs.load("nope")


def test_unknown_field_is_named_with_what_is_allowed(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "typo", {"filesystem.moutn": "/x"})
    with pytest.raises(labs.LabError, match=r"filesystem\.moutn: unknown field; allowed here: .*mount"):
        labs.load(str(path))


def test_bad_enum_value_lists_the_allowed_ones(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "enum", {"filesystem.type": "lustre"})
    allowed = ", ".join(registry.families())
    with pytest.raises(labs.LabError, match=rf"filesystem\.type: 'lustre' is not allowed; allowed: {allowed}$"):
        labs.load(str(path))


def test_out_of_range_number_names_the_path(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "count", {"node_groups.1.count": 0})
    with pytest.raises(labs.LabError, match=r"node_groups\[1\]\.count: 0 is less than the minimum of 1"):
        labs.load(str(path))


def test_missing_required_section(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "nonet", drop="network")
    with pytest.raises(labs.LabError, match=r"'network' is a required property"):
        labs.load(str(path))


def test_name_must_match_the_file(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "other")
    path.rename(tmp_path / "renamed.yaml")
    with pytest.raises(labs.LabError, match=r"name: 'other' must equal the file name 'renamed'"):
        labs.load(str(tmp_path / "renamed.yaml"))


def test_replicas_need_enough_osds(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "replicas", {"filesystem.ceph.pool_size": 4})
    with pytest.raises(labs.LabError, match=r"pool_size: 4 replicas need at least as many OSDs; the lab has 3"):
        labs.load(str(path))


def test_a_cephfs_lab_needs_its_roles(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "nomds", {"node_groups.0.roles": ["ceph-mon", "ceph-mgr"]})
    with pytest.raises(labs.LabError, match=r"needs at least 1 node\(s\) with role ceph-mds"):
        labs.load(str(path))


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\nnode_groups: [\n")
    with pytest.raises(labs.LabError, match=r"broken\.yaml: line \d+"):
        labs.load(str(path))


def test_cli_check_fails_in_one_line_with_status_2(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "cli", {"filesystem.type": "zfs"})
    run = subprocess.run(
        [str(PFSLAB), "lab", "check", str(path)],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "filesystem.type: 'zfs' is not allowed" in lines[0]


def test_nodes_are_named_group_and_index() -> None:
    names = [n["name"] for n in labs.nodes(labs.load("local"))]
    assert names == ["mon0", "osd0", "osd1", "osd2", "cli0", "cli1"]


def test_labs_readme_is_generated_from_the_schema() -> None:
    from pfslab import schemadoc

    committed = (KIT / "labs" / "README.md").read_text()
    assert committed == schemadoc.render(), "labs/README.md is stale: run 'pfslab lab docs > labs/README.md'"


def test_every_schema_field_has_a_description() -> None:
    schema = labs._schema()
    missing = [
        f"{where}.{name}"
        for where, node in [("(top)", schema), *schema["$defs"].items()]
        for name, child in node.get("properties", {}).items()
        if not child.get("description") and "$ref" not in child
    ]
    assert missing == [], f"fields without a description in labs/schema.json: {missing}"


def test_a_resolved_lab_has_the_schemas_defaults_filled_in() -> None:
    raw = yaml.safe_load((KIT / "labs" / "baremetal-cephfs-hosts.yaml").read_text())
    assert "expiry_hours" not in raw["targets"]["baremetal"]
    lab = labs.load("baremetal-cephfs-hosts")
    assert lab["targets"]["baremetal"]["expiry_hours"] == labs.schema_at("targets.baremetal.expiry_hours")["default"] == 8
    assert lab["benchmark"]["scratch"] == raw.get("benchmark", {}).get("scratch", "pfslab-bench")
    # A value the lab states wins over the default.
    local = labs.load("local")
    assert local["benchmark"]["default_mode"] == "quick"
    # Rendered for another target, that target's section gets its defaults too.
    assert labs.with_defaults(local, "azure")["targets"]["azure"] == {
        "allow_wide_ssh_cidrs": False, "encryption_at_host": True, "expiry_hours": 8, "proximity_placement": True, "public_ip": "login",
        "ssh_user": "root"}
    # Entries of a map (each node group of targets.aws.groups) get their defaults too.
    aws = labs.load("aws-cephfs")["targets"]["aws"]
    assert {g["root_volume_gb"] for g in aws["groups"].values()} == {64}
    assert all(image["owners"] == ["self"] for image in aws["images"].values())


def test_lab_get_answers_a_field_the_lab_leaves_out_with_the_schemas_default() -> None:
    def get(field: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PFSLAB), "lab", "get", "aws-cephfs", field],
                              capture_output=True, text=True, check=False)

    assert get("targets.local.bridge").stdout.strip() == "pfslab0"
    assert get("targets.local.ready_timeout_s").stdout.strip() == "60"
    missing = get("targets.local.nosuch")
    assert missing.returncode == 2
    assert "has no field 'targets.local.nosuch'" in missing.stderr


def test_the_first_node_address_is_a_lab_setting_with_the_schemas_default(tmp_path: Path) -> None:
    # local has 6 nodes: a /28 holds 14 hosts, enough from host 8 on but not from the default 10.
    assert labs.load("local")["network"]["first_address"] == 10
    with pytest.raises(labs.LabError, match=r"network\.subnet: 10\.99\.0\.0/28 has too few addresses for 6 nodes"):
        labs.load(str(write_lab(tmp_path, "small", {"network.subnet": "10.99.0.0/28"})))
    fits = labs.load(str(write_lab(tmp_path, "fits", {"network.subnet": "10.99.0.0/28", "network.first_address": 8})))
    assert fits["network"]["first_address"] == 8


@pytest.mark.parametrize("mount", ["/", "/usr", "/usr/local/x", "/etc/ceph", "/var/lib/x", "/home", "/mnt", "/tmp",
                                   "/proc/x", "/boot", "/run/x", "/lib64", "/root"])
def test_a_mount_on_a_system_directory_is_refused(tmp_path: Path, mount: str) -> None:
    path = write_lab(tmp_path, "sysmount", {"filesystem.mount": mount})
    with pytest.raises(labs.LabError) as err:
        labs.load(str(path))
    assert str(err.value).count("\n") == 0
    assert f"filesystem.mount: {mount!r} is not allowed; allowed: a directory of the lab's own" in str(err.value)


@pytest.mark.parametrize("mount", ["/mnt/../etc", "/mnt//x", "/mnt/x/", "/mnt/./x", "relative/x"])
def test_a_mount_path_that_is_not_plain_is_refused(tmp_path: Path, mount: str) -> None:
    path = write_lab(tmp_path, "oddmount", {"filesystem.mount": mount})
    with pytest.raises(labs.LabError, match=r"filesystem\.mount: .* is not allowed"):
        labs.load(str(path))


@pytest.mark.parametrize("mount", ["/mnt/x'y", '/mnt/"x"', "/mnt/$(reboot)", "/mnt/`id`", "/mnt/x;rm",
                                   "/home/u/.ssh", "/mnt/.hidden"])
def test_a_mount_path_with_shell_characters_or_a_hidden_part_is_refused_in_one_line(tmp_path: Path, mount: str) -> None:
    path = write_lab(tmp_path, "shellmount", {"filesystem.mount": mount})
    with pytest.raises(labs.LabError) as err:
        labs.load(str(path))
    assert "\n" not in str(err.value)
    assert f"filesystem.mount: {mount!r} is not allowed; allowed: an absolute path of letters, digits and . _ + - " \
        "with no component starting with '.'" in str(err.value)


@pytest.mark.parametrize("mount", ["/opt/pfslab", "/opt/pfslab/build", "/root/.ssh", "/root/fs"])
def test_a_mount_on_the_kit_or_roots_home_is_refused(tmp_path: Path, mount: str) -> None:
    path = write_lab(tmp_path, "kitmount", {"filesystem.mount": mount})
    with pytest.raises(labs.LabError) as err:
        labs.load(str(path))
    assert f"filesystem.mount: {mount!r} is not allowed" in str(err.value)


@pytest.mark.parametrize("mount", ["/mnt/pfslab/x", "/mmfs1", "/home/lab/fs", "/scratch", "/srv/beegfs", "/opt/gpfs",
                                   "/mnt/fs-1.2_x"])
def test_a_mount_of_the_labs_own_is_accepted(tmp_path: Path, mount: str) -> None:
    lab = labs.load(str(write_lab(tmp_path, "ownmount", {"filesystem.mount": mount})))
    assert lab["filesystem"]["mount"] == mount


@pytest.mark.parametrize("scratch", ["../..", "bench/../../x", "/abs", "a//b", "./x", "x/"])
def test_a_scratch_outside_the_mount_is_refused(tmp_path: Path, scratch: str) -> None:
    path = write_lab(tmp_path, "scratchy", {"benchmark.scratch": scratch})
    with pytest.raises(labs.LabError) as err:
        labs.load(str(path))
    assert f"benchmark.scratch: {scratch!r} is not allowed; allowed: a relative path under the mount" in str(err.value).replace("allowed: A ", "allowed: a ")


def test_an_nfs_export_on_a_system_directory_is_refused() -> None:
    data = yaml.safe_load((KIT / "labs" / "nss73-ha.yaml").read_text())
    data["filesystem"].setdefault("nfs", {})["export"] = "/etc"
    errors = labs.validate(data, "nss73-ha")
    assert any(e.startswith("filesystem.nfs.export: '/etc' is not allowed") for e in errors), errors


def test_kernel_tuning_with_no_role_to_apply_it_to_is_refused(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "untargeted", {"os_tuning.sysctl": {"vm.dirty_ratio": 20}})
    with pytest.raises(labs.LabError, match=r"os_tuning: sysctl set but os_tuning.roles names no role to apply them to; "
                                            r"allowed: roles of this lab \(ceph-mon, ceph-mgr, ceph-mds, ceph-osd, ceph-client\)"):
        labs.load(str(path))
    # Named, it is valid; an empty sysctl map (the local lab's) needs no role.
    labs.load(str(write_lab(tmp_path, "targeted", {"os_tuning.sysctl": {"vm.dirty_ratio": 20}, "os_tuning.roles": ["ceph-osd"]})))
    assert labs.load("local")["os_tuning"]["roles"] == []


def test_tuning_a_role_the_lab_does_not_have_is_refused(tmp_path: Path) -> None:
    path = write_lab(tmp_path, "elsewhere", {"os_tuning.roles": ["beegfs-storage"]})
    with pytest.raises(labs.LabError, match=r"os_tuning.roles: 'beegfs-storage' is no role of this lab's node groups; "
                                            r"they have: ceph-mon, ceph-mgr, ceph-mds, ceph-osd, ceph-client"):
        labs.load(str(path))
    with pytest.raises(labs.LabError, match=r"os_tuning\.roles\[0\]: 'lustre-oss' is not allowed; allowed: beegfs-mgmt"):
        labs.load(str(write_lab(tmp_path, "unknown", {"os_tuning.roles": ["lustre-oss"]})))


@pytest.mark.parametrize(("content", "message"), [
    (b"lab: x\n\xd0\xff\x00binary", "byte 7 is not UTF-8 text; allowed: a lab file is YAML text in UTF-8"),
    (b"name: x\x00\x01\n", "character U+0000 at position 7 cannot be in YAML text; allowed: printable characters"),
])
def test_a_binary_lab_file_is_one_line_not_a_traceback(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(content)
    with pytest.raises(labs.LabError) as err:
        labs.load(str(path))
    assert "\n" not in str(err.value)
    assert str(err.value).endswith(f"binary.yaml: {message} (is this a binary file?)")


@pytest.mark.parametrize("field", ["partition", "account", "qos", "constraint"])
@pytest.mark.parametrize("value", ["two words", "batch;reboot", "$(id)", "a`id`", "x|y", "q'o", "", "a" * 65])
def test_a_scheduler_access_option_with_spaces_or_shell_characters_is_refused_in_one_line(
    tmp_path: Path, field: str, value: str,
) -> None:
    path = write_lab(tmp_path, "badsched", {"scheduler": {"type": "slurm", field: value}})
    with pytest.raises(labs.LabError) as err:
        labs.load(str(path))
    message = str(err.value)
    assert "\n" not in message and "more problem" not in message
    assert f"scheduler.{field}: {value!r} is not allowed; allowed: " in message
    assert "letters, digits, '_', '.' or '-' (no spaces or shell characters)" in message


def test_a_scheduler_launcher_other_than_srun_or_mpirun_is_refused() -> None:
    data = {**labs.resolve(KIT / "labs" / "local-slurm.yaml"), "scheduler": {"type": "slurm", "launcher": "pbsrun"}}
    assert labs.validate(data, "local-slurm") == ["scheduler.launcher: 'pbsrun' is not allowed; allowed: srun, mpirun"]


def test_a_scheduler_with_every_access_option_is_accepted_and_srun_is_the_default(tmp_path: Path) -> None:
    access = {"partition": "batch", "account": "acct-1.x", "qos": "normal", "constraint": "ssd_2"}
    lab = labs.load(str(write_lab(tmp_path, "goodsched", {"scheduler": {"type": "slurm", **access}})))
    assert lab["scheduler"] == {"type": "slurm", **access, "launcher": "srun"}
