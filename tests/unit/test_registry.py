"""The family registry (registry/families/*.json): one place for each file-system fact.

The committed family files are valid and ``labs/schema.json`` is what they make; a bad
family file is refused in one line; and an example family added from fixtures only
(``tests/fixtures/registry/``: its family file, a role stub and a lab) shows up in the
schema, the lab plan, the dry run and ``make help`` of a copy of the kit, with no
other file edited.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pfslab import labs, registry

KIT = Path(__file__).resolve().parents[2]
EXAMPLE = KIT / "tests" / "fixtures" / "registry"
PYTHON = KIT / ".venv" / "bin" / "python"


def test_the_family_files_are_valid_and_the_schema_is_what_they_make() -> None:
    families = registry.families()
    assert set(families) >= {"cephfs", "beegfs", "nfs", "gpfs"}
    assert registry.schema_is_current(), "labs/schema.json is stale: run 'scripts/pfslab registry schema --write'"
    schema = labs._schema()
    assert schema["$defs"]["filesystem"]["properties"]["type"]["enum"] == list(families)
    assert schema["$defs"]["node_group"]["properties"]["roles"]["items"]["enum"] == [r.name for r in registry.all_roles()]


def test_phases_start_beegfs_management_first_and_clients_last() -> None:
    phases = [p for p in registry.family("beegfs").phases(registry.phase_count()) if p]
    assert phases[0] == ["beegfs-mgmt"]
    assert phases[-1] == ["beegfs-client"]
    assert phases.index(["beegfs-mon"]) > phases.index(["beegfs-meta", "beegfs-storage"])


def test_data_and_client_roles_come_from_the_family_files() -> None:
    assert registry.data_roles() == {"ceph-osd", "beegfs-storage", "nfs-server", "gpfs-nsd"}
    assert registry.client_roles() == {"ceph-client", "beegfs-client", "nfs-client", "gpfs-client"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"filesystem": "other"}, "filesystem 'other' must equal the file name 'lustre'"),
        ({"roles": [{"name": "lustre-mgs", "component": "mds", "phase": 0, "required": 1, "boot": [], "client": True}]},
         "role 'lustre-mgs' must be named lustre-mds"),
        ({"roles": [{"name": "lustre-mgs", "component": "mgs", "phase": 0, "required": 1, "boot": ["reboot"]}]},
         "roles.0.boot.0: 'reboot' is not one of"),
        ({"settings": {"other": {}}}, "settings has no 'lustre' key"),
    ],
)
def test_a_bad_family_file_is_refused_in_one_line(tmp_path: Path, change: dict[str, object], message: str) -> None:
    doc = json.loads((EXAMPLE / "lustre.json").read_text())
    doc.update(change)
    (tmp_path / "lustre.json").write_text(json.dumps(doc))
    with pytest.raises(registry.RegistryError, match=message) as caught:
        registry.families(tmp_path)
    assert "\n" not in str(caught.value)


# ---- an example family from fixtures only ------------------------------------------------

def kit_copy(root: Path) -> Path:
    """A copy of the kit with its own labs/, registry/, scripts/ and terraform/ (the parts
    the example adds to or that read the registry relative to themselves)."""
    ignore = shutil.ignore_patterns(".terraform", "*.tfstate*", "__pycache__", ".terraform.lock.hcl")
    for name in ("labs", "registry", "scripts", "terraform"):
        shutil.copytree(KIT / name, root / name, ignore=ignore, symlinks=True)
    shutil.copy2(KIT / "Makefile", root / "Makefile")
    for name in ("reframe", ".venv", "requirements.txt"):
        (root / name).symlink_to(KIT / name)
    (root / "build").mkdir()
    return root


def run(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PFSLAB_ROOT": str(root), "TF_IN_AUTOMATION": "1"}
    env.pop("PFSLAB_LAB", None)
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def example_kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not PYTHON.exists():
        pytest.skip(f"{PYTHON} is missing: run 'make deps'")
    root = kit_copy(tmp_path_factory.mktemp("kit"))
    # The whole extension: a family file, a role script and a lab that uses them.
    shutil.copy2(EXAMPLE / "lustre.json", root / "registry" / "families" / "lustre.json")
    shutil.copy2(EXAMPLE / "lustre-role", root / "scripts" / "roles" / "lustre")
    shutil.copy2(EXAMPLE / "lustre-example.yaml", root / "labs" / "lustre-example.yaml")
    written = run(root, str(PYTHON), "scripts/pfslab", "registry", "schema", "--write")
    assert written.returncode == 0, written.stderr
    return root


def test_an_example_family_appears_in_the_schema(example_kit: Path) -> None:
    schema = json.loads((example_kit / "labs" / "schema.json").read_text())
    assert "lustre" in schema["$defs"]["filesystem"]["properties"]["type"]["enum"]
    assert {"lustre-mgs", "lustre-mds", "lustre-oss", "lustre-client"} <= set(
        schema["$defs"]["node_group"]["properties"]["roles"]["items"]["enum"])
    assert schema["$defs"]["lustre"]["properties"]["fsname"]["pattern"] == "^[a-z][a-z0-9]{0,7}$"
    checked = run(example_kit, str(PYTHON), "scripts/pfslab", "lab", "check", "lustre-example")
    assert checked.returncode == 0, checked.stderr
    # Its rules hold like any family's: a lab without an OSS is refused, naming the role.
    lab = (example_kit / "labs" / "lustre-example.yaml").read_text()
    (example_kit / "labs" / "lustre-nooss.yaml").write_text(
        lab.replace("name: lustre-example", "name: lustre-nooss").replace("roles: [lustre-oss]", "roles: [lustre-mds]"))
    refused = run(example_kit, str(PYTHON), "scripts/pfslab", "lab", "check", "lustre-nooss")
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
