"""Every derived name is valid for its consumer whatever the input (pfslab/names.py).

Property tests: each function is fed many random inputs the schema allows, lab names
with '+' and '.', node names at the schema's limits, owners of every allowed
character, checkout paths of every allowed character, and each result is checked
against its consumer's rules (kernel interface names, file names of namespaces and
cgroups, the run root's length for Unix sockets). The seed is printed, and
PFSLAB_NAMES_SEED repeats a run. Where root can, a sample is also given to the
kernel itself, in a network namespace of the test's own.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import string
import subprocess
from pathlib import Path

import pytest

from pfslab import instance, names

RUNS = int(os.environ.get("PFSLAB_NAMES_RUNS", "3000"))
SEED = int(os.environ.get("PFSLAB_NAMES_SEED", str(random.SystemRandom().randrange(2**32))))
LAB_NAME = re.compile(r"^[a-z][a-z0-9.+-]{0,39}$")  # labs/schema.json: name
GROUP_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")  # labs/schema.json: node_groups[].name


@pytest.fixture()
def rng() -> random.Random:
    print(f"PFSLAB_NAMES_SEED={SEED} ({RUNS} inputs per function)")
    return random.Random(SEED)


def lab_name(rng: random.Random) -> str:
    """A lab name the schema allows, often at its 40-character limit."""
    length = rng.choice([1, 2, 19, 20, 39, 40, rng.randint(1, 40)])
    name = rng.choice(string.ascii_lowercase) + "".join(
        rng.choice(string.ascii_lowercase + string.digits + ".+-") for _ in range(length - 1))
    assert LAB_NAME.match(name)
    return name


def node_names(rng: random.Random) -> list[str]:
    """A lab's nodes: groups of 1-12 characters, indices up to the schema's 4096 nodes."""
    nodes: list[str] = []
    for _ in range(rng.randint(1, 4)):
        group = rng.choice(string.ascii_lowercase) + "".join(
            rng.choice(string.ascii_lowercase + string.digits) for _ in range(rng.choice([0, 11, rng.randint(0, 11)])))
        assert GROUP_NAME.match(group)
        count = rng.choice([1, 3, rng.randint(1, 40)])
        start = rng.choice([0, 4096 - count])
        nodes += [f"{group}{i}" for i in range(start, start + count)]
    return list(dict.fromkeys(nodes))


def checkout_path(rng: random.Random) -> Path:
    """A checkout path of the characters the kit accepts, up to a few hundred bytes."""
    alphabet = string.ascii_letters + string.digits + "._+@-"
    parts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(rng.randint(1, 8))]
    return Path("/" + "/".join(parts))


def owner(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + "_.:/=+@ -"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 128))).strip() or "x"


def instances(rng: random.Random) -> list[dict]:
    out = []
    for _ in range(RUNS):
        nodes = node_names(rng)
        out.append(instance.describe(lab_name(rng), owner(rng), checkout_path(rng), nodes) | {"node_list": nodes})
    return out


def old_veth(netns: str) -> str:
    """The derivation before this fix (scripts/local/netns): cksum's CRC, cut to 9 columns."""
    crc = subprocess.run(["cksum"], input=netns.encode(), capture_output=True, check=True).stdout.decode()
    return "pfv" + crc[:9]


def test_every_veth_is_a_valid_interface_name_and_distinct_within_its_lab(rng: random.Random) -> None:
    for block in instances(rng):
        veths = [block["nodes"][n]["veth"] for n in block["node_list"]]
        for veth in veths:
            assert names.ifname_problem(veth) is None, (SEED, block["id"], veth)
            assert len(veth) == 12, "fixed width"
        assert len(set(veths)) == len(veths), (SEED, block["id"])


def test_veths_of_two_instances_differ_whenever_their_namespace_prefixes_do(rng: random.Random) -> None:
    blocks = instances(rng)
    for a, b in zip(blocks, blocks[1:]):
        if a["netns_prefix"] != b["netns_prefix"]:
            assert not {v["veth"] for v in a["nodes"].values()} & {v["veth"] for v in b["nodes"].values()}, SEED


def test_equal_namespace_prefixes_are_refused_by_the_collision_check(tmp_path: Path) -> None:
    mine = {"name": "local", "network": {"subnet": "10.99.0.0/24"}, "filesystem": {"mount": "/mnt/a"},
            "targets": {"local": {"bridge": "pfslab0"}},
            instance.KEY: {"id": "local-1", "root": "/a", "netns_prefix": "pfs-abcdef"}}
    other = {**mine, "network": {"subnet": "10.98.0.0/24"}, "filesystem": {"mount": "/mnt/b"},
             "targets": {"local": {"bridge": "pfslab1"}},
             instance.KEY: {"id": "other-2", "root": "/b", "netns_prefix": "pfs-abcdef"}}
    (tmp_path / "other-2").mkdir()
    (tmp_path / "other-2" / "lab.json").write_text(__import__("json").dumps(other))
    problems = instance.collisions(mine, tmp_path)
    assert problems == ["namespace prefix pfs-abcdef is used by lab local of the checkout /b (two instances hashed "
                        "alike); take that lab down first, or run this one from another checkout path"]


def test_the_property_check_rejects_the_old_cksum_derivation(rng: random.Random) -> None:
    """The check above fails on the derivation it replaces: about one namespace in 43
    gave a CRC of fewer than nine digits, and the cut kept cksum's space."""
    bad = [ns for ns in (block["nodes"][n]["netns"] for block in instances(rng)[:300] for n in block["node_list"][:6])
           if names.ifname_problem(old_veth(ns))]
    assert bad, "no namespace gave the old derivation an invalid name: the property would not catch it"
    assert " " in old_veth(bad[0])


