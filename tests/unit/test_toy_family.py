"""A new file-system family is one new folder (issue 22).

A copy of the checkout's tracked files (``git ls-files``) gets ``families/toy/`` (a
family.json and a role that does nothing, from ``tests/fixtures/toy-family/``) and a lab
using it; nothing else is edited but the generated ``labs/schema.json``. Everything that
lists families must then find it: the registry, the lab plan (user-data), the kit
archive nodes get (the role where first boot runs it), the cluster files, the toolchain
profile, provenance's version commands and a dry run. The local lab-up of the same
family is tests/bats/toy_family_lab.bats.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[2]
TOY = KIT / "tests" / "fixtures" / "toy-family"
PFSLAB = KIT / ".venv" / "bin" / "pfslab"


def run(root: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PFSLAB_ROOT": str(root), "TF_IN_AUTOMATION": "1"}
    env.pop("PFSLAB_LAB", None)
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert not check or done.returncode == 0, f"{argv}: {done.stderr[-2000:]}{done.stdout[-2000:]}"
    return done


@pytest.fixture(scope="module")
def toy_kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not PFSLAB.exists():
        pytest.skip(f"{PFSLAB} is missing: run 'make deps'")
    root = tmp_path_factory.mktemp("kit")
    listed = subprocess.run(["git", "-C", str(KIT), "ls-files", "-z"], capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        src = KIT / rel
        if src.is_file():  # a file deleted but not yet staged is still listed
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / rel, follow_symlinks=False)
    (root / ".venv").symlink_to(KIT / ".venv")
    # The whole extension: one folder, and a lab that uses it.
    (root / "families" / "toy").mkdir()
    for name in ("family.json", "role"):
        shutil.copy2(TOY / name, root / "families" / "toy" / name)
    shutil.copy2(TOY / "toy-example.yaml", root / "labs" / "toy-example.yaml")
    run(root, str(PFSLAB), "registry", "schema", "--write")
    return root


def test_the_registry_and_the_lab_file_know_the_toy_family(toy_kit: Path) -> None:
    checked = run(toy_kit, str(PFSLAB), "registry", "check")
    assert "5 families (beegfs, cephfs, gpfs, nfs, toy)" in checked.stdout
    schema = json.loads((toy_kit / "labs" / "schema.json").read_text())
    assert "toy" in schema["$defs"]["filesystem"]["properties"]["type"]["enum"]
    assert run(toy_kit, str(PFSLAB), "lab", "check", "toy-example").returncode == 0


def test_the_lab_plan_boots_the_toy_role_where_nodes_have_it(toy_kit: Path, tmp_path: Path) -> None:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not installed (make deps-test installs it)")
    out = tmp_path / "render"
    run(toy_kit, "scripts/render-user-data", "toy-example", "baremetal", str(out))
    steps = json.loads((out / "plan.json").read_text())["boot_steps"]
    assert steps["srv0"] == [["common", "up", "tuning"], ["toy", "install", "server"], ["toy", "configure", "server"]]
    assert steps["cli1"][-1] == ["toy", "configure", "client"]
    assert "/opt/pfslab/scripts/roles/toy' 'install' 'server'" in (out / "srv0.sh").read_text()


def test_the_kit_archive_carries_the_toy_role_where_first_boot_runs_it(toy_kit: Path) -> None:
    manifest = run(toy_kit, "scripts/image-digest", "--manifest").stdout.splitlines()
    role = hashlib.sha256((toy_kit / "families" / "toy" / "role").read_bytes()).hexdigest()
    assert f"{role}  755  scripts/roles/toy" in manifest
    assert f"{role}  755  families/toy/role" in manifest


def test_cluster_files_and_the_toolchain_profile_come_from_the_toy_family_json(toy_kit: Path, tmp_path: Path) -> None:
    files = run(toy_kit, "bash", "-c", "source scripts/lib/common.sh; pfslab registry cluster-files toy-client ceph-osd")
    assert files.stdout.split() == ["ceph.client.bootstrap-osd.keyring", "ceph.conf", "toy.secret"]
    # The system's python3, as in an image (pfslab/spackstep is standard library only).
    wrote = run(toy_kit, "python3", "-m", "pfslab.spackstep", "profile", f"{tmp_path}/scope", "x86_64", "toy")
    assert wrote.stdout == f"{tmp_path}/scope\n"
    assert "  ior:\n    require:\n    - +toy\n" in (tmp_path / "scope" / "packages.yaml").read_text()


def test_provenance_asks_the_toy_family_its_version(toy_kit: Path) -> None:
    python = str(KIT / ".venv" / "bin" / "python")
    asked = run(toy_kit, python, "-c", "from pfslab import provenance; print(provenance.version_commands()['toy-version'])")
    assert asked.stdout.strip() == "['toy-version']"


def test_the_toy_familys_ior_is_built_with_the_variant_its_profile_requires(toy_kit: Path) -> None:
    python = str(KIT / ".venv" / "bin" / "python")
    asked = run(toy_kit, python, "-c", "from pfslab.tools import ior_options; "
                "print(sorted(ior_options.features_of({'filesystem': {'type': 'toy'}})))")
    assert asked.stdout.strip() == "['toy']"


def test_a_dry_run_of_the_toy_lab_writes_its_job_scripts(toy_kit: Path) -> None:
    dry = run(toy_kit, "scripts/dry-run", "toy-example")
    jobs = sorted((toy_kit / "build" / "runs" / "toy-example").glob("*-dry/stage/**/rfm_job.sh"))
    assert jobs, dry.stdout
    assert "/mnt/toy/pfslab-bench" in "\n".join(j.read_text() for j in jobs)
