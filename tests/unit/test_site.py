"""The site target (storage that is already there): its lab section, and lab-up's checks
judged from fabricated probe outputs (targets/site/checks.py), the scratch marker, the
command that reaches the nodes; and `pfslab site`, the commands that module gives its
target. The module is loaded as the kit loads it, through the registry (target.json's
python)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslab import cli, instance, labexport, labs, layout, registry, site_health

#: targets/site/checks.py as the registry imports it (its classes are read at run time).
site: Any = registry.target_module(registry.targets()["site"])
KIT = Path(__file__).resolve().parents[2]
MOUNT = "/mnt/pfslab/local-0123abcd"


def write_site(tmp_path: Path, name: str = "mysite", change: dict[str, Any] | None = None) -> Path:
    data = yaml.safe_load((KIT / "labs" / "site-local.yaml").read_text())
    data["name"] = name
    for dotted, value in (change or {}).items():
        node = data
        *parents, last = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def resolved(change: dict[str, Any] | None = None, mount: str = MOUNT) -> dict[str, Any]:
    """site-local as lab-up resolves it, with its mount at ``mount``."""
    lab = labs.load("site-local")
    for dotted, value in (change or {}).items():
        node = lab
        *parents, last = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    lab = instance.with_instance(layout.resolved(lab), {"USER": "alice"})
    lab["filesystem"]["mount"] = mount
    return lab


def probe_lines(node: str, *, mount: bool = True, free_kb: int = 50_000_000, tools: tuple[str, ...] = ("ior", "mdtest"),
                writable: bool = True) -> str:
    """What one node's probe prints (targets/site/checks.py probe_script), as a tab-separated text."""
    rows = [["mount", MOUNT, "fuse.ceph-fuse"] if mount else ["mount-missing", "no such directory"]]
    rows.append(["writable", MOUNT] if writable else ["not-writable", MOUNT, "Permission denied"])
    rows.append(["free-kb", str(free_kb)])
    rows += [["tool", t, f"/opt/pfslab/view/bin/{t}", ""] for t in tools]
    rows += [["tool-missing", t] for t in ("ior", "mdtest") if t not in tools]
    return "".join("\t".join([site.TAG, node, *row]) + "\n" for row in rows)


# ---- the lab section -----------------------------------------------------------------

def test_the_shipped_site_lab_is_valid_and_provisions_nothing() -> None:
    lab = labs.load("site-local")
    assert lab["target"] == "site"
    assert registry.targets()["site"].provisions is False
    assert all(t.provisions for name, t in registry.targets().items() if name != "site")
    assert lab["targets"]["site"]["submit"] == "local"  # the schema's default, filled in
    assert lab["targets"]["site"]["check_timeout_s"] == 120


def test_a_site_lab_owes_no_server_roles(tmp_path: Path) -> None:
    # A cephfs lab the kit provisions needs monitors and OSDs; a site lab names its clients only.
    lab = labs.load(str(write_site(tmp_path)))
    assert [g["roles"] for g in lab["node_groups"]] == [["ceph-client"]]


def test_bad_submit_value_is_named_with_what_is_allowed(tmp_path: Path) -> None:
    path = write_site(tmp_path, change={"targets.site.submit": "Login Node!"})
    with pytest.raises(labs.LabError, match=r"targets\.site\.submit: 'Login Node!' is not allowed; allowed: local$"):
        labs.load(str(path))


def test_bad_scheduler_type_lists_slurm_and_none(tmp_path: Path) -> None:
    path = write_site(tmp_path, change={"scheduler.type": "pbs"})
    with pytest.raises(labs.LabError, match=r"scheduler\.type: 'pbs' is not allowed; allowed: slurm, none$"):
        labs.load(str(path))


def test_nodes_must_match_the_clients(tmp_path: Path) -> None:
    path = write_site(tmp_path, change={"targets.site.nodes": 3})
    with pytest.raises(labs.LabError, match=r"targets\.site\.nodes: 3 gives 3 node\(s\) but node_groups have 2 client\(s\)"):
        labs.load(str(path))


def test_scheduler_none_runs_on_this_machine_only(tmp_path: Path) -> None:
    path = write_site(tmp_path, change={"scheduler": {"type": "none"}})
    with pytest.raises(labs.LabError, match=r"targets\.site\.nodes: \['cli0', 'cli1'\] is not allowed with scheduler none; allowed: 1"):
        labs.load(str(path))