def test_namespaces_cgroups_and_run_roots_are_valid_file_names(rng: random.Random) -> None:
    for block in instances(rng):
        assert names.file_name_problem(block["cgroup"], "cgroup") is None, (SEED, block["cgroup"])
        assert names.run_root_problem(block["run_root"]) is None, (SEED, block["run_root"])
        assert re.fullmatch(r"pfs-[0-9a-f]{6}", block["netns_prefix"])
        assert re.fullmatch(r"ph-[0-9a-f]{6}", block["login_link"]) and names.ifname_problem(block["login_link"]) is None
        for node in block["node_list"]:
            assert names.file_name_problem(block["nodes"][node]["netns"], "namespace") is None
            # The longest socket a daemon puts under the run root (ceph-osd's admin socket).
            assert len(f"{block['run_root']}/{node}/ceph-osd.{4095}.asok") <= 107


def test_run_roots_keep_lab_and_checkout_apart(rng: random.Random) -> None:
    seen: dict[str, tuple[str, str]] = {}
    for _ in range(RUNS):
        lab, checkout = lab_name(rng), names.checkout_id(checkout_path(rng))
        root = names.run_root(lab, checkout)
        assert seen.setdefault(root, (lab, checkout)) == (lab, checkout), (SEED, root)
        assert root.endswith(f"-{checkout}")


def test_mount_paths_and_checkout_ids(rng: random.Random) -> None:
    for _ in range(RUNS):
        path = checkout_path(rng)
        assert names.checkout_path_problem(path) is None
        checkout = names.checkout_id(path)
        assert re.fullmatch(r"[0-9a-f]{8}", checkout)
        assert names.mount_path("/mnt/pfslab/local", checkout) == f"/mnt/pfslab/local-{checkout}"


@pytest.mark.parametrize("path", ["/home/ann/my pfslab", "/tmp/it's", "/srv/a:b", "/srv/$(x)", "/srv/tab\tx", "relative"])
def test_a_checkout_path_the_kit_cannot_use_is_refused_in_one_line(path: str) -> None:
    problem = names.checkout_path_problem(Path(path))
    assert problem is not None and "\n" not in problem and repr(path) in problem


def test_a_refused_checkout_path_stops_lab_show_before_anything(tmp_path: Path) -> None:
    lab = {"name": "local", "target": "local", "filesystem": {"mount": "/mnt/pfslab/local"}, "targets": {}}
    with pytest.raises(instance.InstanceError, match="may hold only"):
        instance.with_instance(lab, {"USER": "ann"}, Path("/home/ann/my pfslab"))


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="giving names to the kernel needs root and unshare")
def test_the_kernel_takes_a_sample_of_the_names(rng: random.Random) -> None:
    """In a network namespace of the test's own (nothing leaves it), each name as one
    end of a veth pair, as the local lab and the hosts make them."""
    blocks = instances(rng)[:40]
    veths = [v["veth"] for b in blocks for v in list(b["nodes"].values())[:2]] + [b["login_link"] for b in blocks]
    script = "set -e\n" + "".join(f"ip link add name {v} type veth peer name p{i}\n" for i, v in enumerate(veths))
    done = subprocess.run(["unshare", "--net", "--", "bash", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_run_names_the_kit_makes_are_names_it_accepts(rng: random.Random) -> None:
    """One pattern for what a run directory may be called (pfslab.names), read by the
    maker and by the login node that is handed a name; a same-second run gets '+'."""
    for _ in range(RUNS):
        started = rng.uniform(0, 4102444800)
        suffix = rng.choice(["", "-dry", f"-{rng.randint(1, 4194304)}"])
        name = names.run_name(started, suffix) + "+" * rng.randint(0, 3)
        assert names.run_name_problem(name) is None, (SEED, name)
    for bad in ("../etc", "20261124T101500Z/..", "20261124T101500Z x", "latest", "20261124T101500Z+-dry"):
        assert names.run_name_problem(bad) is not None


def test_run_name_problem_from_the_shell() -> None:
    """The shell asks the same pattern about a run name a login node reports
    (scripts/lib/login.sh, login_detached): status 0 and nothing for a kit's name."""
    assert names.main(["run-name-problem", "20261127T201500Z+"]) == 0
    assert names.main(["run-name-problem", "../../etc"]) == 2


def test_run_dir_takes_a_name_given_by_the_kits_machine_only_when_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pfslab import state

    monkeypatch.setattr(state, "RUNS_DIR", tmp_path)
    assert state.new_run_dir("local", name="20261124T101500Z+") == tmp_path / "local" / "20261124T101500Z+"
    with pytest.raises(ValueError, match="is not a UTC time"):
        state.new_run_dir("local", name="../x")
    with pytest.raises(FileExistsError):
        state.new_run_dir("local", name="20261124T101500Z+")


@pytest.mark.parametrize("lab, want", [("local-slurm", "local_slurm"), ("beegfs-small+1", "beegfs_small_1"),
                                       ("a.b", "a_b")])
def test_slurm_cluster_name_holds_only_what_slurmdbd_accepts(lab: str, want: str) -> None:
    assert names.slurm_cluster(lab) == want
    assert re.fullmatch(r"[a-z0-9_]{1,40}", names.slurm_cluster(lab))
