"""The registry (families/*/family.json, targets/<target>/target.json): one place for each
file-system and target fact.

The committed files are valid and ``labs/schema.json`` is what they make; a bad family
file is refused in one line; and an example family and an example target added from
fixtures only (``tests/fixtures/registry/``: a family file and a role stub, put in
``families/lustre/``, a target file,
an adapter stub and a lab for each) show up in the schema, the lab plan, the dry run
and ``make help`` of a copy of the kit, with no other file edited.
"""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pfslab import labs, registry

KIT = Path(__file__).resolve().parents[2]
EXAMPLE = KIT / "tests" / "fixtures" / "registry"
PFSLAB = KIT / ".venv" / "bin" / "pfslab"


def test_the_family_files_are_valid_and_the_schema_is_what_they_make() -> None:
    families = registry.families()
    assert set(families) >= {"cephfs", "beegfs", "nfs", "gpfs"}
    assert registry.schema_is_current(), "labs/schema.json is stale: run 'pfslab registry schema --write'"
    schema = labs._schema()
    assert schema["$defs"]["filesystem"]["properties"]["type"]["enum"] == list(families)
    assert schema["$defs"]["node_group"]["properties"]["roles"]["items"]["enum"] == [r.name for r in registry.all_roles()]


def test_phases_start_beegfs_management_first_and_clients_last() -> None:
    phases = [p for p in registry.family("beegfs").phases(registry.phase_count()) if p]
    assert phases[0] == ["beegfs-mgmt"]
    assert phases[-1] == ["beegfs-client"]
    assert phases.index(["beegfs-mon"]) > phases.index(["beegfs-meta", "beegfs-storage"])


def test_the_targets_and_their_settings_come_from_the_target_files() -> None:
    targets = registry.targets()
    assert set(targets) == {"local", "aws", "azure", "baremetal", "site"}
    schema = labs._schema()
    assert schema["properties"]["target"]["enum"] == list(targets)
    assert schema["$defs"]["targets"]["properties"]["aws"] == {"$ref": "#/$defs/aws_target"}
    assert [t for t, info in targets.items() if not info.remote] == ["local", "site"]
    assert [t for t, info in targets.items() if not info.provisions] == ["site"]
    # Runs started where the user works over their own SSH (a site's submit node) go on
    # when that session drops (pfslab/lifecycle/detached.py).
    assert [t for t, info in targets.items() if info.detached_runs] == ["site"]
    for name in targets:
        assert (KIT / "targets" / name / "adapter.sh").is_file(), f"target {name} has no adapter"


def test_the_schedulers_come_from_their_files() -> None:
    slurm = registry.scheduler("slurm")
    assert [(r.name, r.component, r.on, r.boot) for r in slurm.roles] == [
        ("slurm-controller", "controller", "login", ("install",)), ("slurm-node", "node", "clients", ("install",))]
    assert labs._schema()["$defs"]["scheduler"]["properties"]["type"]["enum"] == [*registry.schedulers(), "none"]
    with pytest.raises(registry.RegistryError, match=r"^unknown scheduler 'pbs'; known: slurm \(registry/schedulers\)$"):
        registry.scheduler("pbs")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"scheduler": "pbs"}, "scheduler 'pbs' must equal the file name 'slurm'"),
        ({"roles": [{"name": "slurm-ctl", "component": "controller", "on": "login", "boot": []}]},
         "role 'slurm-ctl' must be named slurm-controller"),
        ({"roles": [{"name": "slurm-node", "component": "node", "on": "servers", "boot": []}]},
         "roles.0.on: 'servers' is not one of"),
    ],
)
def test_a_bad_scheduler_file_is_refused_in_one_line(tmp_path: Path, change: dict[str, object], message: str) -> None:
    doc = json.loads((KIT / "registry" / "schedulers" / "slurm.json").read_text())
    doc.update(change)
    (tmp_path / "slurm.json").write_text(json.dumps(doc))
    with pytest.raises(registry.RegistryError, match=message) as caught:
        registry.schedulers(tmp_path)
    assert "\n" not in str(caught.value)


