"""Hosts on this machine (pfslab/hosts, scripts/hosts) without starting anything: the
lab's hosts read from the resolved lab (names of this checkout's instance, addresses,
disks, the login link's /30), the layers a host mounts, the image recipe read from
packer/builds.pkr.hcl, and the leftovers check of hosts-down on a fake machine."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pfslab import instance, labs, layout
from pfslab.hosts import HostsRefusal, command, images, kit_images, plan
from pfslab.hosts.machine import leftovers

KIT = Path(__file__).resolve().parents[2]
ROOT = Path("/w/k+1")


def resolved(name: str = "hosts-cephfs", root: Path = ROOT) -> dict[str, Any]:
    return instance.with_instance(layout.resolved(labs.load(name)), {"USER": "ann"}, root)


def hosts(root: Path = ROOT) -> plan.HostsLab:
    return plan.from_resolved(resolved(root=root), root)


# ---- the lab's hosts ---------------------------------------------------------------------

def test_hosts_take_the_instance_names_addresses_and_disks_of_the_lab() -> None:
    lab = resolved()
    h = plan.from_resolved(lab, ROOT)
    prefix = lab["instance"]["netns_prefix"]
    assert h.switch_ns == f"{prefix}-hsw"
    assert h.host_ns("osd0") == f"{prefix}-h-osd0"
    assert h.login_link == lab["instance"]["login_link"]
    assert h.node_names() == [n["name"] for n in lab["derived"]["nodes"]]
    assert h.login == lab["derived"]["login"]
    assert h.prefix_len == int(lab["network"]["subnet"].split("/")[1])
    for node in h.nodes:
        assert node.address == lab["targets"]["baremetal"]["hosts"][node.name]
        assert node.switch_port == lab["instance"]["nodes"][node.name]["veth"]
    osd0 = h.node("osd0")
    assert osd0.data_devices == tuple(lab["targets"]["baremetal"]["groups"]["osd"]["data_devices"])
    assert osd0.data_size_gb == 8
    assert h.node("mon0").data_devices == ()
    assert h.images() == ["client", "server"]
    # Paths relative to the checkout are the checkout's; the state is build/hosts/<lab>.
    assert h.ssh_key == ROOT / lab["targets"]["baremetal"]["ssh_key"]
    assert h.known_hosts_file == ROOT / lab["targets"]["baremetal"]["known_hosts_file"]
    assert h.state == ROOT / "build/hosts/hosts-cephfs"


def test_two_checkouts_hosts_have_different_names() -> None:
    a, b = hosts(Path("/w/a")), hosts(Path("/w/b"))
    assert a.switch_ns != b.switch_ns and a.login_link != b.login_link
    assert {n.switch_port for n in a.nodes}.isdisjoint(n.switch_port for n in b.nodes)


def test_a_data_drive_size_comes_from_the_hardware() -> None:
    lab = resolved()
    for node in lab["derived"]["nodes"]:
        if node["name"] == "osd1":
            node["hardware"] = {"drives": [{"use": "os", "size_gb": 50}, {"use": "data", "size_gb": 3}]}
    h = plan.from_resolved(lab, ROOT)
    assert h.node("osd1").data_size_gb == 3
    assert h.node("osd0").data_size_gb == plan.DEFAULT_DATA_GB


def test_an_absolute_key_path_is_kept_and_a_missing_one_refused() -> None:
    lab = resolved()
    lab["targets"]["baremetal"]["ssh_key"] = "/keys/id"
    del lab["targets"]["baremetal"]["known_hosts_file"]
    h = plan.from_resolved(lab, ROOT)
    assert h.ssh_key == Path("/keys/id") and h.known_hosts_file is None
    del lab["targets"]["baremetal"]["ssh_key"]
    with pytest.raises(HostsRefusal, match=r"sets no targets\.baremetal\.ssh_key"):
        plan.from_resolved(lab, ROOT)


@pytest.mark.parametrize(("address", "peer"), [("10.96.0.2", "10.96.0.1"), ("10.96.0.1", "10.96.0.2"),
                                               ("192.168.7.6", "192.168.7.5"), ("192.168.7.5", "192.168.7.6")])
def test_this_machine_takes_the_other_usable_address_of_the_login_30(address: str, peer: str) -> None:
    assert plan.login_peer(address, "baremetal") == peer


@pytest.mark.parametrize("address", ["10.96.0.0", "10.96.0.3", "10.96.0.4", "login.example.org"])
def test_a_login_address_that_is_no_usable_address_of_a_30_is_refused(address: str) -> None:
    with pytest.raises(HostsRefusal, match=rf"^targets\.baremetal\.login_address {re.escape(address)} "):
        plan.login_peer(address, "baremetal")


def test_a_host_is_named_or_refused_with_the_lab_hosts() -> None:
    h = hosts()
    assert h.node("cli1").name == "cli1"
    with pytest.raises(HostsRefusal, match=r"^host 'nohost' is not a host of lab hosts-cephfs; its hosts: mon0 osd0 "):
        h.node("nohost")
    with pytest.raises(HostsRefusal, match=r"^name the host: one of mon0 "):
        h.node("")


def test_labs_with_hosts_are_those_whose_own_target_lists_hosts_behind_a_login_address(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("target: baremetal\ntargets:\n  baremetal:\n    hosts: {n0: 10.0.0.1}\n"
                                     "    login_address: 10.96.0.2\n")
    (tmp_path / "b.yaml").write_text("target: baremetal\ntargets:\n  baremetal:\n    hosts: {n0: 10.0.0.1}\n")
    (tmp_path / "c.yaml").write_text("target: local\ntargets:\n  baremetal:\n    hosts: {n0: 10.0.0.1}\n"
                                     "    login_address: 10.96.0.2\n")
    (tmp_path / "d.yaml").write_text("target: [unclosed\n")
    assert plan.labs_with_hosts(tmp_path) == ["a"]
    assert plan.labs_with_hosts(KIT / "labs") == ["hosts-cephfs"]


def test_a_host_key_record_is_node_type_key_without_the_comment() -> None:
    assert plan.known_hosts_lines("osd0", ["ssh-ed25519 AAAAC3 root@build", "ssh-rsa AAAAB3", "", "junk"]) == [
        "osd0 ssh-ed25519 AAAAC3", "osd0 ssh-rsa AAAAB3"]


def test_the_command_refuses_in_one_line_naming_the_labs_with_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["start", "hosts-cephfs"]) == 2
    assert capsys.readouterr().err == (
        "[hosts] error: action 'start' is not one of up, down, status, exec, stop-sshd, restart, poweroff\n")
    assert command.main(["up"]) == 2
    assert capsys.readouterr().err.endswith("HOSTS=<lab> (labs with hosts: hosts-cephfs)\n")
    assert command.main(["status", "local"]) == 2
    assert "lab 'local' has no existing hosts" in capsys.readouterr().err
    assert command.main(["status", "Bad/Name"]) == 2
    assert "LAB=Bad/Name is not a lab name" in capsys.readouterr().err


# ---- the layers ---------------------------------------------------------------------------

def test_a_host_mounts_its_image_over_the_base_and_writes_its_own_disk() -> None:
    options = images.overlay_options([Path("/i/server-x/upper"), Path("/i/base-y/root")], Path("/s/osd0/upper"),
                                     Path("/s/osd0/work"))
    assert options == "lowerdir=/i/server-x/upper:/i/base-y/root,upperdir=/s/osd0/upper,workdir=/s/osd0/work"


RECIPE = kit_images.BaseRecipe("bookworm", "http://m/debian", "http://m/security",
                               ("linux-image-cloud-amd64", "systemd-sysv", "openssh-server", "cloud-init", "udev",
                                "jq"))


def test_the_base_is_the_vm_base_less_what_only_a_vm_needs_plus_an_init() -> None:
    assert images.base_packages(RECIPE) == ["openssh-server", "cloud-init", "jq", "tini"]


def test_the_base_key_follows_its_recipe() -> None:
    key = images.base_digest(RECIPE)
    assert key == images.base_digest(RECIPE)
    assert key != images.base_digest(kit_images.BaseRecipe("trixie", RECIPE.mirror, RECIPE.security, RECIPE.packages))
    assert key != images.base_digest(kit_images.BaseRecipe(RECIPE.suite, RECIPE.mirror, RECIPE.security,
                                                           (*RECIPE.packages, "less")))


def test_an_image_key_follows_the_kit_role_family_base_and_steps() -> None:
    key = images.image_key("k1", "server", "ceph", Path("/b/root"), ["a.sh", "b.sh"])
    assert key == images.image_key("k1", "server", "ceph", Path("/b/root"), ["a.sh", "b.sh"])
    for other in (("k2", "server", "ceph", Path("/b/root"), ["a.sh", "b.sh"]),
                  ("k1", "client", "ceph", Path("/b/root"), ["a.sh", "b.sh"]),
                  ("k1", "server", "beegfs", Path("/b/root"), ["a.sh", "b.sh"]),
                  ("k1", "server", "ceph", Path("/c/root"), ["a.sh", "b.sh"]),
                  ("k1", "server", "ceph", Path("/b/root"), ["b.sh", "a.sh"])):
        assert images.image_key(*other) != key


def test_the_kit_base_recipe_is_images_sh() -> None:
    recipe = kit_images.base_recipe(KIT)
    assert recipe.suite and recipe.mirror.startswith("http")
    assert "openssh-server" in recipe.packages and "linux-image-cloud-amd64" in recipe.packages
    base = images.base_packages(recipe)
    assert "tini" in base and "openssh-server" in base and "systemd-sysv" not in base


# ---- the recipe -------------------------------------------------------------------------

TEMPLATE = '''build {
  provisioner "shell" {
    script          = "${var.kit_root}/packer/scripts/first.sh"
  }

  provisioner "file" {
    only        = ["qemu.debian"]
    source      = "x"
  }

  provisioner "shell" {
    only            = ["amazon-ebs.debian"]
    script          = "${var.kit_root}/packer/scripts/cloud-only.sh"
  }

  provisioner "shell" {
    only            = ["qemu.debian", "amazon-ebs.debian"]
    script          = "${var.kit_root}/packer/scripts/second.sh"
  }

  provisioner "shell" {
    inline = ["echo no script"]
  }
}
'''


def test_the_recipe_is_the_qemu_builder_shell_steps_in_order(tmp_path: Path) -> None:
    template = tmp_path / "builds.pkr.hcl"
    template.write_text(TEMPLATE)
    assert images.recipe_steps(template) == ["first.sh", "second.sh"]


def test_hosts_images_run_builds_pkr_hcl_steps_in_its_order_with_its_environment() -> None:
    """The steps and their environment, from the template as Packer reads it: every shell
    provisioner with a script, in order, with the names of the environment variables it
    passes; the hosts' images run the qemu builder's steps with the same names."""
    text = (KIT / "packer/builds.pkr.hcl").read_text()
    expected = []
    for block in re.findall(r'\n  provisioner "shell" \{\n(.*?)\n  \}', text, re.S):
        script = re.search(r'script\s*=\s*"[^"]*/packer/scripts/([^"]+)"', block)
        only = re.search(r"only\s*=\s*\[([^\]]*)\]", block)
        if script and (not only or "qemu.debian" in only.group(1)):
            expected.append((script.group(1), sorted(set(re.findall(r'"(PFSLAB_[A-Z_]+)=', block)))))
    steps = images.recipe_steps(KIT / "packer/builds.pkr.hcl")
    got = [(s, sorted({e.split("=")[0] for e in images.step_env(s, "client", "ceph", "0", "baremetal", ["c"], "t")}))
           for s in steps]
    assert got == expected
    # The qemu builder's steps, the VM-only ones (EFA) left out.
    assert steps == ["wait-cloud-init.sh", "install-kit.sh", "install-roles.sh", "toolchain.sh", "cleanup.sh"]


def test_a_step_gets_the_image_record_and_the_roles_components() -> None:
    (kit,) = images.step_env("install-kit.sh", "client", "ceph", "d1", "baremetal", ["cli"], "2026-01-01T00:00:00Z")
    name, value = kit.split("=", 1)
    assert name == "PFSLAB_IMAGE_JSON" and " " not in value
    assert json.loads(value) == {"role": "client", "family": "ceph", "components": ["cli"], "digest": "d1",
                                 "builder": "hosts", "target": "baremetal", "built_at": "2026-01-01T00:00:00Z",
                                 "toolchain": True}
    assert json.loads(images.step_env("install-kit.sh", "server", "ceph", "d1", "baremetal", [], "t")[0]
                      .split("=", 1)[1])["toolchain"] is False
    assert images.step_env("install-roles.sh", "server", "ceph", "d", "baremetal", ["mon", "osd"], "t")[:2] == [
        "PFSLAB_FAMILY=ceph", "PFSLAB_COMPONENTS=mon osd"]
    assert images.step_env("toolchain.sh", "client", "ceph", "d", "baremetal", [], "t")[0] == "PFSLAB_TOOLCHAIN=distro"
    assert images.step_env("toolchain.sh", "server", "ceph", "d", "baremetal", [], "t")[0] == "PFSLAB_TOOLCHAIN=off"
    assert images.step_env("cleanup.sh", "server", "ceph", "d", "baremetal", [], "t") == []


def test_an_image_installs_the_family_server_or_client_components() -> None:
    from pfslab import registry

    fam = registry.family("cephfs")
    assert images.image_components(fam.family, "client") == [r.component for r in fam.roles if r.client]
    assert images.image_components(fam.family, "server") == [r.component for r in fam.roles if not r.client]
    assert images.image_components(fam.family, "server") and images.image_components("nope", "server") == []


# ---- what hosts-down leaves ---------------------------------------------------------------

@dataclass
class FakeMachine:
    netns: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    loops: list[str] = field(default_factory=list)
    mount_points: list[str] = field(default_factory=list)
    roots: list[tuple[int, str]] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)

    def namespaces(self) -> list[str]:
        return self.netns

    def link_exists(self, name: str) -> bool:
        return name in self.links

    def loop_devices(self) -> list[str]:
        return self.loops

    def mounts(self) -> list[str]:
        return self.mount_points

    def process_roots(self) -> list[tuple[int, str]]:
        return self.roots

    def exists(self, path: Path) -> bool:
        return path in self.paths


def test_nothing_is_left_when_nothing_of_the_hosts_is_there() -> None:
    h = hosts()
    other = hosts(Path("/w/other"))
    machine = FakeMachine(
        netns=[other.switch_ns, other.host_ns("osd0"), "pfs-aaaaaa-osd0"],
        links=[other.login_link],
        loops=[f"/dev/loop1: [2049]:7 ({other.state}/disks/osd0-0.img)"],
        mount_points=["/", f"{other.state}/osd0/root", f"{h.state}-old/x"],
        roots=[(1, "/"), (77, f"{other.state}/cli0/root")],
        paths=[other.state])
    assert leftovers(h, machine) == []


def test_every_kind_of_leftover_is_named() -> None:
    h = hosts()
    machine = FakeMachine(
        netns=[h.switch_ns, h.host_ns("cli0"), "unrelated"],
        links=[h.login_link],
        loops=[f"/dev/loop3: [2049]:9 ({h.state}/disks/osd1-0.img)", "/dev/loop4: [2049]:1 (/elsewhere.img)"],
        mount_points=["/", f"{h.state}/osd1/root/proc"],
        roots=[(1, "/"), (4242, f"{h.state}/osd1/root")],
        paths=[h.state])
    assert leftovers(h, machine) == [
        f"namespace {h.switch_ns}", f"namespace {h.host_ns('cli0')}", f"link {h.login_link}",
        f"loop device /dev/loop3: [2049]:9 ({h.state}/disks/osd1-0.img)", f"mount {h.state}/osd1/root/proc",
        "process 4242", f"files {h.state}"]


def test_what_the_hosts_exec_gets_sigpipe_back() -> None:
    """A host's PID 1 and a command run in a host are exec'd from Python, which ignores
    SIGPIPE: `yes | head` in them must end."""
    import signal
    import subprocess
    import sys

    script = ("import os, signal; from pfslab.hosts.machine import default_signals; default_signals(); "
              "os.execv('/bin/sh', ['sh', '-c', 'grep SigIgn /proc/self/status'])")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          restore_signals=False)
    ignored = int(done.stdout.split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1))
