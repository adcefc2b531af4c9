"""A new target is one new folder (issue 22).

A copy of the kit's tracked files gets ``targets/toy/`` from ``tests/fixtures/targets/``
(``target.json``, ``adapter.sh``, ``root/main.tf``, ``module/main.tf``: boxes that are
``terraform_data``, no provider, offline; ``image.pkr.hcl``: a Packer source on the
null builder) and a lab on it; ``labs/schema.json`` is
regenerated, as for any target. Nothing else is edited: the toy target is then
planned through its own Terraform root, its user-data rendered, its jobs dry-run, its
image source is in the build of the Packer templates scripts/images assembles, and
it is listed by ``make help``. A reader that still lists targets itself (or names a
target's settings, as the lab plan's machines once did) fails one of these tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[2]
FIXTURES = KIT / "tests" / "fixtures" / "targets"
PFSLAB = KIT / ".venv" / "bin" / "pfslab"
#: The issue's bound: a new target is one folder of at most 7 files, its Terraform
#: root and module included; its tests/ folder, if it has one, is not counted.
MOST_FILES = 7


def folder_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and "tests" not in p.relative_to(folder).parts)


def tracked_copy(root: Path) -> Path:
    """The kit's tracked files (symlinks kept as links), its .venv linked, an empty build/."""
    listed = subprocess.run(["git", "-C", str(KIT), "ls-files", "-z"], capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip(f"{KIT} is not a git checkout: its tracked files cannot be listed")
    for rel in filter(None, listed.stdout.split("\0")):
        src, dst = KIT / rel, root / rel
        if not src.is_symlink() and not src.exists():
            continue  # deleted in the work tree, not yet staged
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)
    (root / ".venv").symlink_to(KIT / ".venv")
    (root / "build").mkdir()
    return root