def test_min_free_gb_is_required(tmp_path: Path) -> None:
    data = yaml.safe_load(write_site(tmp_path).read_text())
    del data["targets"]["site"]["min_free_gb"]
    path = tmp_path / "mysite.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(labs.LabError, match=r"targets\.site: 'min_free_gb' is a required property"):
        labs.load(str(path))


def test_checkout_mount_names_the_local_labs_mount_of_this_checkout() -> None:
    lab = instance.with_instance(layout.resolved(labs.load("site-local")), {"USER": "alice"})
    local = instance.with_instance(layout.resolved(labs.load("local-slurm")), {"USER": "alice"})
    assert lab["filesystem"]["mount"] == local["filesystem"]["mount"]
    assert lab["filesystem"]["mount"] == f"/mnt/pfslab/local-{lab['instance']['checkout']}"


def test_a_site_target_is_not_exported_for_terraform(tmp_path: Path) -> None:
    labexport.export(tmp_path)
    assert not list(tmp_path.glob("*@site.json"))
    assert list(tmp_path.glob("site-local@local.json"))


# ---- the command that reaches the nodes ------------------------------------------------

def test_srun_carries_the_labs_access_options() -> None:
    lab = resolved({"scheduler.account": "acme", "scheduler.qos": "high", "scheduler.constraint": "ib"})
    cmd = site.launch_command(lab, "SCRIPT")
    assert cmd[:3] == ["srun", "-N2", "--ntasks-per-node=1"]
    for option in ("--nodelist=cli0,cli1", "--partition=local_slurm", "--account=acme", "--qos=high", "--constraint=ib"):
        assert option in cmd
    assert cmd[-3:] == ["bash", "-c", "SCRIPT"]


def test_a_count_of_nodes_lets_slurm_pick_them() -> None:
    cmd = site.launch_command(resolved({"targets.site.nodes": 2}), "S")
    assert "-N2" in cmd and not [c for c in cmd if c.startswith("--nodelist")]


def test_scheduler_none_runs_the_probe_here() -> None:
    lab = resolved({"scheduler": {"type": "none"}, "targets.site.nodes": 1})
    assert site.launch_command(lab, "S") == ["bash", "-c", "S"]


def test_the_probe_puts_the_labs_tools_first_and_looks_for_each_workloads_tool() -> None:
    lab = resolved({"targets.site.tools": {"modules": ["ior/4.0.0 openmpi"], "view": "/sw/view"}})
    script = site.probe_script(lab)
    assert "module load ior/4.0.0 openmpi ||" in script
    assert "PATH=/sw/view/bin:$PATH" in script
    assert "command -v ior" in script and "command -v mdtest" in script
    assert f"mount={MOUNT}\n" in script and f"scratch={MOUNT}/pfslab-site\n" in script


def test_an_ssh_host_as_submit_is_refused_in_one_line(tmp_path: Path) -> None:
    # The kit runs on the submit node itself (docs/acceptance.md says why): a host name
    # is refused by the lab file, and by lab-up's check should one get past it.
    path = write_site(tmp_path, change={"targets.site.submit": "login1"})
    with pytest.raises(labs.LabError, match=r"targets\.site\.submit: 'login1' is not allowed; allowed: local$"):
        labs.load(str(path))
    with pytest.raises(site.SiteError, match=r"targets\.site\.submit: 'login1' is not allowed; allowed: local \(run the kit on the submit node"):
        site.refuse_unsupported(resolved({"targets.site.submit": "login1"}))


# ---- judging the probe's output ----------------------------------------------------------

def test_every_node_fine_is_no_problem() -> None:
    lab = resolved()
    out = "srun: job 7 queued\n" + probe_lines("cli0") + probe_lines("cli1")
    reports = site.parse(out)
    assert list(reports) == ["cli0", "cli1"]
    assert reports["cli1"].fstype == "fuse.ceph-fuse"
    assert site.problems(lab, reports) == []


def test_nodes_are_kept_in_the_labs_order_whatever_order_they_answered_in() -> None:
    reports = site.in_lab_order(resolved(), site.parse(probe_lines("cli1") + probe_lines("cli0")))
    assert list(reports) == ["cli0", "cli1"]
    counted = site.in_lab_order(resolved({"targets.site.nodes": 2}), site.parse(probe_lines("n9") + probe_lines("n10")))
    assert list(counted) == ["n10", "n9"]


