"""The image tooling moved from scripts/lib/images.sh into pfslab/images: the kit's file
list, manifest and digest (the digest names every image: pfslab-<role>-<family>-<digest12>),
the kit archive Packer copies into images, and the template directory Packer reads."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from pfslab.images import ImageError, command, kit, templates

KIT = Path(__file__).resolve().parents[2]


def write(path: Path, text: str, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755 if executable else 0o644)


@pytest.fixture
def small_kit(tmp_path: Path) -> Path:
    """A small kit (no git): what an image carries, and what it must not."""
    k = tmp_path / "kit"
    write(k / "families" / "cephfs" / "role", "echo role\n", executable=True)
    write(k / "families" / "cephfs" / "family.json", '{"filesystem": "cephfs", "family": "ceph"}\n')
    write(k / "targets" / "aws" / "target.json", '{"target": "aws"}\n')
    write(k / "targets" / "aws" / "image.pkr.hcl", 'source "null" "aws" {}\n')
    write(k / "targets" / "aws" / "root" / "main.tf", "# kit machine only\n")
    write(k / "labs" / "local.yaml", "name: local\n")
    write(k / "reframe" / "ior.py", "x = 1\n")
    write(k / "reframe" / "__pycache__" / "ior.cpython-311.pyc", "bytecode\n")
    write(k / "reframe" / "stray.pyc", "bytecode\n")
    write(k / "spack" / "spack.yaml", "spack: {}\n")
    write(k / "spack" / ".spack-env" / "view", "cache\n")
    write(k / "requirements.txt", "reframe-hpc\n")
    write(k / "scripts" / "Z", "upper\n")
    write(k / "scripts" / "a", "lower\n")
    (k / "scripts" / "link").symlink_to("../labs/local.yaml")
    (k / "scripts" / "dirlink").symlink_to("../labs")
    (k / "scripts" / "broken").symlink_to("nowhere")
    write(k / "build" / "images" / "x", "state\n")
    write(k / ".venv" / "pyvenv.cfg", "venv\n")
    write(k / "README.md", "# readme\n")
    return k


EXPECTED_FILES = ["families/cephfs/family.json", "families/cephfs/role", "labs/local.yaml", "reframe/ior.py",
                  "requirements.txt", "scripts/Z", "scripts/a", "scripts/link", "spack/spack.yaml",
                  "targets/aws/target.json"]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_files_are_the_kits_less_caches_kit_machine_parts_and_links_to_no_file(small_kit: Path) -> None:
    # Byte-wise order (Z before a), links to files kept, links to directories or nothing not.
    assert kit.image_files(small_kit) == EXPECTED_FILES


def test_the_manifest_has_the_role_where_nodes_run_it_and_the_executable_bit(small_kit: Path) -> None:
    lines = kit.image_manifest(small_kit).splitlines()
    role = sha(b"echo role\n")
    assert f"{role}  755  families/cephfs/role" in lines
    assert f"{role}  755  scripts/roles/ceph" in lines
    local = sha(b"name: local\n")
    assert f"{local}  644  scripts/link" in lines
    assert [line.split("  ")[2] for line in lines] == sorted(
        [*EXPECTED_FILES, "scripts/roles/ceph"], key=os.fsencode)


def test_the_digest_is_sha256_of_the_manifest_as_sha256sum_reads_it(small_kit: Path) -> None:
    manifest = kit.image_manifest(small_kit)
    assert manifest.endswith("\n")
    assert kit.image_digest(small_kit) == sha(manifest.encode())
    shell = subprocess.run(["sha256sum"], input=manifest.encode(), capture_output=True, check=True)
    assert kit.image_digest(small_kit) == shell.stdout.decode().split()[0]


def test_the_digest_is_stable_and_changes_with_a_kit_file_only(small_kit: Path) -> None:
    d0 = kit.image_digest(small_kit)
    assert kit.image_digest(small_kit) == d0
    for outside in ("build/images/x", ".venv/pyvenv.cfg", "README.md", "reframe/__pycache__/ior.cpython-311.pyc",
                    "targets/aws/image.pkr.hcl", "targets/aws/root/main.tf", "spack/.spack-env/view"):
        with (small_kit / outside).open("a") as stream:
            stream.write("more\n")
    os.utime(small_kit / "labs" / "local.yaml", (0, 0))
    assert kit.image_digest(small_kit) == d0
    write(small_kit / "labs" / "local.yaml", "name: other\n")
    assert kit.image_digest(small_kit) != d0
    write(small_kit / "labs" / "local.yaml", "name: local\n")
    assert kit.image_digest(small_kit) == d0
    (small_kit / "families" / "cephfs" / "role").chmod(0o644)
    assert kit.image_digest(small_kit) != d0
    (small_kit / "families" / "cephfs" / "role").chmod(0o755)
    write(small_kit / "scripts" / "new", "new\n")
    assert kit.image_digest(small_kit) != d0
    (small_kit / "scripts" / "new").unlink()
    assert kit.image_digest(small_kit) == d0


def test_in_a_git_checkout_what_gitignore_excludes_is_not_carried(small_kit: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    write(small_kit / ".gitignore", "__pycache__/\n/build/\n/.venv/\n*.log\n")
    subprocess.run(["git", "-C", str(small_kit), "init", "-q"], check=True)
    write(small_kit / "scripts" / "run.log", "log\n")
    files = kit.image_files(small_kit)
    assert "scripts/run.log" not in files
    assert "labs/local.yaml" in files


def test_a_kit_without_its_files_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match=r"^no kit files under .* \(looked for scripts families"):
        kit.image_files(tmp_path)


def test_the_kit_archive_holds_exactly_the_digests_files_owned_by_root(small_kit: Path, tmp_path: Path) -> None:
    out = tmp_path / "kit.tar.gz"
    kit.kit_archive(small_kit, out)
    assert not (tmp_path / "kit.tar.gz.partial").exists()
    with tarfile.open(out) as archive:
        members = {m.name: m for m in archive.getmembers()}
        assert sorted(members) == sorted([*EXPECTED_FILES, "scripts/roles/ceph", ".pfslab-manifest"])
        assert all(m.uid == 0 and m.gid == 0 for m in members.values())
        assert members["scripts/roles/ceph"].mode == 0o755
        assert members["labs/local.yaml"].mode == 0o644
        assert members["scripts/link"].issym() and members["scripts/link"].linkname == "../labs/local.yaml"
        role = archive.extractfile("scripts/roles/ceph")
        manifest = archive.extractfile(".pfslab-manifest")
        assert role is not None and manifest is not None
        assert role.read() == b"echo role\n"
        assert manifest.read().decode() == kit.image_manifest(small_kit)
    # gzip -n: no name and no time in the gzip header, so equal tars give equal archives.
    assert out.read_bytes()[4:8] == b"\0\0\0\0"


def shipped_kit(tmp_path: Path) -> Path:
    """packer/ and targets/*/image.pkr.hcl of this checkout, copied."""
    k = tmp_path / "kit"
    shutil.copytree(KIT / "packer", k / "packer")
    for image in (KIT / "targets").glob("*/image.pkr.hcl"):
        write(k / "targets" / image.parent.name / "image.pkr.hcl", image.read_text())
    return k


