"""The seed labs: each validates, renders the seeds' own parameters, and every number
the seeds print is a reference (or a note) with a source.

The seeds are ``tests/fixtures/seeds/*.txt`` (copies of the source documents) (000 and 004 PixStor, 001
NSS7.3-HA, 002 BeeGFS, 003 CephFS on Stria). Tests that read them skip, saying so,
where that directory is absent.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslab import derive, deviations, labs, references, registry, workloads
from pfslab.units import convert, kind_of

KIT = Path(__file__).resolve().parents[2]
SEEDS = KIT / "tests" / "fixtures" / "seeds"
PENDING = KIT / "labs" / "pending"

PIXSTOR, NSS, CEPH = "pixstor-capex", "nss73-ha", "cephfs-stria"
BEEGFS = ["beegfs-small", "beegfs-small+1", "beegfs-small+2", "beegfs-medium", "beegfs-medium+1"]
SEED_LABS = [PIXSTOR, NSS, *BEEGFS, CEPH]
#: Seed file -> the labs whose references carry its numbers.
SEED_FILES = {
    "000_ded3896d23f7a332.txt": [PIXSTOR],
    "004_2f7f861f1169c0a6.txt": [PIXSTOR],
    "001_11589007338ebb8f.txt": [NSS],
    "002_f20a6b9879af5b9b.txt": BEEGFS,
    "003_f13f695dbdd18fd6.txt": [CEPH],
}


def lab_file(name: str) -> str:
    """The lab's file: labs/<name>.yaml, or labs/pending/ for labs ReFrame cannot name yet.

    ReFrame system names allow [A-Za-z0-9_-] only, and every lab that runs elsewhere
    becomes a system (pfslab.rfmconfig): until that maps '+', the BeeGFS labs with '+'
    in their names wait in labs/pending/, where lab listings do not see them.
    """
    shipped = KIT / "labs" / f"{name}.yaml"
    return name if shipped.is_file() else str(PENDING / f"{name}.yaml")


def load(name: str) -> dict[str, Any]:
    return labs.load(lab_file(name))


def refs(name: str) -> list[references.Reference]:
    return references.load(name)


def ctx(lab: dict[str, Any], **changes: Any) -> workloads.Context:
    clients = [workloads.Client(n["name"], n["name"]) for n in labs.client_nodes(lab)]
    base = workloads.Context(clients=clients, scratch_dir="/fs/bench/x", work_dir="/stage", tool_path="tool",
                             hostfile_slots=lab.get("launcher", {}).get("hostfile_slots", True))
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def render(lab: dict[str, Any], workload: str, threads: int, mode: str = "full",
           nodes: int | None = None) -> workloads.Rendered:
    case = workloads.Case(lab["name"], workload, threads, mode, nodes)
    return workloads.render(lab, case, ctx(lab))


def run_args(rendered: workloads.Rendered) -> list[list[str]]:
    """The tool arguments of each run step (after the tool's path)."""
    out = []
    for step in rendered.steps:
        if step.kind == "run":
            tokens = shlex.split(step.command)
            out.append(tokens[tokens.index("tool") + 1:])
    return out


# ---- the labs --------------------------------------------------------------------------

@pytest.mark.parametrize("name", SEED_LABS)
def test_each_seed_lab_validates_and_is_a_full_mode_bare_metal_lab(name: str) -> None:
    lab = load(name)
    assert lab["name"] == name and lab["target"] == "baremetal"
    assert lab["benchmark"]["default_mode"] == "full"
    assert lab["workloads"], f"{name} has no workloads"
    assert lab.get("sources"), f"{name} names no source document"


@pytest.mark.parametrize("name", SEED_LABS)
def test_every_workload_quotes_its_source_and_has_a_quick_mode_for_two_clients(name: str) -> None:
    lab = load(name)
    for workload in lab["workloads"]:
        where = f"{name}/{workload['id']}"
        source = workload.get("source", {})
        assert source.get("document") in SEED_FILES and source.get("quote"), f"{where}: no source quote"
        quick = workload.get("quick")
        assert quick, f"{where}: no quick mode"
        for threads, nodes in workloads.sweep(workload, "quick"):
            assert (nodes or 1) <= 2 and threads <= 4, f"{where}: quick point {threads} threads does not fit 2 clients"
        full = {k: v for k, v in workloads.sizes_for(workload, "full").items()}
        small = workloads.sizes_for(workload, "quick")
        for key in ("aggregate", "file_size", "block", "total_files", "reps", "box"):
            if key in full:
                assert key in quick.get("sizes", {}), f"{where}: quick mode keeps the full {key}"
        assert small.keys() >= full.keys()
        # Quick mode keeps the flags: the same step templates.
        assert workloads.iterations_for(workload, "quick") <= workloads.iterations_for(workload, "full")


@pytest.mark.parametrize("name", SEED_LABS)
def test_every_reference_names_a_workload_and_a_figure_it_measures(name: str) -> None:
    lab = load(name)
    measured = {
        (w["id"], op)
        for w in lab["workloads"] for step in w["steps"] if isinstance(step, dict) for op in step.get("measures", [])
    }
    for ref in refs(name):
        assert (ref.workload, ref.operation) in measured, f"{name}: {ref.workload}/{ref.operation} is not measured"
        assert ref.mode == "full", f"{name}: a seed value belongs to the seed's sizes (mode full)"
        assert ref.kind in ("peak", "sustained", "floor", "start")
        if ref.threads is not None:
            assert ref.threads in workloads.threads_for(workloads.find(lab, ref.workload), "full")


def test_the_local_lab_imports_every_seed_lab_shape() -> None:
    local = labs.load("local")
    assert local["imports"] == [PIXSTOR, NSS, "beegfs-medium", CEPH]
    names = {c.workload for tool in ("ior", "mdtest", "iozone", "fio", "ioshell", "lammps")
             for c in workloads.cases(tool, ["local"])}
    for seed in local["imports"]:
        for workload in labs.load(seed)["workloads"]:
            assert f"{seed}/{workload['id']}" in names


def test_beegfs_labs_extend_medium_and_differ_in_storage_servers_and_targets_only() -> None:
    medium = load("beegfs-medium")
    servers = {"beegfs-small": 2, "beegfs-small+1": 3, "beegfs-small+2": 4, "beegfs-medium": 5, "beegfs-medium+1": 6}
    for name, count in servers.items():
        lab = load(name)
        assert lab["filesystem"]["beegfs"]["storage_pool_targets"] == 3 + 6 * count  # 15, 21, 27, 33, 39
        groups = {g["name"]: g for g in lab["node_groups"]}
        assert groups["ss"]["count"] == count
        for key in ("filesystem", "os_tuning", "launcher", "workloads", "network", "benchmark"):
            if key == "filesystem":
                a = dict(lab[key]["beegfs"], storage_pool_targets=0)
                b = dict(medium[key]["beegfs"], storage_pool_targets=0)
                assert a == b, name
            else:
                assert lab[key] == medium[key], f"{name}: {key} differs from beegfs-medium"
        assert [dict(g, count=0) for g in lab["node_groups"]] == [dict(g, count=0) for g in medium["node_groups"]]
        if name != "beegfs-medium":
            text = yaml.safe_load(Path(labs.lab_path(lab_file(name))).read_text())
            assert text["extends"] == "beegfs-medium"
        # Drives for data storage (Table 7): 12 on the metadata server + 24 per storage server.
        data = sum(g["count"] * d["count"] for g in lab["node_groups"]
                   for d in g.get("hardware", {}).get("drives", []) if d["use"] == "data")
        assert data == 12 + 24 * count


def test_beegfs_medium_reproduces_the_seeds_hardware_arithmetic() -> None:
    d = derive.derive(load("beegfs-medium"))
    # "a theoretical peak of 422 GB/s for reads and 172 GB/s for writes", "11 InfiniBand EDR
    # links ... 12.4 GB/s ... 136.4 GB/s" (4.1)
    for pattern in ("seq-nn", "seq-n1"):
        assert "= 422.4 GB/s" in d[pattern]["read"].lines[0] and "= 171.6 GB/s" in d[pattern]["write"].lines[0]
        assert d[pattern]["read"].peak_gbps == pytest.approx(136.4) and d[pattern]["read"].limit == "storage links"


# ---- hardware-derived thresholds: the efficiency of the same access pattern --------------

def published(lab: str, workload: str, operation: str, kind: str = "peak") -> references.Reference:
    (ref,) = [r for r in refs(lab) if (r.workload, r.operation, r.kind) == (workload, operation, kind)
              and r.threads is not None]
    return ref


def test_the_n1_efficiency_is_the_seeds_ior_n1_over_its_links() -> None:
    """Seed 002 4.2: IOR N-1 on Medium reached 66.3 GB/s read, 37.4 GB/s write, of the
    136.4 GB/s the lab file's links add up to (4.1)."""
    n1 = derive.efficiencies()["seq-n1"]
    links = derive.derive(load("beegfs-medium"))["seq-n1"]["read"].peak_gbps
    assert n1["read"].value == pytest.approx(66.3 / 136.4) and n1["write"].value == pytest.approx(37.4 / 136.4)
    # The figures divided are the lab's own references and its own hardware, not a third copy.
    assert n1["read"].reached_gbps == published("beegfs-medium", "ior-n1", "read").value
    assert n1["write"].reached_gbps == published("beegfs-medium", "ior-n1", "write").value
    assert n1["read"].peak_gbps == pytest.approx(links) and n1["write"].peak_gbps == pytest.approx(links)


def test_the_nn_efficiency_is_the_seeds_97_and_89_percent() -> None:
    nn = derive.efficiencies()["seq-nn"]
    assert nn["read"].value == pytest.approx(132 / 136.4) and nn["write"].value == pytest.approx(121 / 136.4)
    # The percentages the seed states, from the figures of the same paragraph.
    assert "97% and 89%" in nn["read"].source["quote"]
    assert (round(nn["read"].value * 100), round(nn["write"].value * 100)) == (97, 89)
    # Table 6's unrounded 132.4 is the same 97 %.
    assert round(132.4 / nn["read"].peak_gbps * 100) == 97
    assert nn["read"].reached_gbps == published("beegfs-medium", "iozone-seq", "read").value
    assert nn["write"].reached_gbps == published("beegfs-medium", "iozone-seq", "write").value


def test_derived_thresholds_on_the_seeds_own_hardware_are_what_the_seed_reached() -> None:
    d = derive.derive(load("beegfs-medium"))
    assert round(d["seq-n1"]["read"].threshold_gbps, 1) == 66.3
    assert round(d["seq-n1"]["write"].threshold_gbps, 1) == 37.4
    assert round(d["seq-nn"]["read"].threshold_gbps, 1) == 132
    assert round(d["seq-nn"]["write"].threshold_gbps, 1) == 121
    # Each derivation cites the figures it used: the efficiency line the seed's, the
    # threshold line the lab's peak and the percentage.
    lines = d["seq-n1"]["write"].lines
    assert "37.4 GB/s reached / 136.4 GB/s theoretical = 27.4%" in lines[-2]
    assert "002_f20a6b9879af5b9b.txt: section 4.2" in lines[-2] and "of section 4.1" in lines[-2]
    assert lines[-1].startswith("threshold = 136.4 GB/s x 27.4% = 37.4 GB/s")


@pytest.mark.parametrize(("name", "links"), list(zip(BEEGFS, (62.0, 86.8, 111.6, 136.4, 161.2))))
def test_scaled_beegfs_labs_get_the_n1_efficiency_for_ior_n1(name: str, links: float) -> None:
    d = derive.derive(load(name))["seq-n1"]
    assert d["write"].peak_gbps == pytest.approx(links)
    assert d["write"].threshold_gbps == pytest.approx(links * 37.4 / 136.4)
    assert d["read"].threshold_gbps == pytest.approx(links * 66.3 / 136.4)


def test_patterns_the_seeds_did_not_measure_get_no_derived_threshold() -> None:
    d = derive.derive(load("beegfs-medium"))
    assert set(d) == {"seq-nn", "seq-n1"}
    assert set(derive.efficiencies()) == {"seq-nn", "seq-n1"}


def test_beegfs_tuning_is_the_seeds() -> None:
    lab = load("beegfs-medium")
    fs = lab["filesystem"]["beegfs"]
    assert fs["stripe"] == {"chunk_size": "2M", "num_targets": 3, "dir": "benchmark"}
    assert fs["meta"] == {"tuneTargetChooser": "roundrobin", "tuneNumWorkers": 24, "connMaxInternodeNum": 32}
    assert fs["storage"] == {"tuneNumWorkers": 32, "connMaxInternodeNum": 12}
    assert fs["client"] == {"connMaxInternodeNum": 24}
    tuning = lab["os_tuning"]
    assert tuning["sysctl"] == {"vm.dirty_background_ratio": 5, "vm.dirty_ratio": 20, "vm.min_free_kbytes": 262144,
                                "vm.vfs_cache_pressure": 50, "vm.zone_reclaim_mode": 2, "kernel.numa_balancing": 0}
    assert tuning["transparent_hugepages"] == "never" and tuning["numa_balancing"] is False
    assert tuning["drop_caches"] == "between-phases"
    # "... in place on the metadata and storage servers" (4): not the management server, not the clients.
    assert tuning["roles"] == ["beegfs-meta", "beegfs-storage"]
    layouts = {tuple(s["groups"]): s for s in fs["servers"]}
    assert layouts[("mds",)]["meta"]["lba_format_bytes"] == 512
    assert layouts[("mds",)]["storage"]["lba_format_bytes"] == 4096
    assert layouts[("ss",)]["storage"]["lba_format_bytes"] == 4096


def test_pixstor_gpfs_settings_are_the_seeds() -> None:
    gpfs = load(PIXSTOR)["filesystem"]["gpfs"]
    assert (gpfs["block_size"], gpfs["subblocks_per_block"], gpfs["pagepool"], gpfs["allocation"]) == (
        "8M", 256, "16G", "scatter")
    # The kit's choice that makes GPFS 5.x give the seed's 256 subblocks of 32 KiB (the
    # role's arithmetic is tested with this lab in tests/bats/roles_gpfs.bats).
    assert gpfs["metadata_block_size"] == "2M"
    found = {d.what: d for d in deviations.declared(labs.lab_path(PIXSTOR))}
    assert found["GPFS metadata block size (filesystem.gpfs.metadata_block_size)"].kit.startswith("2M")


def test_nss_volume_and_nfsd_threads_are_explicit_kits_choices() -> None:
    nfs = load(NSS)["filesystem"]["nfs"]
    assert (nfs["lun_layout"], nfs["server_threads"]) == ("striped", 256)
    found = {d.what: d for d in deviations.declared(labs.lab_path(NSS))}
    layout, threads = found["how the 8 LUNs make one XFS (filesystem.nfs.lun_layout)"], found["nfsd threads (filesystem.nfs.server_threads)"]
    assert (layout.seed, threads.seed, threads.kit) == ("not stated (\"8 LUNs, lineares 8+2 RAID 6\")", "not stated", "256")
    assert layout.kit.startswith("striped") and "from a default of 8 to 256" in threads.why


def test_beegfs_labs_say_beside_the_version_that_the_kit_installs_another_release() -> None:
    for name in BEEGFS:
        lab = load(name)
        release = labs.release(lab)
        assert (release["characterised"], release["installed_field"]) == ("7.1.3", "filesystem.beegfs.repo.version")
        assert release["installed"] == registry.family("beegfs").settings["beegfs"]["properties"]["repo"]["properties"]["version"]["default"]
        found = {d.what: d for d in deviations.release(lab)}
        listed = found["beegfs release the nodes install (filesystem.beegfs.repo.version)"]
        assert (listed.seed, listed.kit) == ("7.1.3", release["installed"]), name
        assert "ThinkParQ's 7.1 repository has no Debian 12 suite" in listed.why
    assert len(labs.client_nodes(load(PIXSTOR))) == 16


def test_cephfs_stria_is_84_osds_with_three_replicas() -> None:
    lab = load(CEPH)
    osds = sum(g["count"] * d["count"] for g in lab["node_groups"] if "ceph-osd" in g["roles"]
               for d in g["hardware"]["drives"] if d["use"] == "data")
    assert osds == 84
    ceph = lab["filesystem"]["ceph"]
    assert ceph["pool_size"] == 3 and sum(ceph["pg_num"].values()) == 2048
    assert len(labs.client_nodes(lab)) == 8


# ---- Tables 3 and 5: mdtest's directories per thread ----------------------------------

#: Table 3 (000) and Table 5 (002): threads -> directories per thread (1024 files each, 2^21 in all).
TABLE_3 = {1: 2048, 2: 1024, 4: 512, 8: 256, 16: 128, 32: 64, 64: 32, 128: 16, 256: 8, 512: 4, 1024: 2}
TABLE_5 = {**TABLE_3, 2048: 1}


@pytest.mark.parametrize(("lab_name", "workload", "table"), [
    (PIXSTOR, "mdtest-empty", TABLE_3), (PIXSTOR, "mdtest-4k", TABLE_3),
    ("beegfs-medium", "mdtest-empty", TABLE_5), ("beegfs-small", "mdtest-empty", TABLE_5),
])
def test_mdtest_directories_render_every_row_of_tables_3_and_5(lab_name: str, workload: str,
                                                               table: dict[int, int]) -> None:
    lab = load(lab_name)
    for threads, dirs in table.items():
        (args,) = run_args(render(lab, workload, threads))
        assert args[args.index("-b") + 1] == str(dirs), f"{threads} threads"
        assert args[args.index("-I") + 1] == "1024"
        assert threads * dirs * 1024 == 2_097_152  # "Total number of files"
    # The sweeps are the tables' (PixStor ran up to 512 threads, Table 3 lists 1024 too).
    sweep = workloads.threads_for(workloads.find(lab, workload), "full")
    assert set(sweep) <= set(table) and max(sweep) == (512 if lab_name == PIXSTOR else 2048)


def test_beegfs_ior_stripes_over_each_labs_own_targets() -> None:
    for name, targets in zip(BEEGFS, (15, 21, 27, 33, 39)):
        (args,) = run_args(render(load(name), "ior-n1", 64))
        assert args[args.index("-O") + 1] == f"beegfsNumTargets={targets},beegfsChunkSize=2M"


# ---- every number of the seeds ---------------------------------------------------------

def R(workload: str, operation: str, threads: int | None, value: float, unit: str, kind: str) -> tuple[Any, ...]:
    return (workload, operation, threads, float(value), unit, kind)


#: Every performance number each seed prints, as the lab's reference.
EXPECTED: dict[str, list[tuple[Any, ...]]] = {
    PIXSTOR: [
        # Figure 2 text and Table 4, IOzone N-N
        R("iozone-seq", "write", 128, 20.4, "GB/s", "peak"), R("iozone-seq", "read", None, 24.2, "GB/s", "peak"),
        R("iozone-seq", "write", None, 20.3, "GB/s", "sustained"), R("iozone-seq", "read", None, 24, "GB/s", "sustained"),
        # Figure 3 text and Table 4, IOR N-1
        R("ior-n1", "read", 16, 24.8, "GB/s", "peak"), R("ior-n1", "read", None, 23.8, "GB/s", "sustained"),
        R("ior-n1", "write", 8, 19.3, "GB/s", "peak"), R("ior-n1", "write", None, 19.3, "GB/s", "sustained"),
        # Figure 4 text (004 Figure 17) and Table 4, random
        R("fio-rand4k", "write_iops", 1, 29100, "IOPS", "start"), R("fio-rand4k", "write_iops", None, 40000, "IOPS", "peak"),
        R("fio-rand4k", "write_iops", None, 40000, "IOPS", "sustained"),
        R("fio-rand4k", "read_iops", 1, 1400, "IOPS", "start"), R("fio-rand4k", "read_iops", 64, 25600, "IOPS", "peak"),
        R("fio-rand4k", "read_iops", None, 19300, "IOPS", "sustained"),
        # Figure 5 text and Table 4, empty files
        R("mdtest-empty", "file_stat", 64, 11e6, "ops/s", "peak"), R("mdtest-empty", "file_read", 64, 4.7e6, "ops/s", "peak"),
        R("mdtest-empty", "file_removal", 16, 170600, "ops/s", "peak"),
        R("mdtest-empty", "file_creation", 32, 222100, "ops/s", "peak"),
        R("mdtest-empty", "file_creation", None, 169400, "ops/s", "peak"),
        R("mdtest-empty", "file_creation", None, 123500, "ops/s", "sustained"),
        R("mdtest-empty", "file_creation", None, 120000, "ops/s", "floor"),
        R("mdtest-empty", "file_stat", None, 3.2e6, "ops/s", "sustained"),
        R("mdtest-empty", "file_stat", None, 3e6, "ops/s", "floor"),
        R("mdtest-empty", "file_read", None, 2.4e6, "ops/s", "sustained"),
        R("mdtest-empty", "file_read", None, 2e6, "ops/s", "floor"),
        R("mdtest-empty", "file_removal", None, 156500, "ops/s", "sustained"),
        R("mdtest-empty", "file_removal", None, 140000, "ops/s", "floor"),
        # Figure 6 text and Table 4, 4 KiB files
        R("mdtest-4k", "file_stat", 256, 8.2e6, "ops/s", "peak"), R("mdtest-4k", "file_removal", 256, 400000, "ops/s", "peak"),
        R("mdtest-4k", "file_read", 512, 44800, "ops/s", "peak"), R("mdtest-4k", "file_creation", 512, 68100, "ops/s", "peak"),
        R("mdtest-4k", "file_creation", None, 68100, "ops/s", "sustained"),
        R("mdtest-4k", "file_stat", None, 3e6, "ops/s", "sustained"), R("mdtest-4k", "file_stat", None, 3e6, "ops/s", "floor"),
        R("mdtest-4k", "file_read", None, 44800, "ops/s", "sustained"),
        R("mdtest-4k", "file_removal", None, 280000, "ops/s", "sustained"),
        R("mdtest-4k", "file_removal", None, 280000, "ops/s", "floor"),
    ],
    NSS: [R("iozone-seq", "read", None, 7, "GB/s", "peak"), R("iozone-seq", "write", None, 5, "GB/s", "peak")],
    "beegfs-medium": [
        R("iozone-seq", "read", 1024, 132, "GB/s", "peak"), R("iozone-seq", "write", 256, 121, "GB/s", "peak"),
        R("iozone-seq", "write", 1, 3, "GB/s", "start"), R("iozone-seq", "read", 1, 3, "GB/s", "start"),
        R("ior-n1", "read", 512, 66.3, "GB/s", "peak"), R("ior-n1", "write", 64, 37.4, "GB/s", "peak"),
        R("iozone-rand", "random_write", 512, 3.6e6, "IOPS", "peak"),
        R("iozone-rand", "random_read", 1024, 3.5e6, "IOPS", "peak"),
        R("mdtest-empty", "file_stat", 64, 486000, "ops/s", "peak"),
        R("mdtest-empty", "file_read", 1024, 186000, "ops/s", "peak"),
        R("mdtest-empty", "file_removal", 256, 116000, "ops/s", "peak"),
        R("mdtest-empty", "file_creation", 256, 105000, "ops/s", "peak"),
        R("mdtest-empty", "file_stat", None, 440000, "ops/s", "floor"),
        R("mdtest-empty", "file_read", None, 182000, "ops/s", "floor"),
        R("mdtest-empty", "file_removal", None, 100000, "ops/s", "floor"),
    ],
    CEPH: [],
}

#: Tables 6 and 7 (002): peak sequential read and write (GB/s) of each configuration;
#: random read and write (IOPS) of the two base configurations (Table 6).
TABLES_6_7: dict[str, tuple[float, float, float | None, float | None]] = {
    "beegfs-small": (60.1, 57.7, 1.80e6, 1.84e6),
    "beegfs-small+1": (83.3, 80.3, None, None),
    "beegfs-small+2": (105.2, 99.8, None, None),
    "beegfs-medium": (132.4, 120.7, 3.54e6, 3.59e6),
    "beegfs-medium+1": (152.9, 139.9, None, None),
}


def as_tuples(name: str) -> list[tuple[Any, ...]]:
    return [(r.workload, r.operation, r.threads, r.value, r.unit, r.kind) for r in refs(name)]


@pytest.mark.parametrize("name", [PIXSTOR, NSS, "beegfs-medium", CEPH])
def test_every_printed_number_is_a_reference(name: str) -> None:
    have = as_tuples(name)
    for expected in EXPECTED[name]:
        assert expected in have, f"{name}: no reference {expected}"
    extra = [t for t in have if t not in EXPECTED[name]]
    if name == "beegfs-medium":
        extra = [t for t in extra if t[2] is None and t[0] in ("iozone-seq", "iozone-rand")]  # Table 6, below
        assert len(extra) == 4
    else:
        assert not extra, f"{name}: references no test knows: {extra}"


@pytest.mark.parametrize("name", BEEGFS)
def test_table_6_and_7_values_per_beegfs_lab(name: str) -> None:
    read, write, random_read, random_write = TABLES_6_7[name]
    have = [t for t in as_tuples(name) if t[2] is None]
    assert ("iozone-seq", "read", None, read, "GB/s", "peak") in have
    assert ("iozone-seq", "write", None, write, "GB/s", "peak") in have
    random = [t for t in have if t[0] == "iozone-rand"]
    if random_read is None:
        assert not random, f"{name}: Table 7 publishes no random IOPS"
    else:
        assert ("iozone-rand", "random_read", None, random_read, "IOPS", "peak") in random
        assert ("iozone-rand", "random_write", None, random_write, "IOPS", "peak") in random
    text = " ".join(n.text for n in references.notes(name))
    assert "usable space" in text.lower(), f"{name}: the estimated usable space is kept as a note"


def test_a_lab_with_figures_only_has_no_reference_and_says_so() -> None:
    assert refs(CEPH) == []
    (first, *_) = references.notes(CEPH)
    assert "figures only" in first.text and first.source["document"] == "003_f13f695dbdd18fd6.txt"


#: Relative claims and limits each seed states: kept as notes (substring of a note's quote).
RELATIVE = {
    PIXSTOR: ["16.7", "(22 GB/s)", "8064 TB"],
    NSS: ["18,7 %", "2,65-mal", "2,13-mal", "12,5 %", "3,44-fachen", "85 %", "etwa 13 %", "(208 %)", "30 % schneller",
          "7,7-mal", "fast 6-mal", "33 %", "2,21-mal", "fast 55 %", "768 TB", "1.008 TB"],
    "beegfs-medium": ["422 GB/s", "172 GB/s", "136.4 GB/s", "97% and 89%", "12.4 GB/s", "985 MB/s"],
}


@pytest.mark.parametrize("name", list(RELATIVE))
def test_relative_claims_are_notes_with_their_source(name: str) -> None:
    quoted = " ".join(f"{n.text} {n.source.get('quote', '')}" for n in references.notes(name))
    for claim in RELATIVE[name]:
        assert claim in quoted, f"{name}: no note keeps {claim!r}"


@pytest.mark.parametrize("name", SEED_LABS)
def test_every_reference_and_note_has_a_source(name: str) -> None:
    for ref in refs(name):
        assert ref.source.get("document") in SEED_FILES and ref.source.get("where") and ref.source.get("quote")
    for note in references.notes(name):
        assert note.source.get("document") in SEED_FILES and note.source.get("quote")


def test_a_reference_or_note_without_a_source_fails(tmp_path: Path) -> None:
    good_source = {"document": "000_ded3896d23f7a332.txt", "where": "Table 4", "quote": "19.3 GB/s"}
    ref = {"workload": "ior-n1", "operation": "write", "value": 19.3, "unit": "GB/s", "kind": "sustained",
           "source": good_source}
    note = {"text": "The ME4 arrays' maximum specification is 22 GB/s.", "source": good_source}

    def write(entries: list[dict[str, Any]], notes: list[Any]) -> Path:
        path = tmp_path / "x.yaml"
        path.write_text(yaml.safe_dump({"lab": "x", "references": entries, "notes": notes}))
        return path

    assert len(references.load("x", write([ref], [note]))) == 1
    assert references.notes("x", write([ref], [note]))[0].text.startswith("The ME4")
    with pytest.raises(references.ReferenceError, match=r"references\[0\]: a reference needs a source"):
        references.load("x", write([{k: v for k, v in ref.items() if k != "source"}], [note]))
    with pytest.raises(references.ReferenceError, match=r"references\[0\]: a reference needs a source"):
        references.load("x", write([dict(ref, source={"document": "000_ded3896d23f7a332.txt"})], [note]))
    with pytest.raises(references.ReferenceError, match=r"notes\[1\]: a note needs a source"):
        references.load("x", write([ref], [note, {"text": "2.13 times the previous release"}]))
    with pytest.raises(references.ReferenceError, match=r"notes\[0\]: missing 'text'"):
        references.notes("x", write([], [{"source": good_source}]))
    with pytest.raises(references.ReferenceError, match=r"notes\[0\]: a note is a mapping"):
        references.notes("x", write([], ["a bare sentence"]))


# ---- against the seed texts themselves -------------------------------------------------

needs_seeds = pytest.mark.skipif(not SEEDS.is_dir(), reason=f"the seed documents are not at {SEEDS}")

#: A performance number as the seeds print it: "24.8 GB/s", "222.1K op/s", "40KIOps",
#: "11M IOps", "~3.6 Million IOPS", "985 MB/s".
NUMBER = re.compile(r"~?(\d+(?:[.,]\d+)?)\s*(K|M|Million)?\s*(GB/s|MB/s|op/s|IOps|IOPS)")
SCALE = {None: 1.0, "K": 1e3, "M": 1e6, "Million": 1e6}


def flat(text: str) -> str:
    """Whitespace collapsed; list bullets, code fences and bold markers of the seed files dropped."""
    for mark in ("\u2022", "```", "**"):
        text = text.replace(mark, " ")
    return " ".join(text.replace("\u00a0", " ").split())


def seed_text(document: str) -> str:
    return flat((SEEDS / document).read_text(encoding="utf-8"))


@needs_seeds
@pytest.mark.parametrize("document", list(SEED_FILES))
def test_every_performance_number_in_a_seed_is_a_reference_or_a_note(document: str) -> None:
    owners = SEED_FILES[document]
    all_refs = [r for name in owners for r in refs(name)]
    noted = " ".join(flat(f"{n.text} {n.source.get('quote', '')}") for name in owners for n in references.notes(name))
    missing = []
    for match in NUMBER.finditer(seed_text(document)):
        number, scale, unit = match.groups()
        value = float(number.replace(",", ".")) * SCALE[scale]
        base = "GB/s" if unit in ("GB/s", "MB/s") else "ops/s"
        value = convert(value, unit, base) if unit == "MB/s" else value
        found = any(
            kind_of(r.unit) == kind_of(base) and abs(convert(r.value, r.unit, base) - value) <= 1e-6 * value
            for r in all_refs
        )
        if not found and match.group(0).lstrip("~") not in noted:
            missing.append(match.group(0))
    assert not missing, f"{document}: numbers neither referenced nor noted: {missing}"
    if document == "003_f13f695dbdd18fd6.txt":
        assert not NUMBER.search(seed_text(document)), "the CephFS study prints no performance number"


def fragments(quote: str) -> list[str]:
    """A quote's verbatim pieces: the kit joins excerpts with ' ... ', table cells with ' | ', bullets with '; '."""
    parts = re.split(r"\s+\.\.\.\s+|\s+\|\s+|;\s+|\s+/\s+", flat(quote))
    return [p.strip(" .:") for p in parts if p.strip(" .:")]


@needs_seeds
@pytest.mark.parametrize("name", SEED_LABS)
def test_quotes_are_verbatim_from_their_seed(name: str) -> None:
    sources = [r.source for r in refs(name)] + [n.source for n in references.notes(name)]
    sources += [w["source"] for w in load(name)["workloads"]]
    missing = [
        f"{piece!r} ({source['document']})"
        for source in sources for piece in fragments(source["quote"]) if piece not in seed_text(source["document"])
    ]
    assert not missing, f"{name}: not verbatim in the seed: " + "; ".join(missing)


@needs_seeds
def test_the_efficiencies_quote_their_seed_verbatim() -> None:
    sources = [e.source for by_direction in derive.efficiencies().values() for e in by_direction.values()]
    sources.append(next(iter(derive.efficiencies()["seq-nn"].values())).peak_source)
    missing = [f"{piece!r}" for source in sources for piece in fragments(source["quote"])
               if piece not in seed_text(source["document"])]
    assert not missing, "not verbatim in the seed: " + "; ".join(missing)
    for by_direction in derive.efficiencies().values():
        for e in by_direction.values():
            assert f"{e.reached_gbps:g} GB/s" in e.source["quote"] and f"{e.peak_gbps:g} GB/s" in e.peak_source["quote"]