def test_a_node_without_the_mount_is_named() -> None:
    found = site.problems(resolved(), site.parse(probe_lines("cli0") + probe_lines("cli1", mount=False)))
    assert found == [f"node cli1: mount {MOUNT} is missing: no such directory"]


def test_a_node_that_did_not_answer_is_named() -> None:
    found = site.problems(resolved(), site.parse(probe_lines("cli0")))
    assert found == ["node cli1: no answer from the check job (is it up and in the partition?)"]


def test_too_little_room_names_the_node_and_the_need() -> None:
    found = site.problems(resolved(), site.parse(probe_lines("cli0") + probe_lines("cli1", free_kb=512 * 1024)))
    assert found == [f"node cli1: 0.5 GiB free under {MOUNT}; the lab needs 1 GiB (targets.site.min_free_gb)"]


def test_a_missing_tool_and_an_unwritable_scratch_are_named() -> None:
    found = site.problems(resolved(), site.parse(probe_lines("cli0", tools=("ior",), writable=False) + probe_lines("cli1")))
    assert found == [
        f"node cli0: scratch {MOUNT}/pfslab-site is not writable at {MOUNT}: Permission denied",
        "node cli0: tool(s) not found: mdtest (targets.site.tools: module lines, a view or PATH directories)",
    ]


def test_tool_versions_are_read_as_provenance_reads_them() -> None:
    out = "\t".join([site.TAG, "cli0", "tool", "fio", "/usr/bin/fio", "fio-3.33 "]) + "\n"
    assert site.parse(out)["cli0"].tools["fio"] == {"path": "/usr/bin/fio", "version": "3.33"}


def test_up_refuses_naming_the_node_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mount = tmp_path / "fs"
    mount.mkdir()
    lab = resolved(mount=str(mount))
    monkeypatch.setattr(site, "check", lambda _lab: (site.parse(probe_lines("cli0") + probe_lines("cli1", mount=False)), ""))
    with pytest.raises(site.SiteError, match=r"^lab site-local refused: node cli1: mount .* is missing"):
        site.up(lab, tmp_path / "state")
    assert not (tmp_path / "state").exists() and list(mount.iterdir()) == []


def test_up_claims_the_scratch_and_writes_the_inventory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mount = tmp_path / "fs"
    mount.mkdir()
    lab = resolved(mount=str(mount))
    monkeypatch.setattr(site, "check", lambda _lab: (site.parse(probe_lines("cli0") + probe_lines("cli1")), ""))
    monkeypatch.setattr(site, "scheduler_version", lambda: "slurm 22.05.8")
    line = site.up(lab, tmp_path / "state")
    assert "2 node(s) (cli0, cli1)" in line
    inv = json.loads((tmp_path / "state" / "inventory.json").read_text())
    assert inv["target"] == "site" and inv["clients"] == ["cli0", "cli1"] and inv["inside"] == "local"
    assert inv["site"]["nodes"]["cli1"]["tools"]["ior"]["path"] == "/opt/pfslab/view/bin/ior"
    assert inv["site"]["scheduler_version"] == "slurm 22.05.8"
    marker = json.loads((mount / "pfslab-site" / site.MARKER).read_text())
    assert marker["instance"] == lab["instance"]["id"] and marker["created"] is True


# ---- the scratch directory: the kit's only by its marker ---------------------------------------

def test_lab_down_removes_the_kits_scratch_and_nothing_else(tmp_path: Path) -> None:
    mount = tmp_path / "fs"
    (mount / "vendor").mkdir(parents=True)
    (mount / "vendor" / "data").write_text("keep")
    lab = resolved(mount=str(mount))
    site.claim_scratch(lab)
    (mount / "pfslab-site" / "ior" / "run1").mkdir(parents=True)
    (mount / "pfslab-site" / "ior" / "run1" / "file").write_text("x")
    (mount / "pfslab-site" / "link").symlink_to(mount / "vendor")
    assert "removed (the kit made it)" in site.release_scratch(lab)
    assert sorted(p.name for p in mount.iterdir()) == ["vendor"]
    assert (mount / "vendor" / "data").read_text() == "keep"


def test_an_existing_empty_scratch_is_emptied_not_removed(tmp_path: Path) -> None:
    lab = resolved(mount=str(tmp_path))
    (tmp_path / "pfslab-site").mkdir()
    site.claim_scratch(lab)
    (tmp_path / "pfslab-site" / "f").write_text("x")
    assert "emptied" in site.release_scratch(lab)
    assert list((tmp_path / "pfslab-site").iterdir()) == []