def test_data_and_client_roles_come_from_the_family_files() -> None:
    assert registry.data_roles() == {"ceph-osd", "beegfs-storage", "nfs-server", "gpfs-nsd"}
    assert registry.client_roles() == {"ceph-client", "beegfs-client", "nfs-client", "gpfs-client"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"filesystem": "other"}, "filesystem 'other' must equal the folder name 'lustre'"),
        ({"roles": [{"name": "lustre-mgs", "component": "mds", "phase": 0, "required": 1, "boot": [], "client": True}]},
         "role 'lustre-mgs' must be named lustre-mds"),
        ({"roles": [{"name": "lustre-mgs", "component": "mgs", "phase": 0, "required": 1, "boot": ["reboot"]}]},
         "roles.0.boot.0: 'reboot' is not one of"),
        ({"settings": {"other": {}}}, "settings has no 'lustre' key"),
        ({"roles": [{"name": "lustre-mgs", "component": "mgs", "phase": 5, "required": 1, "boot": []}]},
         "roles.0.phase: 5 is greater than the maximum of 4"),
    ],
)
def test_a_bad_family_file_is_refused_in_one_line(tmp_path: Path, change: dict[str, object], message: str) -> None:
    doc = json.loads((EXAMPLE / "lustre.json").read_text())
    doc.update(change)
    (tmp_path / "lustre").mkdir()
    (tmp_path / "lustre" / "family.json").write_text(json.dumps(doc))
    shutil.copy2(EXAMPLE / "lustre-role", tmp_path / "lustre" / "role")
    with pytest.raises(registry.RegistryError, match=message) as caught:
        registry.families(tmp_path)
    assert "\n" not in str(caught.value)


def test_a_family_folder_without_its_role_script_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "lustre").mkdir()
    shutil.copy2(EXAMPLE / "lustre.json", tmp_path / "lustre" / "family.json")
    with pytest.raises(registry.RegistryError, match=r"lustre/family.json: no executable role script beside it") as caught:
        registry.families(tmp_path)
    assert "\n" not in str(caught.value)
    shutil.copy2(EXAMPLE / "lustre-role", tmp_path / "lustre" / "role")
    (tmp_path / "lustre" / "role").chmod(0o644)
    registry.families.cache_clear()
    with pytest.raises(registry.RegistryError, match="no executable role script"):
        registry.families(tmp_path)


def test_the_local_lab_has_a_module_for_every_phase_a_family_may_use() -> None:
    schema = json.loads((KIT / "registry" / "family.schema.json").read_text())
    most = schema["properties"]["roles"]["items"]["properties"]["phase"]["maximum"]
    local_lab = (KIT / "terraform" / "modules" / "local-lab" / "main.tf").read_text()
    modules = re.findall(r'^module "phase(\d+)"', local_lab, re.M)
    assert [int(m) for m in modules] == list(range(most + 1))
    assert f"length(var.phases) == {most + 1}" in (KIT / "terraform" / "modules" / "local-lab" / "variables.tf").read_text()


# ---- an example family from fixtures only ------------------------------------------------

def kit_copy(root: Path) -> Path:
    """A copy of the kit with its own families/, labs/, registry/, scripts/ and terraform/ (the parts
    the example adds to or that read the registry relative to themselves)."""
    ignore = shutil.ignore_patterns(".terraform", "*.tfstate*", "__pycache__", ".terraform.lock.hcl")
    for name in ("families", "labs", "registry", "scripts", "targets", "terraform"):
        shutil.copytree(KIT / name, root / name, ignore=ignore, symlinks=True)
    shutil.copy2(KIT / "Makefile", root / "Makefile")
    for name in ("pfslab", "pyproject.toml", "reframe", "spack", ".venv", "requirements.txt"):
        (root / name).symlink_to(KIT / name)
    (root / "build").mkdir()
    return root