def test_the_template_directory_links_packer_and_the_targets_and_fills_the_sources(tmp_path: Path) -> None:
    k = shipped_kit(tmp_path)
    out = tmp_path / "out"
    templates.packer_templates(k, out)
    names = sorted(p.name for p in out.iterdir())
    assert "plugins.pkr.hcl" not in names
    assert "target-baremetal.pkr.hcl" in names and "target-aws.pkr.hcl" in names
    assert os.readlink(out / "target-baremetal.pkr.hcl") == str(k / "targets" / "baremetal" / "image.pkr.hcl")
    assert os.readlink(out / "variables.pkr.hcl") == str(k / "packer" / "variables.pkr.hcl")
    builds = (out / "builds.pkr.hcl").read_text().split("\n")
    assert '  sources = ["source.amazon-ebs.debian", "source.azure-arm.hpc", "source.qemu.debian"]' in builds
    # Everything else of builds.pkr.hcl is as in packer/.
    assert len(builds) == len((k / "packer" / "builds.pkr.hcl").read_text().split("\n"))
    assert '    "qemu" = "baremetal"\n' in (out / "targets.pkr.hcl").read_text()
    assert '    "qemu" = local.target_baremetal\n' in (out / "targets.pkr.hcl").read_text()


@pytest.mark.parametrize("text, message", [
    ("locals {\n  target_local = {}\n}\n",
     'targets/local/image.pkr.hcl must hold exactly one source block (source "TYPE" "NAME" {)'),
    ('source "null" "a" {\n}\nsource "null" "b" {\n}\n',
     'targets/local/image.pkr.hcl must hold exactly one source block (source "TYPE" "NAME" {)'),
    ('source "null" "a" {\n}\n',
     "targets/local/image.pkr.hcl has no 'locals { target_local = { fabric = ..., toolchain_auto = ... } }' "
     "(what the shared build steps take from it)"),
    ('source "qemu" "other" {\n}\nlocals {\n  target_local = {}\n}\n',
     "targets/local/image.pkr.hcl: builder qemu is already another target's (local.target is keyed by builder type)"),
])
def test_a_bad_image_pkr_hcl_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    k = shipped_kit(tmp_path)
    write(k / "targets" / "local" / "image.pkr.hcl", text)
    with pytest.raises(ImageError) as refused:
        templates.packer_templates(k, tmp_path / "out")
    assert str(refused.value) == message


