"""The developer and CI commands behind scripts/ (pfslab/dev: deps, lint, check-terraform,
test-lab, the cloud emulator, dry-run, render-user-data): what they decide, without the
packages, clones, labs or Terraform runs they drive."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pfslab import names
from pfslab.dev import check_terraform, cloud_emulator, common, deps, dry_run, lint, render_user_data, test_lab

KIT = Path(__file__).resolve().parents[2]


# ---- deps ----------------------------------------------------------------------------

def test_profiles_run_their_steps_in_order_and_all_is_the_default() -> None:
    assert deps.steps([]) == ["demo", "test", "images"]
    assert deps.steps(["tools", "test"]) == ["tools", "demo", "test"]
    assert deps.steps(["login"]) == ["login"]


def test_an_unknown_profile_is_refused_before_anything_runs() -> None:
    with pytest.raises(common.Refusal, match=r"^profile 'demo,test' is not one of demo, test, images, tools, login, all$"):
        deps.steps(["demo", "demo,test"])


def test_the_activate_hook_is_added_once_and_an_older_one_replaced(tmp_path: Path) -> None:
    plain = "# activate\nexport VIRTUAL_ENV=/x\n"
    hooked = deps.hook_text(plain, tmp_path)
    assert hooked.startswith(plain)
    assert f"export RFM_CONFIG_FILES='{tmp_path}/reframe/config/settings.py'\n" in hooked
    assert f"if [ -f '{tmp_path}/build/env.sh' ]; then . '{tmp_path}/build/env.sh'; fi\n" in hooked
    assert deps.hook_text(hooked, tmp_path) == hooked
    moved = deps.hook_text(hooked, tmp_path / "elsewhere")
    assert moved.count(deps.ACTIVATE_MARKER) == 1
    assert f"'{tmp_path}/elsewhere/reframe/config/settings.py'" in moved and f"'{tmp_path}/reframe/" not in moved


def test_the_package_stamp_is_the_one_the_shell_wrote(tmp_path: Path) -> None:
    # A .venv made by the shell scripts/deps is not reinstalled: same hash of pyproject + path.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    shell = subprocess.run(["bash", "-c", 'cat "$1/pyproject.toml" <(printf "%s\\n" "$1") | sha256sum | cut -d" " -f1',
                            "-", str(tmp_path)], capture_output=True, text=True, check=True).stdout.strip()
    assert deps.Venv(tmp_path).package_hash() == shell


def test_a_stamp_matches_only_its_hash(tmp_path: Path) -> None:
    stamp = tmp_path / "stamp"
    assert not common.stamp_matches(stamp, "ab")
    stamp.write_text("ab\n")
    assert common.stamp_matches(stamp, "ab") and not common.stamp_matches(stamp, "abc")
    lock = tmp_path / "lock"
    lock.write_bytes(b"pkg==1\n")
    assert common.sha256_file(lock) == hashlib.sha256(b"pkg==1\n").hexdigest()


def test_deps_runs_on_the_system_python_without_site_packages() -> None:
    # scripts/deps runs before .venv exists: -S leaves every installed package out.
    done = subprocess.run(["python3", "-S", "-m", "pfslab.dev.deps", "nope"], cwd=KIT, capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert (done.returncode, done.stderr) == (2, "[deps] error: profile 'nope' is not one of demo, test, images, tools, "
                                                 "login, all\n")


def test_the_nonfree_source_names_the_release() -> None:
    assert "Suites: bookworm\nComponents: non-free\n" in deps.nonfree_source("bookworm")


# ---- lint ----------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "text", "shell"), [
    ("a.sh", "echo\n", True),
    ("tool", "#!/usr/bin/env bash\n", True),
    ("tool2", "#!/bin/sh -e\n", True),
    ("tool3", "#!/usr/bin/env python3\n", False),
    ("notes.md", "#!/bin/bash\n", False),
    ("fish", "#!/usr/bin/fish\n", False),
])
def test_lint_finds_shell_scripts_by_suffix_or_shebang(tmp_path: Path, name: str, text: str, shell: bool) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert lint.is_shell(path) is shell


def test_lint_checks_the_kits_own_wrappers() -> None:
    found = {str(p.relative_to(KIT)) for p in lint.shell_scripts(KIT)}
    assert {"scripts/deps", "scripts/lint", ".ci/run", "scripts/lib/common.sh"} <= found
    assert not any(f.endswith(".py") for f in found)


# ---- check-terraform -----------------------------------------------------------------

def test_providers_are_read_from_required_providers(tmp_path: Path) -> None:
    (tmp_path / "a.tf").write_text('terraform {\n  required_providers {\n    aws = {\n      source = "hashicorp/aws"\n'
                                   '    }\n  }\n}\nmodule "m" {\n  source = "../module"\n}\n')
    (tmp_path / "b.tf").write_text('    maas = { source  = "canonical/maas" }\n')
    assert check_terraform.providers_of(tmp_path) == "hashicorp/aws"
    (tmp_path / "c.tf").write_text('  source = "canonical/maas"\n')
    assert check_terraform.providers_of(tmp_path) == "canonical/maas,hashicorp/aws"


def test_why_providers_are_unavailable_and_a_checksum_mismatch_is_no_reason(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "main.tf").write_text('source = "hashicorp/aws"\n')
    monkeypatch.setenv("PFSLAB_TF_PROVIDERS", "/opt/p")
    assert check_terraform.providers_unavailable(tmp_path, "Error: provider\nwas not found in any of\nthe search locations") \
        == "its providers (hashicorp/aws) are not in PFSLAB_TF_PROVIDERS=/opt/p"
    assert "no registry access" in check_terraform.providers_unavailable(tmp_path, "Failed to query available provider packages")
    assert check_terraform.providers_unavailable(
        tmp_path, "Failed to query available provider packages: doesn't match any of the checksums") == ""
    assert check_terraform.providers_unavailable(tmp_path, "Error: Unsupported argument") == ""


def test_checked_directories_leave_out_the_pieces(tmp_path: Path) -> None:
    for d in ("terraform/modules/local-lab/phase", "terraform/modules/local-lab", "terraform/envs/common",
              "targets/aws/root", "targets/aws/root/.terraform/modules/x", "terraform/modules/common"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / d / "main.tf").write_text("")
    assert [str(d.relative_to(tmp_path)) for d in check_terraform.directories(tmp_path)] == [
        "targets/aws/root", "terraform/modules/local-lab"]


def test_a_provider_mirror_goes_into_a_cli_config_under_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "terraform").mkdir()
    (tmp_path / "terraform" / "terraformrc").write_text("plugin_cache_may_break_dependency_lock_file = false\n")
    monkeypatch.setattr(common, "KIT_ROOT", tmp_path)
    monkeypatch.delenv("PFSLAB_TF_PROVIDERS", raising=False)
    common.use_tf_cli_config()
    assert os.environ["TF_CLI_CONFIG_FILE"] == str(tmp_path / "terraform" / "terraformrc")
    monkeypatch.setenv("PFSLAB_TF_PROVIDERS", str(tmp_path))
    common.use_tf_cli_config()
    assert os.environ["TF_CLI_CONFIG_FILE"] == str(tmp_path / "build" / "terraformrc")
    assert (tmp_path / "build" / "terraformrc").read_text().endswith(
        f'provider_installation {{\n  filesystem_mirror {{\n    path = "{tmp_path}"\n  }}\n}}\n')
    monkeypatch.setenv("PFSLAB_TF_PROVIDERS", "relative/dir")
    with pytest.raises(common.Refusal, match=r"^PFSLAB_TF_PROVIDERS=relative/dir is not an absolute path of a folder"):
        common.use_tf_cli_config()


# ---- test-lab ------------------------------------------------------------------------

def test_the_clone_is_named_at_random_with_what_a_checkout_path_may_hold() -> None:
    drawn = {test_lab.random_name() for _ in range(50)}
    assert len(drawn) == 50
    for name in drawn:
        assert name[0] == "k" and len(name) == 12
        assert names.checkout_path_problem(Path("/tmp/pfslab-test-lab.x") / name) is None


def test_test_files_run_in_the_clone_and_the_rest_are_bats_options(tmp_path: Path) -> None:
    assert test_lab.split_args(["--timing", "tests/lab/a.bats", "--filter", "up"], tmp_path) == (
        ["--timing", "--filter", "up"], [f"{tmp_path}/tests/lab/a.bats"])
    assert test_lab.split_args([], tmp_path) == ([], [f"{tmp_path}/tests/lab"])


def test_the_clone_gets_no_pfslab_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PFSLAB_ROOT", "/somewhere")
    assert "PFSLAB_ROOT" not in test_lab.env_without_root()


# ---- the cloud emulator ----------------------------------------------------------------

def test_the_emulator_registers_each_region_and_image_name_once() -> None:
    resolved: list[dict[str, Any]] = [
        {"targets": {"aws": {"region": "us-east-1", "images": {"server": {"name": "pfslab-server-ceph-*"},
                                                               "client": {"name": "pfslab-client-ceph-*"}}}}},
        {"targets": {"aws": {"region": "eu-west-1", "images": {"server": {"name": "pfslab-server-ceph-*"}}}}},
        {"targets": {"aws": {"region": "ap-south-1"}}},
        {"targets": {"azure": {"region": "x", "images": {"server": {"name": "y"}}}}},
    ]
    assert cloud_emulator.image_args(resolved) == [
        "--region", "eu-west-1", "--region", "us-east-1",
        "--image-name", "pfslab-client-ceph-emulator", "--image-name", "pfslab-server-ceph-emulator"]


def test_no_emulator_runs_without_a_live_pid(tmp_path: Path) -> None:
    paths = cloud_emulator.Paths(tmp_path)
    assert cloud_emulator.running_pid(paths) is None
    paths.dir.mkdir(parents=True)
    paths.pid.write_text(f"{os.getpid()}\n")  # alive, but not the emulator
    assert cloud_emulator.running_pid(paths) is None
    assert cloud_emulator.status(paths) == 1


def test_an_unknown_emulator_action_is_refused() -> None:
    with pytest.raises(common.Refusal, match=r"^action 'restart' is not one of start, stop, status$"):
        cloud_emulator.body(["restart"])


# ---- dry-run and render-user-data ------------------------------------------------------

def test_a_dry_run_counts_the_job_scripts_it_wrote(tmp_path: Path) -> None:
    assert dry_run.count_job_scripts(tmp_path) == 0
    for case in ("a", "b/c"):
        (tmp_path / "stage" / case).mkdir(parents=True)
        (tmp_path / "stage" / case / "rfm_job.sh").write_text("")
    (tmp_path / "stage" / "a" / "other.sh").write_text("")
    assert dry_run.count_job_scripts(tmp_path) == 2


def test_dry_runs_are_for_labs_elsewhere() -> None:
    remote = dry_run.remote_labs()
    assert remote and "local" not in remote
    with pytest.raises(common.Refusal, match=r"^lab local runs on this host; use 'make lab-up LAB=local'"):
        dry_run.new_run_dir("local")


def test_the_render_writes_the_plan_and_each_nodes_files() -> None:
    outputs = {"boot_steps": {"value": {"n1": ["a"]}}, "machines": {"value": {}}, "tags": {"value": {"k": "v"}},
               "problems": {"value": []}, "user_data": {"value": {"n2": "#cloud-config\n", "n1": "#cloud-config\nx"}},
               "boot_scripts": {"value": {"n1": "#!/bin/sh\n", "n2": "#!/bin/sh\ny"}}, "other": {"value": 1}}
    assert render_user_data.plan(outputs) == {"boot_steps": {"n1": ["a"]}, "machines": {}, "tags": {"k": "v"}, "problems": []}
    assert list(render_user_data.node_files(outputs).items()) == [
        ("n1", ("#cloud-config\nx", "#!/bin/sh\n")), ("n2", ("#cloud-config\n", "#!/bin/sh\ny"))]


def test_render_refuses_a_wrong_call_in_one_line() -> None:
    with pytest.raises(common.Refusal, match=r"^usage: scripts/render-user-data LAB TARGET OUTDIR$"):
        render_user_data.body(["lab", "aws"])