def test_a_scratch_with_foreign_files_is_refused(tmp_path: Path) -> None:
    lab = resolved(mount=str(tmp_path))
    (tmp_path / "pfslab-site").mkdir()
    (tmp_path / "pfslab-site" / "theirs").write_text("x")
    with pytest.raises(site.SiteError, match=r"holds files the kit did not write \(no \.pfslab-scratch\)"):
        site.claim_scratch(lab)
    assert "nothing removed" in site.release_scratch(lab)
    assert (tmp_path / "pfslab-site" / "theirs").exists()


def test_another_instances_scratch_is_neither_taken_nor_removed(tmp_path: Path) -> None:
    lab = resolved(mount=str(tmp_path))
    site.claim_scratch(lab)
    (tmp_path / "pfslab-site" / "f").write_text("x")
    other = resolved(mount=str(tmp_path))
    other["instance"] = {**other["instance"], "id": "site-local-ffffffff", "root": "/elsewhere"}
    owner = re.escape(lab["instance"]["root"])
    with pytest.raises(site.SiteError, match=rf"is marked as lab site-local's of checkout {owner};"):
        site.claim_scratch(other)
    assert "nothing removed" in site.release_scratch(other)
    assert (tmp_path / "pfslab-site" / "f").exists()


# ---- pfslab site -----------------------------------------------------------------------------------

def test_the_registry_loads_the_checks_from_the_targets_folder() -> None:
    target = registry.targets()["site"]
    assert target.module == registry.TARGETS_DIR / "site" / "checks.py"
    assert registry.target_module(target) is site and site.__file__ == str(target.module)
    # The nodes are read where the run's watchdog reads them: one fact in one place.
    assert site.node_names is site_health.node_names and site.node_count is site_health.node_count


def test_pfslab_site_is_the_modules_parser(capsys: pytest.CaptureFixture[str]) -> None:
    args = cli.build_parser(["site"]).parse_args(["site", "up", "lab.json", "build/x"])
    assert (args.command, args.site_command, args.resolved, args.state, args.handler) == \
        ("site", "up", "lab.json", "build/x", site.run)
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser(["site"]).parse_args(["site", "up", "lab.json"])
    assert exit_.value.code == 2 and "state" in capsys.readouterr().err


def write_resolved(tmp_path: Path, lab: dict[str, Any]) -> Path:
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(lab))
    return path


def test_pfslab_site_check_prints_each_problem_and_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = write_resolved(tmp_path, resolved())
    monkeypatch.setattr(site, "check", lambda _lab: (site.parse(probe_lines("cli0") + probe_lines("cli1", mount=False)), ""))
    assert cli.main(["site", "check", str(path)]) == 1
    assert capsys.readouterr().out == f"node cli1: mount {MOUNT} is missing: no such directory\n"
    monkeypatch.setattr(site, "check", lambda _lab: (site.parse(probe_lines("cli0") + probe_lines("cli1")), ""))
    assert cli.main(["site", "check", str(path)]) == 0
    assert capsys.readouterr().out == "lab site-local: every check passed on cli0, cli1\n"


def test_pfslab_site_up_refusal_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # What the adapter (targets/site/adapter.sh) strips "pfslab site: " from.
    path = write_resolved(tmp_path, resolved({"targets.site.submit": "login1"}))
    assert cli.main(["site", "up", str(path), str(tmp_path / "state")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pfslab site: targets.site.submit: 'login1' is not allowed; allowed: local") and err.count("\n") == 1


def test_pfslab_site_down_says_what_it_removed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mount = tmp_path / "fs"
    mount.mkdir()
    lab = resolved(mount=str(mount))
    site.claim_scratch(lab)
    assert cli.main(["site", "down", str(write_resolved(tmp_path, lab))]) == 0
    assert capsys.readouterr().out == f"scratch {mount}/pfslab-site: removed (the kit made it)\n"
    assert list(mount.iterdir()) == []


def test_pfslab_site_health_with_scheduler_none_asks_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_resolved(tmp_path, resolved({"scheduler": {"type": "none"}, "targets.site.nodes": 1}))
    assert cli.main(["site", "health", str(path)]) == 0 and capsys.readouterr().out == ""
