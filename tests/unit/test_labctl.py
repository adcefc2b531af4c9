"""scripts/lab's work in Python (pfslab labctl): Terraform's variables and lines, the lab's
lock, and a local lab's up and down in sequence against a fake terraform and a fake kit
command (tests/bats and tests/lab run them for real)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pfslab.lifecycle import Refusal, down, lock, terraform, up
from pfslab.lifecycle.labstate import Command, Kit

KIT = Path(__file__).resolve().parents[2]


def test_role_lines_name_the_role_node_and_time() -> None:
    assert terraform.role_line('terraform_data.role["mon0/ceph-mon"]: Creation complete after 3s [id=1]') == \
        "[lab] started ceph-mon on mon0 (3s)"
    assert terraform.role_line('terraform_data.role["cli0/ceph-fuse"]: Destruction complete after 1m2s') == \
        "[lab] stopped ceph-fuse on cli0 (1m2s)"
    assert terraform.role_line('terraform_data.node["mon0"]: Creation complete after 3s') is None


def test_lab_vars_keep_the_resolved_lab_with_the_state(tmp_path: Path) -> None:
    resolved = tmp_path / "resolved.json"
    resolved.write_text('{"name": "x"}')
    state = tmp_path / "build" / "x"
    assert terraform.lab_vars(state, resolved, tmp_path) == [
        "-var", f"lab_file={state}/lab.json", "-var", f"kit_root={tmp_path}", "-var", f"state_root={state}"]
    assert (state / "lab.json").read_text() == '{"name": "x"}'


def test_expiry_and_deployment_are_fixed_at_the_first_lab_up(tmp_path: Path) -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert terraform.expiry(tmp_path, 8, now) == "2026-01-02T11:04:05Z"
    assert terraform.expiry(tmp_path, 100, now) == "2026-01-02T11:04:05Z"
    first = terraform.deployment(tmp_path)
    assert len(first) == 16 and int(first, 16) >= 0
    assert terraform.deployment(tmp_path) == first


def test_providers_unavailable_says_why_from_the_init_log(tmp_path: Path) -> None:
    (tmp_path / "versions.tf").write_text('terraform {\n  required_providers {\n    aws = {\n'
                                          '      source = "hashicorp/aws"\n    }\n  }\n}\n')
    env = {"PFSLAB_TF_PROVIDERS": "/mirror"}
    assert terraform.providers_unavailable(tmp_path, "provider\nwas not found in any of the search locations", env) \
        == "its providers (hashicorp/aws) are not in PFSLAB_TF_PROVIDERS=/mirror"
    assert "no registry access" in terraform.providers_unavailable(
        tmp_path, "Error: Failed to query available provider packages", {})
    assert terraform.providers_unavailable(tmp_path, "doesn't match any of the checksums; "
                                           "could not connect to registry", {}) == ""


def test_a_providers_mirror_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Refusal, match="PFSLAB_TF_PROVIDERS=relative is not an absolute path"):
        terraform.cli_config(tmp_path, {"PFSLAB_TF_PROVIDERS": "relative"})
    (tmp_path / "terraform").mkdir()
    (tmp_path / "terraform" / "terraformrc").write_text("plugin_cache_may_break_dependency_lock_file = true\n")
    config = terraform.cli_config(tmp_path, {"PFSLAB_TF_PROVIDERS": str(tmp_path)})
    assert config == tmp_path / "build" / "terraformrc"
    assert f'path = "{tmp_path}"' in config.read_text()


def test_the_lab_lock_refuses_a_second_holder_naming_the_first(tmp_path: Path) -> None:
    # Another process holds it as lock_lab would (flock on build/<lab>/lock).
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys, time
            from pathlib import Path
            from pfslab.lifecycle import lock
            assert lock.take(Path(sys.argv[1]), "lab1", "bench")
            print("held", flush=True)
            time.sleep(30)
        """), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert not lock.take(tmp_path, "lab1", "lab-up", wait=0.2)
        with pytest.raises(Refusal, match=rf"^lab lab1 is busy: its bench \(pid {holder.pid}, since "
                                          r"\d\d:\d\d:\d\d UTC\) is still running"):
            lock.take_or_refuse(tmp_path, "lab1", "lab-up")
    finally:
        holder.kill()
        holder.wait()
    # A holder that is gone holds nothing.
    assert lock.take(tmp_path, "lab1", "lab-up")
    assert (tmp_path / "lab1" / "lock").read_text().split()[::2] == [str(os.getpid()), "lab-up"]