def run(root: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PFSLAB_ROOT": str(root), "TF_IN_AUTOMATION": "1", **(env or {})}
    full.pop("PFSLAB_LAB", None)
    return subprocess.run(argv, cwd=root, env=full, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def toy_kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not PFSLAB.exists():
        pytest.skip(f"{PFSLAB} is missing: run 'make deps'")
    root = tracked_copy(tmp_path_factory.mktemp("kit"))
    shutil.copytree(FIXTURES / "toy", root / "targets" / "toy", symlinks=True)
    shutil.copy2(FIXTURES / "toy-example.yaml", root / "labs" / "toy-example.yaml")
    written = run(root, str(PFSLAB), "registry", "schema", "--write")
    assert written.returncode == 0, written.stderr
    return root


def test_the_toy_target_is_one_folder_of_few_files(toy_kit: Path) -> None:
    files = folder_files(toy_kit / "targets" / "toy")
    assert files == ["adapter.sh", "image.pkr.hcl", "module/main.tf", "root/main.tf", "target.json"]
    assert len(files) <= MOST_FILES
    # The shipped targets keep to the same folder shape.
    for target in ("aws", "azure", "baremetal", "local", "site"):
        assert {"target.json", "adapter.sh"} <= set(folder_files(KIT / "targets" / target)), target
    checked = run(toy_kit, str(PFSLAB), "lab", "check", "toy-example")
    assert checked.returncode == 0, checked.stderr


def test_the_toy_target_plans_through_its_own_root(toy_kit: Path, tmp_path: Path) -> None:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not installed (make deps-test installs it)")
    lab = tmp_path / "toy-example.json"
    shown = run(toy_kit, str(PFSLAB), "lab", "show", "--target", "toy", "toy-example")
    assert shown.returncode == 0, shown.stderr
    lab.write_text(shown.stdout)
    root = toy_kit / "targets" / "toy" / "root"
    env = {"TF_DATA_DIR": str(tmp_path / ".terraform")}
    init = run(toy_kit, "terraform", f"-chdir={root}", "init", "-backend=false", "-input=false", "-no-color", env=env)
    assert init.returncode == 0, init.stdout + init.stderr
    plan_file = tmp_path / "plan.bin"
    plan = run(toy_kit, "terraform", f"-chdir={root}", "plan", "-input=false", "-no-color",
               f"-var=lab_file={lab}", f"-out={plan_file}", env=env)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    shown_plan = run(toy_kit, "terraform", f"-chdir={root}", "show", "-json", str(plan_file), env=env)
    assert shown_plan.returncode == 0, shown_plan.stderr
    boxes = {c["index"]: c["change"]["after"]["input"] for c in json.loads(shown_plan.stdout)["resource_changes"]
             if c["type"] == "terraform_data"}
    assert sorted(boxes) == ["cli0", "cli1", "mon0", "osd0", "osd1", "osd2"]
    # The box's size and disks come from the settings target.json's group_fields names.
    assert boxes["osd0"]["kind"] == "toy_box"
    assert (boxes["osd0"]["size"], boxes["osd0"]["disks"]) == ("large", 1)
    assert (boxes["cli1"]["size"], boxes["cli1"]["disks"]) == ("small", 0)


def test_the_toy_target_renders_and_checks_its_plan(toy_kit: Path, tmp_path: Path) -> None:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not installed (make deps-test installs it)")
    out = tmp_path / "render"
    rendered = run(toy_kit, "scripts/render-user-data", "toy-example", "toy", str(out))
    assert rendered.returncode == 0, rendered.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert plan["machines"]["osd2"]["nvme_model"] == "Toy NVMe"
    assert (out / "osd2.yaml").read_text().startswith("#cloud-config")
    # A group whose disks disagree with the lab file's drives is a problem of the plan,
    # found through group_fields.local_nvme as on aws and azure.
    lab = (toy_kit / "labs" / "toy-example.yaml").read_text()
    (toy_kit / "labs" / "toy-nodisk.yaml").write_text(
        lab.replace("name: toy-example", "name: toy-nodisk").replace("{box_size: large, disks: 1}", "{box_size: large}"))
    refused = run(toy_kit, "scripts/render-user-data", "toy-nodisk", "toy", str(tmp_path / "nodisk"))
    (toy_kit / "labs" / "toy-nodisk.yaml").unlink()
    assert refused.returncode == 1
    assert "targets.toy.groups.osd: 1 local data drive(s) in the lab file but 0 local NVMe drive(s) mapped" in refused.stderr


def test_the_toy_target_dry_runs_and_is_listed(toy_kit: Path) -> None:
    dry = run(toy_kit, "scripts/dry-run", "toy-example")
    assert dry.returncode == 0, dry.stderr + dry.stdout
    jobs = sorted((toy_kit / "build" / "runs" / "toy-example").glob("*-dry/stage/**/rfm_job.sh"))
    assert jobs and "/mnt/cephfs/pfslab-bench" in jobs[0].read_text()
    helped = run(toy_kit, "make", "--no-print-directory", "help")
    assert helped.returncode == 0, helped.stderr
    assert "  toy        Toy target (tests/unit/test_toy_target.py)" in helped.stdout


def test_the_toy_target_has_no_commands_and_aws_keeps_its_own(toy_kit: Path) -> None:
    # A target whose target.json names no python module gets no `pfslab <target>`.
    toy = run(toy_kit, str(PFSLAB), "toy", "--help")
    assert toy.returncode == 2
    assert "invalid choice: 'toy'" in toy.stderr
    # The registry of this copy still loads aws's module from its folder.
    helped = run(toy_kit, str(PFSLAB), "--help")
    assert helped.returncode == 0, helped.stderr
    assert [line.split()[0] for line in helped.stdout.splitlines() if line.startswith("    aws ")] == ["aws"]
    assert "toy" not in helped.stdout.split()


def packer_templates(kit: Path, out: Path) -> list[str]:
    """The build's sources in the templates scripts/images assembles from ``kit``."""
    made = run(kit, "bash", "-c", 'source scripts/lib/common.sh && source scripts/lib/images.sh && packer_templates "$0"',
               str(out))
    assert made.returncode == 0, made.stderr
    listed = [line for line in (out / "builds.pkr.hcl").read_text().splitlines() if line.startswith("  sources = [")]
    assert len(listed) == 1, listed
    sources = json.loads(listed[0].split("=", 1)[1])
    assert isinstance(sources, list) and all(isinstance(s, str) for s in sources), sources
    return [str(s) for s in sources]


SHIPPED_SOURCES = ["source.amazon-ebs.debian", "source.azure-arm.hpc", "source.qemu.debian"]


def test_the_toy_targets_image_source_is_in_the_assembled_build(toy_kit: Path, tmp_path: Path) -> None:
    # Its image.pkr.hcl is all it takes: the source joins the one build, its folder
    # names its images' target.
    assert packer_templates(toy_kit, tmp_path / "with") == [*SHIPPED_SOURCES, "source.null.toy"]
    assert '"null" = "toy"' in (tmp_path / "with" / "targets.pkr.hcl").read_text()
    # Without it, the toy target has no image, as local and site have none.
    image = toy_kit / "targets" / "toy" / "image.pkr.hcl"
    aside = tmp_path / "image.pkr.hcl"
    shutil.move(image, aside)
    try:
        assert packer_templates(toy_kit, tmp_path / "without") == SHIPPED_SOURCES
    finally:
        shutil.move(aside, image)
    if shutil.which("packer") is None:
        pytest.skip("packer is not installed (make deps-test installs Debian's packer)")
    archive = tmp_path / "kit.tar.gz"
    archive.write_bytes(b"")
    home = tmp_path / "home"
    home.mkdir()
    for role in ("server", "client"):
        args = ["-var", f"kit_root={toy_kit}", "-var", f"kit_archive={archive}", "-var", "image_digest=" + "a" * 64,
                "-var", f"role={role}", str(tmp_path / "with")]
        # The shared steps run on the toy's source too (its fabric and toolchain from its file).
        valid = run(toy_kit, "packer", "validate", "-only=image.null.toy", *args, env={"HOME": str(home)})
        assert valid.returncode == 0, valid.stdout + valid.stderr
        inspected = run(toy_kit, "packer", "inspect", *args, env={"HOME": str(home)})
        assert inspected.returncode == 0, inspected.stdout + inspected.stderr
        assert "      null.toy\n" in inspected.stdout