def test_the_command_refuses_in_the_callers_words(small_kit: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PFSLAB_ROOT", str(small_kit))
    monkeypatch.setenv("PFSLAB_LOG_TAG", "image-digest")
    assert command.main(["digest", "--x"]) == 2
    assert capsys.readouterr().err == \
        "[image-digest] error: unknown option '--x' (usage: image-digest [--files|--manifest])\n"
    assert command.main(["digest"]) == 0
    assert capsys.readouterr().out == kit.image_digest(small_kit) + "\n"
    assert command.main(["digest", "--files"]) == 0
    assert capsys.readouterr().out == "".join(f + "\n" for f in EXPECTED_FILES)


def test_the_archive_matches_what_tar_lists(small_kit: Path, tmp_path: Path) -> None:
    # The archive is GNU tar's: its listing shows root ownership (0/0).
    out = tmp_path / "kit.tar.gz"
    kit.kit_archive(small_kit, out)
    listed = subprocess.run(["tar", "-tvzf", str(out), "--numeric-owner"], capture_output=True, text=True, check=True)
    assert all(" 0/0 " in line for line in listed.stdout.splitlines())
    assert io.StringIO(listed.stdout).read().count("\n") == len(EXPECTED_FILES) + 2


# ---- QEMU and the boot test -----------------------------------------------------------------

def test_the_kernel_command_line_is_the_one_the_base_image_is_built_for() -> None:
    from pfslab.images import qemu

    shell = (KIT / "scripts" / "lib" / "images.sh").read_text()
    assert f"ROOT_LABEL={qemu.ROOT_LABEL}\n" in shell
    assert 'KERNEL_APPEND="root=LABEL=$ROOT_LABEL ro console=ttyS0 net.ifnames=0"\n' in shell
    assert qemu.KERNEL_APPEND == f"root=LABEL={qemu.ROOT_LABEL} ro console=ttyS0 net.ifnames=0"


def test_a_forced_accelerator_skips_the_probe_and_a_bad_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from pfslab.images import qemu

    monkeypatch.setenv("PFSLAB_QEMU_ACCEL", "tcg")
    assert qemu.accelerator(Path("/nonexistent")) == "tcg"
    monkeypatch.setenv("PFSLAB_QEMU_ACCEL", "hvf")
    with pytest.raises(ImageError, match=r"^PFSLAB_QEMU_ACCEL='hvf' is not kvm or tcg$"):
        qemu.accelerator(Path("/nonexistent"))
    assert (qemu.cpu_model("kvm"), qemu.cpu_model("tcg")) == ("host", "max")


def test_the_boot_tests_user_data_carries_the_nonce_and_a_node_config_of_the_baremetal_target() -> None:
    import json

    from pfslab.images import boot_test

    text = boot_test.test_user_data("0123abcd0123abcd")
    assert text.startswith("#cloud-config\n# pfslab image boot test, run 0123abcd0123abcd\n")
    assert "@NONCE@" not in text and "@NODE@" not in text
    node = json.loads(text.split("content: '", 1)[1].split("'\n", 1)[0])
    assert node["target"] == "baremetal" and node["os_tuning"]["sysctl"] == {"vm.swappiness": 10,
                                                                              "vm.dirty_background_ratio": 5}
    assert '[sh, -c, "echo 0123abcd0123abcd > /var/lib/pfslab-boot-test.marker"]' in text


def test_the_result_lines_fields_are_read_as_the_shell_did() -> None:
    from pfslab.images import boot_test

    line = ("PFSLAB-BOOT-RESULT n boot_finished=yes status=done errors=0 marker=yes "
            "health=tuning@x:_ok_(2_sysctls) digest=abc installed=ceph:18 runcmd_lines=3")
    assert boot_test.field("status", line) == "done"
    assert boot_test.field("health", line) == "tuning@x:_ok_(2_sysctls)"
    assert boot_test.field("installed", line) == "ceph:18"
    assert boot_test.field("missing", line) == ""


def test_an_image_is_resolved_from_its_directory_or_disk_and_bad_ones_refused(tmp_path: Path) -> None:
    from pfslab.images import boot_test, qemu

    with pytest.raises(ImageError, match="^no image at .*; build one with 'make images TARGET=qemu ROLE=server'$"):
        boot_test.resolve_image(str(tmp_path / "nothing"))
    image = tmp_path / "pfslab-server-ceph-000000000000"
    image.mkdir()
    with pytest.raises(ImageError, match="has no image.json"):
        boot_test.resolve_image(str(image))
    write(image / "image.json", '{"disk": "d.qcow2"}')
    with pytest.raises(ImageError, match=r"^the image's disk .*/d.qcow2 is missing$"):
        boot_test.resolve_image(str(image))
    write(image / "d.qcow2", "disk")
    with pytest.raises(ImageError, match="^no vmlinuz/initrd beside"):
        boot_test.resolve_image(str(image))
    write(image / "vmlinuz", "k")
    write(image / "initrd", "i")
    resolved = boot_test.resolve_image(str(image))
    assert (resolved.disk, resolved.append) == (image / "d.qcow2", qemu.KERNEL_APPEND)
    write(image / "image.json", '{"disk": "d.qcow2", "kernel_append": "root=LABEL=x"}')
    assert boot_test.resolve_image(str(image / "d.qcow2")).append == "root=LABEL=x"
    with pytest.raises(ImageError, match="is not an image directory or a .qcow2$"):
        boot_test.resolve_image(str(image / "vmlinuz"))


def test_a_user_data_that_is_neither_cloud_config_nor_a_script_is_refused(tmp_path: Path) -> None:
    from pfslab.images import boot_test

    write(tmp_path / "ud", "hello\n")
    with pytest.raises(ImageError, match="is neither #cloud-config nor a #! script; cloud-init would ignore it$"):
        boot_test.check_user_data(str(tmp_path / "ud"))
    with pytest.raises(ImageError, match=r"^no user-data at .*/none \(scripts/render-user-data writes"):
        boot_test.check_user_data(str(tmp_path / "none"))
    write(tmp_path / "ud", "#!/bin/sh\ntrue\n")
    boot_test.check_user_data(str(tmp_path / "ud"))


def test_the_boot_test_refuses_bad_input_in_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from pfslab.images import boot_test

    monkeypatch.setenv("PFSLAB_LOG_TAG", "image-boot-test")
    assert boot_test.main([]) == 2
    assert capsys.readouterr().err == "[image-boot-test] error: usage: image-boot-test IMAGE [USER_DATA]\n"


# ---- scripts/images: its arguments, the build's seed, the image's facts ---------------------

def test_the_targets_are_qemu_and_those_whose_adapter_names_a_packer_source() -> None:
    from pfslab.images import build

    assert build.image_targets(KIT)[0] == "qemu"
    named = [t for t in build.image_targets(KIT)[1:]
             if "\ntarget_packer_source()" in "\n" + (KIT / "targets" / t / "adapter.sh").read_text()]
    assert named == build.image_targets(KIT)[1:] and named


@pytest.mark.parametrize("target, role, family, toolchain, message", [
    ("", "all", "ceph", "auto", "no TARGET given; usage: scripts/images qemu|"),
    ("gcp", "all", "ceph", "auto", "unknown TARGET 'gcp': one of qemu, "),
    ("qemu", "storage", "ceph", "auto", "unknown ROLE 'storage': one of server, client, all (usage: scripts/images "),
    ("qemu", "all", "lustre", "auto", "unknown FAMILY 'lustre': one of "),
    ("qemu", "all", "ceph", "sometimes", "TOOLCHAIN='sometimes' is not auto, on or off"),
])
def test_bad_arguments_are_refused_in_one_line(target: str, role: str, family: str, toolchain: str,
                                               message: str) -> None:
    from pfslab.images import build

    with pytest.raises(ImageError) as refused:
        build.check_args(KIT, target, role, family, toolchain)
    assert str(refused.value).startswith(message)
    build.check_args(KIT, "qemu", "all", "ceph", "auto")


def test_the_build_seed_gives_packer_a_sudo_login_with_the_builds_key() -> None:
    from pfslab.images import build

    text = build.build_user_data("pfslab-server-ceph-abc", "ssh-ed25519 AAAA pfslab-build@x\n")
    assert text.startswith("#cloud-config\n# pfslab image build (pfslab-server-ceph-abc): a login for Packer")
    assert "    ssh_authorized_keys:\n      - ssh-ed25519 AAAA pfslab-build@x\ngrowpart:\n" in text
    assert text.endswith("resize_rootfs: true\n")


def test_a_kernel_is_told_by_its_bzimage_header(tmp_path: Path) -> None:
    from pfslab.images import build

    kernel = tmp_path / "vmlinuz"
    kernel.write_bytes(b"\0" * 0x202 + b"HdrS" + b"\0" * 16)
    assert build.is_kernel(kernel)
    kernel.write_bytes(b"\0" * 0x202 + b"Nope")
    assert not build.is_kernel(kernel)
    assert not build.is_kernel(tmp_path / "none")