def run(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PFSLAB_ROOT": str(root), "TF_IN_AUTOMATION": "1"}
    env.pop("PFSLAB_LAB", None)
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def example_kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not PFSLAB.exists():
        pytest.skip(f"{PFSLAB} is missing: run 'make deps'")
    root = kit_copy(tmp_path_factory.mktemp("kit"))
    # The whole extension: a family file, a role script and a lab that uses them; a
    # target file, its adapter and a lab on it.
    (root / "families" / "lustre").mkdir()
    shutil.copy2(EXAMPLE / "lustre.json", root / "families" / "lustre" / "family.json")
    shutil.copy2(EXAMPLE / "lustre-role", root / "families" / "lustre" / "role")
    shutil.copy2(EXAMPLE / "lustre-example.yaml", root / "labs" / "lustre-example.yaml")
    (root / "targets" / "gcp").mkdir()
    shutil.copy2(EXAMPLE / "gcp.json", root / "targets" / "gcp" / "target.json")
    shutil.copy2(EXAMPLE / "gcp-adapter.sh", root / "targets" / "gcp" / "adapter.sh")
    shutil.copy2(EXAMPLE / "gcp-example.yaml", root / "labs" / "gcp-example.yaml")
    written = run(root, str(PFSLAB), "registry", "schema", "--write")
    assert written.returncode == 0, written.stderr
    return root


def test_an_example_family_appears_in_the_schema(example_kit: Path) -> None:
    schema = json.loads((example_kit / "labs" / "schema.json").read_text())
    assert "lustre" in schema["$defs"]["filesystem"]["properties"]["type"]["enum"]
    assert {"lustre-mgs", "lustre-mds", "lustre-oss", "lustre-client"} <= set(
        schema["$defs"]["node_group"]["properties"]["roles"]["items"]["enum"])
    assert schema["$defs"]["lustre"]["properties"]["fsname"]["pattern"] == "^[a-z][a-z0-9]{0,7}$"
    checked = run(example_kit, str(PFSLAB), "lab", "check", "lustre-example")
    assert checked.returncode == 0, checked.stderr
    # Its rules hold like any family's: a lab without an OSS is refused, naming the role.
    lab = (example_kit / "labs" / "lustre-example.yaml").read_text()
    (example_kit / "labs" / "lustre-nooss.yaml").write_text(
        lab.replace("name: lustre-example", "name: lustre-nooss").replace("roles: [lustre-oss]", "roles: [lustre-mds]"))
    refused = run(example_kit, str(PFSLAB), "lab", "check", "lustre-nooss")
    (example_kit / "labs" / "lustre-nooss.yaml").unlink()
    assert refused.returncode == 2
    assert "a lustre lab needs at least 1 node(s) with role lustre-oss" in refused.stderr


def test_an_example_family_appears_in_the_lab_plan(example_kit: Path, tmp_path: Path) -> None:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not installed (make deps-test installs it)")
    out = tmp_path / "render"
    rendered = run(example_kit, "scripts/render-user-data", "lustre-example", "baremetal", str(out))
    assert rendered.returncode == 0, rendered.stderr
    plan = json.loads((out / "plan.json").read_text())
    steps = plan["boot_steps"]
    # Phase order from the family file: the MGS before the MDS on the shared node.
    assert steps["mds0"] == [["common", "up", "tuning"], ["lustre", "install", "mgs"], ["lustre", "configure", "mgs"],
                             ["lustre", "install", "mds"]]
    assert steps["oss1"] == [["common", "up", "tuning"], ["lustre", "install", "oss"]]
    assert steps["cli0"][-1] == ["lustre", "configure", "client"]
    assert (out / "cli1.yaml").read_text().startswith("#cloud-config")


def test_an_example_family_appears_in_the_dry_run(example_kit: Path) -> None:
    dry = run(example_kit, "scripts/dry-run", "lustre-example")
    assert dry.returncode == 0, dry.stderr + dry.stdout
    jobs = sorted((example_kit / "build" / "runs" / "lustre-example").glob("*-dry/stage/**/rfm_job.sh"))
    assert jobs, dry.stdout
    text = "\n".join(j.read_text() for j in jobs)
    assert "/mnt/lustre/pfslab-bench" in text


def test_an_example_family_appears_in_make_help(example_kit: Path) -> None:
    helped = run(example_kit, "make", "--no-print-directory", "help")
    assert helped.returncode == 0, helped.stderr
    assert "lustre   family lustre  Lustre (example family" in helped.stdout
    assert "lustre-example" in helped.stdout


# ---- an example target from fixtures only --------------------------------------------------

def test_an_example_target_appears_in_the_schema(example_kit: Path) -> None:
    schema = json.loads((example_kit / "labs" / "schema.json").read_text())
    assert "gcp" in schema["properties"]["target"]["enum"]
    assert schema["$defs"]["targets"]["properties"]["gcp"] == {"$ref": "#/$defs/gcp_target"}
    checked = run(example_kit, str(PFSLAB), "lab", "check", "gcp-example")
    assert checked.returncode == 0, checked.stderr
    # Its settings are checked like any target's, and its defaults are filled in.
    got = run(example_kit, str(PFSLAB), "lab", "get", "gcp-example", "targets.gcp.expiry_hours")
    assert got.stdout.strip() == "8", got.stderr


def test_an_example_target_appears_in_the_lab_plan(example_kit: Path, tmp_path: Path) -> None:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not installed (make deps-test installs it)")
    out = tmp_path / "render"
    rendered = run(example_kit, "scripts/render-user-data", "gcp-example", "gcp", str(out))
    assert rendered.returncode == 0, rendered.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert {m["kind"] for m in plan["machines"].values()} == {"gcp_instance"}
    assert plan["machines"]["osd0"]["nvme_model"] == "nvme_card"
    assert plan["machines"]["cli1"]["image"] == "client"
    # The machine type is read from the setting the target file names (group_fields).
    assert plan["machines"]["cli1"]["type"] == "c2-standard-8"
    assert plan["tags"]["expiry"].endswith("Z")
    # network.first_address of the lab file places the nodes (mon0 is the first).
    assert plan["machines"]["mon0"]["ethernet_address"] == "10.20.0.20"
    assert plan["machines"]["cli1"]["ethernet_address"] == "10.20.0.25"
    # A node group the lab file does not map is a problem of the plan, as on aws.
    lab = (example_kit / "labs" / "gcp-example.yaml").read_text()
    (example_kit / "labs" / "gcp-unmapped.yaml").write_text(
        lab.replace("name: gcp-example", "name: gcp-unmapped").replace("      cli: {machine_type: c2-standard-8}\n", ""))
    unmapped = run(example_kit, "scripts/render-user-data", "gcp-unmapped", "gcp", str(tmp_path / "unmapped"))
    (example_kit / "labs" / "gcp-unmapped.yaml").unlink()
    assert unmapped.returncode == 1
    assert "targets.gcp.groups has no entry for node group cli" in unmapped.stderr


def test_an_example_target_appears_in_the_dry_run_and_lab_up(example_kit: Path) -> None:
    dry = run(example_kit, "scripts/dry-run", "gcp-example")
    assert dry.returncode == 0, dry.stderr + dry.stdout
    jobs = sorted((example_kit / "build" / "runs" / "gcp-example").glob("*-dry/stage/**/rfm_job.sh"))
    assert jobs and "/mnt/cephfs/pfslab-bench" in jobs[0].read_text()
    # lab-up needs the target's Terraform root (a real target brings targets/<t>/root
    # and its module), then goes through the adapter: its credential check, nothing made.
    no_root = run(example_kit, "scripts/lab", "up", "gcp-example")
    assert no_root.returncode == 2
    assert "target 'gcp' has no Terraform root" in no_root.stderr
    (example_kit / "targets" / "gcp" / "root").mkdir()
    env_free = run(example_kit, "env", "-u", "GOOGLE_APPLICATION_CREDENTIALS", "scripts/lab", "up", "gcp-example")
    assert env_free.returncode == 2
    assert "lab gcp-example needs Google Cloud credentials (none found: set GOOGLE_APPLICATION_CREDENTIALS)" in env_free.stderr
    assert not (example_kit / "build" / "gcp-example").exists()


def test_an_example_target_appears_in_make_help(example_kit: Path) -> None:
    helped = run(example_kit, "make", "--no-print-directory", "help")
    assert helped.returncode == 0, helped.stderr
    assert "  gcp        Google Cloud (example target" in helped.stdout


def test_a_role_script_is_found_in_its_family_folder_else_under_the_kits_own_roles() -> None:
    # Nodes run every role as scripts/roles/<family>; this machine keeps a family's in its folder.
    assert registry.role_script("ceph") == registry.FAMILIES_DIR / "cephfs" / "role"
    assert registry.role_script("ceph").is_file()
    assert registry.role_script("slurm") == registry.FAMILIES_DIR.parent / "scripts" / "roles" / "slurm"


# ---- a target's Python module (target.json's python) -------------------------------------

def target_folder(root: Path, python: str | None, module: str | None = None) -> Path:
    """targets/aws's target.json and adapter in ``root/aws``, its python set (None: left
    out) and, with ``module``, that text as the file it names."""
    folder = root / "aws"
    folder.mkdir()
    doc = json.loads((KIT / "targets" / "aws" / "target.json").read_text())
    doc.pop("python", None)
    if python is not None:
        doc["python"] = python
    (folder / "target.json").write_text(json.dumps(doc))
    shutil.copy2(KIT / "targets" / "aws" / "adapter.sh", folder / "adapter.sh")
    if python is not None and module is not None:
        (folder / python).write_text(module)
    return folder


def test_a_target_naming_a_missing_module_is_refused_in_one_line(tmp_path: Path) -> None:
    target_folder(tmp_path, "nothere.py")
    with pytest.raises(registry.RegistryError) as err:
        registry.targets(tmp_path)
    assert str(err.value) == (f"{tmp_path}/aws/target.json: python 'nothere.py': no such file {tmp_path}/aws/nothere.py "
                              "(a module beside target.json, or leave python out: no commands)")


@pytest.mark.parametrize("python", ["../cloud.py", "cloud", "Cloud.py"])
def test_a_target_naming_a_module_outside_its_folder_is_refused_in_one_line(tmp_path: Path, python: str) -> None:
    target_folder(tmp_path, python)
    with pytest.raises(registry.RegistryError, match=r"^[^\n]*target\.json: python: .* does not match"):
        registry.targets(tmp_path)


def test_a_targets_module_lacking_its_commands_is_refused_in_one_line(tmp_path: Path) -> None:
    target_folder(tmp_path, "half.py", 'HELP = "half"\n')
    target = registry.targets(tmp_path)["aws"]
    with pytest.raises(registry.RegistryError) as err:
        registry.target_module(target)
    assert str(err.value) == f"{tmp_path}/aws/half.py: defines no add_commands, run (a target's module defines HELP, add_commands, run)"


def test_a_targets_module_is_imported_from_its_folder_once(tmp_path: Path) -> None:
    folder = target_folder(tmp_path, "tool.py", 'import itertools\nCOUNT = itertools.count()\nHELP = "h"\n'
                           "def add_commands(parser): pass\ndef run(args): return next(COUNT)\n")
    target = registry.targets(tmp_path)["aws"]
    assert target.module == folder / "tool.py"
    first = registry.target_module(target)
    assert (first.HELP, first.run(None), first.run(None)) == ("h", 0, 1)  # type: ignore[arg-type]
    assert registry.target_module(target) is first


def test_a_target_without_a_module_has_no_commands(tmp_path: Path) -> None:
    target = registry.targets(target_folder(tmp_path, None).parent)["aws"]
    assert target.module is None
    with pytest.raises(registry.RegistryError, match=r"^target 'aws' has no Python module \(its target.json names no python\)$"):
        registry.target_module(target)
    # The shipped targets with commands: pfslab aws, pfslab site.
    assert [t.target for t in registry.targets().values() if t.module] == ["aws", "site"]


def test_a_target_that_provisions_nothing_must_require_its_nodes(tmp_path: Path) -> None:
    # pfslab.labs and the run's watchdog (pfslab.site_health) read such a lab's nodes from
    # its section's `nodes`, by the provisions flag: a target without them is refused.
    folder = tmp_path / "site"
    shutil.copytree(KIT / "targets" / "site", folder, ignore=shutil.ignore_patterns("__pycache__"))
    assert registry.targets(tmp_path)["site"].provisions is False
    doc = json.loads((folder / "target.json").read_text())
    doc["settings"]["site_target"]["required"].remove("nodes")
    (folder / "target.json").write_text(json.dumps(doc))
    registry.targets.cache_clear()
    with pytest.raises(registry.RegistryError) as err:
        registry.targets(tmp_path)
    assert str(err.value) == (f"{folder}/target.json: settings.site_target: requires no 'nodes'; a target that provisions "
                              "nothing must (its nodes, a count or names, that lab-up checks and the run's watchdog asks "
                              "the scheduler about)")