# ---- a local lab's up and down with fakes ----------------------------------------------

FAKE_TERRAFORM = """#!/bin/bash
echo "terraform $*" >>"$CALLS"
case " $* " in
  *" init "*) mkdir -p "$TF_DATA_DIR" ;;
  *" apply "*) echo 'terraform_data.role["mon0/ceph-mon"]: Creation complete after 2s [id=1]'
               echo 'Apply complete! Resources: 3 added, 0 changed, 0 destroyed.' ;;
  *" destroy "*) echo 'terraform_data.role["mon0/ceph-mon"]: Destruction complete after 1s'
                 echo 'Destroy complete! Resources: 3 destroyed.'; : >"$STATE" ;;
  *" output -json inventory "*) echo '{"target": "local", "nodes": []}'; echo '{"version": 4}' >"$STATE" ;;
esac
"""

FAKE_PFSLAB = """#!/bin/bash
echo "pfslab $*" >>"$CALLS"
case "$1 $2" in
  "lab show") cat "$RESOLVED" ;;
  "health converge") echo "HEALTH_OK" ;;
  "lab sweep") cat "$LEFT" 2>/dev/null; [[ ! -s $LEFT ]] ;;
esac
"""


@pytest.fixture
def fake_kit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Kit:
    root = tmp_path / "kit"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "targets").symlink_to(KIT / "targets")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for path, text in ((bin_dir / "terraform", FAKE_TERRAFORM), (root / ".venv/bin/pfslab", FAKE_PFSLAB),
                       (root / "scripts/throttle", "#!/bin/sh\necho throttle \"$@\" >>\"$CALLS\"\n")):
        path.write_text(text)
        path.chmod(0o755)
    resolved = {"name": "lab1", "target": "local", "targets": {"local": {"ready_timeout_s": 7}},
                "benchmark": {"calibrate": False}}
    (tmp_path / "resolved.json").write_text(json.dumps(resolved))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("RESOLVED", str(tmp_path / "resolved.json"))
    monkeypatch.setenv("LEFT", str(tmp_path / "left"))
    monkeypatch.setenv("STATE", str(root / "build" / "lab1" / "terraform.tfstate"))
    monkeypatch.delenv("PFSLAB_TF_PROVIDERS", raising=False)
    # The host's own checks (root, FUSE, commands, bridge) are not what this test is about.
    monkeypatch.setattr(up, "preflight_local", lambda cmd: None)
    monkeypatch.setattr(down, "require_root", lambda what: None)
    return Kit(root)


def calls(kit: Kit) -> list[str]:
    return (kit.root.parent / "calls").read_text().splitlines()


def test_local_up_then_down_in_order(fake_kit: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    cmd = Command(fake_kit)
    try:
        assert up.cmd_up(cmd, "lab1") == 0
    finally:
        cmd.cleanup()
    state = fake_kit.state_dir("lab1")
    tf = f"terraform -chdir={fake_kit.root}/targets/local/root"
    variables = f"-var lab_file={state}/lab.json -var kit_root={fake_kit.root} -var state_root={state}"
    assert calls(fake_kit) == [
        "pfslab lab show lab1 --instance",
        f"{tf} init -input=false -backend-config=path={state}/terraform.tfstate",
        f"{tf} apply -auto-approve -input=false {variables} -no-color",
        f"{tf} output -json inventory",
        "pfslab health converge lab1 7",
    ]
    err = capsys.readouterr().err
    assert "[lab] started ceph-mon on mon0 (2s)\n" in err
    assert "[lab] terraform: Apply complete! Resources: 3 added, 0 changed, 0 destroyed.\n" in err
    assert "[lab] lab lab1 is up and healthy in 0 s: HEALTH_OK\n" in err
    assert fake_kit.active_file.read_text() == "lab1\n"
    assert "export PFSLAB_LAB='lab1'\n" in fake_kit.env_file.read_text()
    assert json.loads((state / "inventory.json").read_text())["target"] == "local"
    assert (state / "lock").read_text().split()[2] == "lab-up"

    (fake_kit.root.parent / "calls").write_text("")
    cmd = Command(fake_kit)
    try:
        assert down.cmd_down(cmd, None) == 0
    finally:
        cmd.cleanup()
    assert calls(fake_kit) == [
        "throttle off",
        "pfslab lab stop-bench lab1",
        f"{tf} destroy -auto-approve -input=false {variables} -no-color",
        f"pfslab lab sweep {cmd.lab().path}",
    ]
    err = capsys.readouterr().err
    assert "[lab] stopped ceph-mon on mon0 (1s)\n" in err
    assert "[lab] lab lab1 is down in 0 s; nothing is left" in err
    assert not fake_kit.build.exists()


def test_local_down_with_something_left_keeps_the_state(fake_kit: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    state = fake_kit.state_dir("lab1")
    state.mkdir(parents=True)
    (state / "lab.json").write_text((fake_kit.root.parent / "resolved.json").read_text())
    fake_kit.active_file.write_text("lab1\n")
    (fake_kit.root.parent / "left").write_text("namespace pfs-x-mon0\n")
    cmd = Command(fake_kit)
    try:
        with pytest.raises(Refusal, match="^lab lab1 is not completely down; the lines above say what is left$"):
            down.cmd_down(cmd, "lab1")
    finally:
        cmd.cleanup()
    err = capsys.readouterr().err
    assert "[lab] lab lab1 has no Terraform state; removing what its lab-up made, by name\n" in err
    assert "[lab] left behind: namespace pfs-x-mon0\n" in err
    assert (state / "lab.json").is_file() and fake_kit.active_file.is_file()


# ---- a remote lab's SSH config and console keys (pfslab/lifecycle/remote_up.py) ---------

def test_ssh_config_is_strict_for_known_hosts_and_jumps_through_the_login_node(tmp_path: Path) -> None:
    from pfslab.lifecycle import remote_up

    inventory = {"ssh": {"user": "admin"}, "nodes": [
        {"name": "cli0", "address": "10.0.0.3", "ssh_address": "198.51.100.3", "ssh_jump": None},
        {"name": "osd0", "address": "10.0.0.2", "ssh_address": "10.0.0.2", "ssh_jump": "cli0"}]}
    known = tmp_path / "known_hosts"
    known.write_text("cli0 ssh-ed25519 AAAA\n")
    text = remote_up.ssh_config_text(inventory, "/lab/ssh", known)
    blocks = text.split("\n\n")
    assert blocks[0] == ("Host cli0 10.0.0.3\n  HostName 198.51.100.3\n  User admin\n  HostKeyAlias cli0\n"
                         "  StrictHostKeyChecking yes")
    assert blocks[1] == ("Host osd0 10.0.0.2\n  HostName 10.0.0.2\n  User admin\n  HostKeyAlias osd0\n"
                         "  ProxyJump cli0\n  StrictHostKeyChecking accept-new")
    assert blocks[2].startswith("Host *\n  IdentityFile /lab/ssh/id_ed25519\n  IdentitiesOnly yes\n"
                                "  UserKnownHostsFile /lab/ssh/known_hosts\n")
    assert text.endswith("  ServerAliveCountMax 3\n")
    # A target with a console: no key is ever learnt on first use.
    assert "accept-new" not in remote_up.ssh_config_text(inventory, "/lab/ssh", known, "strict")


def test_console_keys_are_read_from_cloud_inits_block_only() -> None:
    from pfslab.lifecycle import remote_up

    console = ("ssh-rsa AAAAnot-in-the-block\r\n-----BEGIN SSH HOST KEY KEYS-----\r\n"
               "ecdsa-sha2-nistp256 AAAAE2 root@h\r\nssh-ed25519 AAAAC3 root@h\r\nnot a key\r\n"
               "-----END SSH HOST KEY KEYS-----\r\n")
    assert remote_up.console_keys("mon0", console) == ["mon0 ecdsa-sha2-nistp256 AAAAE2", "mon0 ssh-ed25519 AAAAC3"]
    assert remote_up.console_keys("mon0", "no keys yet") == []
