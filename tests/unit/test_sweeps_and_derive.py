"""Checks over whole sweeps, and thresholds derived from a lab's hardware."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslab import baseline, compare, derive, references, runs, sweeps
from pfslab.verdict import Row

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def beegfs_like() -> dict[str, Any]:
    """The BeeGFS seed's hardware as its section 4.1 counts it (002_f20a6b9879af5b9b.txt)."""
    p4600 = {"use": "data", "kind": "nvme", "model": "Intel P4600 1.6TB", "count": 12, "read_mbps": 3200, "write_mbps": 1300}
    edr = {"type": "infiniband", "model": "ConnectX-5 EDR", "count": 1, "speed_gbps": 100, "effective_gbytes_per_s": 12.4}
    return {
        "name": "beegfs-like",
        "node_groups": [
            {"name": "mgmt", "count": 1, "roles": ["beegfs-mgmt"], "hardware": {"nics": [dict(edr, use="management")]}},
            # The metadata server's 12 storage drives and its NUMA-1 link carry data; its other link, metadata.
            {"name": "mds", "count": 1, "roles": ["beegfs-meta", "beegfs-storage"],
             "hardware": {"drives": [p4600], "nics": [edr, dict(edr, use="metadata")]}},
            {"name": "ss", "count": 5, "roles": ["beegfs-storage"],
             "hardware": {"drives": [dict(p4600, count=24)], "nics": [dict(edr, count=2)]}},
            {"name": "cli", "count": 32, "roles": ["beegfs-client"], "hardware": {"nics": [edr]}},
        ],
    }


def test_the_beegfs_seeds_own_arithmetic() -> None:
    d = derive.derive(beegfs_like())
    nn, n1 = d["seq-nn"], d["seq-n1"]
    # "a theoretical peak of 422 GB/s for reads and 172 GB/s for writes" (132 drives)
    assert "= 422.4 GB/s" in nn["read"].lines[0] and "= 171.6 GB/s" in nn["write"].lines[0]
    # "11 InfiniBand EDR links ... 12.4 GB/s ... aggregate theoretical peak performance of 136.4 GB/s"
    assert nn["read"].peak_gbps == pytest.approx(136.4) and nn["read"].limit == "storage links"
    # On the seed's own hardware each pattern's threshold is what the seed reached with it:
    # IOzone N-N 132 / 121 GB/s (4.1, "97% and 89%"), IOR N-1 66.3 / 37.4 GB/s (4.2).
    assert nn["read"].threshold_gbps == pytest.approx(132) and nn["write"].threshold_gbps == pytest.approx(121)
    assert n1["read"].threshold_gbps == pytest.approx(66.3) and n1["write"].threshold_gbps == pytest.approx(37.4)
    assert "= 96.8%" in nn["read"].lines[-2] and "= 88.7%" in nn["write"].lines[-2]
    assert "66.3 GB/s reached / 136.4 GB/s theoretical = 48.6%" in n1["read"].lines[-2]


def test_no_drive_bandwidth_no_derivation() -> None:
    lab = beegfs_like()
    for group in lab["node_groups"]:
        for drive in group.get("hardware", {}).get("drives", []):
            drive.pop("read_mbps")
    d = derive.derive(lab)
    assert d and all("read" not in by_direction and "write" in by_direction for by_direction in d.values())


def test_a_misspelt_pattern_in_the_policy_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = yaml.safe_load(references.POLICY_PATH.read_text())
    policy["efficiency"]["patterns"]["seq-N1"] = policy["efficiency"]["patterns"].pop("seq-n1")
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    monkeypatch.setattr(derive, "POLICY_PATH", path)
    with pytest.raises(references.ReferenceError, match="efficiency pattern 'seq-N1' is not a workload pattern; allowed: seq-nn"):
        derive.efficiencies()


def row(point: str, value: float, figure: str = "read", workload: str = "ior-n1") -> Row:
    return Row("IOR", workload, int(point), point, figure, value, "GB/s", None, None, None, "no reference", "")


def sweep_refs(tmp_path: Path, entries: list[dict[str, Any]]) -> list[references.Reference]:
    src = {"document": "000_ded3896d23f7a332.txt", "where": "Table 4"}
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump({"lab": "x", "references": [dict(e, source=src) for e in entries]}))
    return references.load("x", path)


CURVE = [row("1", 3.0), row("8", 20.0), row("16", 24.8), row("64", 23.0), row("512", 23.8)]


def test_peak_is_checked_against_the_best_point(tmp_path: Path) -> None:
    refs = sweep_refs(tmp_path, [{"workload": "ior-n1", "operation": "read", "value": 24.8, "unit": "GB/s", "kind": "peak"}])
    (result,) = sweeps.check(CURVE, {"node_groups": []}, refs, "full", {"ior-n1": "seq-n1"})
    assert (result.verdict, result.measured, result.point) == ("pass", 24.8, "sweep")
    assert "16 threads" in result.reason


def test_sustained_is_the_plateau_after_the_peak(tmp_path: Path) -> None:
    refs = sweep_refs(tmp_path, [{"workload": "ior-n1", "operation": "read", "value": 27.0, "unit": "GB/s", "kind": "sustained"}])
    (result,) = sweeps.check(CURVE, {"node_groups": []}, refs, "full", {"ior-n1": "seq-n1"})
    assert result.measured == pytest.approx(23.8)  # median of 24.8, 23.0, 23.8
    assert result.verdict == "fail" and "outside >= 24.3 GB/s" in result.reason  # 27 - 10 %


# ---- a start-of-curve value: judged at its thread count only --------------------------

def test_a_start_of_curve_value_is_judged_at_its_thread_count_only() -> None:
    """Seed 000: FIO random write "starts at a high value of 29.1K IOps" (1 thread) and
    reaches a plateau at around 40K; the 29.1K is the first point, not a peak."""
    refs = references.load("pixstor-capex")
    start = references.lookup(refs, "fio-rand4k", "write_iops", 1, "full")
    assert start is not None and (start.kind, start.value, start.lower) == ("start", 29100, -0.10)
    for threads in (2, 16, 64, 512):
        found = references.lookup(refs, "fio-rand4k", "write_iops", threads, "full")
        assert found is None or found.kind != "start"
    assert "start" not in {r.kind for r in references.sweep_references(refs, "fio-rand4k", "write_iops", "full")}
    # Over a whole sweep only the peak and the plateau are checked: a curve whose 512-thread
    # point is far under 29.1K still meets them, and no row judges it by the start value.
    curve = [Row("FIO", "fio-rand4k", n, str(n), "write_iops", v, "IOPS", None, None, None, "no reference", "")
             for n, v in ((1, 29100.0), (64, 40000.0), (512, 20000.0))]
    rows = sweeps.check(curve, {"node_groups": []}, refs, "full", {"fio-rand4k": "random"})
    assert sorted(r.figure for r in rows) == ["write_iops (peak)", "write_iops (sustained)"]


def test_a_start_value_needs_its_thread_count(tmp_path: Path) -> None:
    entry = {"workload": "fio-rand4k", "operation": "write_iops", "value": 29100, "unit": "IOPS", "kind": "start"}
    (ref,) = sweep_refs(tmp_path, [dict(entry, threads=1)])
    assert ref.threads == 1
    with pytest.raises(references.ReferenceError,
                       match=r"references\[0\]: kind 'start' holds at one thread count: give 'threads'"):
        sweep_refs(tmp_path, [entry])


# ---- "does not drop below X": every point of the plateau -------------------------------

def md_curve(points: list[tuple[int, float]]) -> list[Row]:
    return [Row("MDtest", "mdtest-empty", n, str(n), "file_stat", v, "ops/s", None, None, None, "no reference", "")
            for n, v in points]


#: Seed 002 4.4: stat peaks at 64 threads with ~486K op/s and "does not drop below 440K op/s"
#: after it (up to 2048 threads). Points before the peak do not count.
SEED_STAT = [(1, 9000.0), (16, 200000.0), (64, 486000.0), (128, 470000.0), (256, 452000.0), (512, 445000.0),
             (1024, 441000.0), (2048, 448000.0)]


def floor_row(points: list[tuple[int, float]]) -> Row:
    refs = [r for r in references.load("beegfs-medium") if r.kind == "floor" and r.operation == "file_stat"]
    (result,) = sweeps.check(md_curve(points), {"node_groups": []}, refs, "full", {"mdtest-empty": "md-empty"})
    return result


def test_a_floor_passes_when_every_plateau_point_is_above_it() -> None:
    result = floor_row(SEED_STAT)
    assert (result.figure, result.verdict, result.reference) == ("file_stat (floor)", "pass", 440000)
    assert result.measured == 441000 and "lowest at 1024 threads" in result.reason
    assert result.bound() == pytest.approx(440000 * 0.9)  # the policy's margin for a floor


def test_a_floor_fails_on_one_plateau_point_under_it_and_names_that_point() -> None:
    # One point at 380K: under 396K (440K less the policy's 10 %); the plateau's median (448K)
    # would still pass, so a median check could not see it.
    points = [(n, 380000.0 if n == 512 else v) for n, v in SEED_STAT]
    result = floor_row(points)
    assert result.verdict == "fail" and result.measured == 380000
    assert result.reason == "1 of 6 plateau points under >= 3.96e+05 ops/s: 512 threads: 3.8e+05 ops/s"
    # Within the margin is not under it: 400K passes.
    assert floor_row([(n, 400000.0 if n == 512 else v) for n, v in SEED_STAT]).verdict == "pass"


def test_a_floor_takes_no_thread_count_and_no_time_unit(tmp_path: Path) -> None:
    entry = {"workload": "mdtest-empty", "operation": "file_stat", "value": 440000, "unit": "ops/s", "kind": "floor"}
    with pytest.raises(references.ReferenceError, match="holds for every point of the plateau: it takes no 'threads'"):
        sweep_refs(tmp_path, [dict(entry, threads=64)])
    with pytest.raises(references.ReferenceError, match="kind 'floor' is a lower bound; unit 's' is a time"):
        sweep_refs(tmp_path, [dict(entry, unit="s", value=10)])


def test_derived_limits_apply_only_where_nothing_was_published() -> None:
    curve = [row("1", 50.0), row("256", 55.0)]
    (result,) = sweeps.check(curve, beegfs_like(), [], "full", {"ior-n1": "seq-n1"})
    # IOR N-1 is held to what the seed's IOR N-1 reached (66.3 GB/s), less the policy's margin.
    assert result.figure == "read (derived)" and result.verdict == "fail"
    assert result.reference == pytest.approx(66.3) and result.bound() == pytest.approx(66.3 * 0.9)
    assert "48.6% (seq-n1 read: 66.3 / 136.4 GB/s" in result.basis
    assert result.derivation == derive.derive(beegfs_like())["seq-n1"]["read"].lines
    # The same curve from an N-N workload is held to what the seed's N-N reached.
    (nn,) = sweeps.check(curve, beegfs_like(), [], "full", {"ior-n1": "seq-nn"})
    assert nn.reference == pytest.approx(132)
    # Patterns no seed gives an efficiency for get none: no made-up threshold.
    assert sweeps.check(curve, beegfs_like(), [], "full", {"ior-n1": "md-empty"}) == []
    assert sweeps.check(curve, beegfs_like(), [], "full", {"ior-n1": "random"}) == []


def small_like() -> dict[str, Any]:
    """The seed's Small configuration: the metadata server and 2 storage servers (5 data links)."""
    lab = beegfs_like()
    for group in lab["node_groups"]:
        if group["name"] == "ss":
            group["count"] = 2
    return lab


def test_a_scaled_lab_that_reaches_what_the_seed_reached_passes_ior_n1() -> None:
    """Small has 5 x 12.4 = 62 GB/s of storage links; the seed's Medium IOR N-1 reached 37.4
    of 136.4 GB/s. A Small lab doing as well (17 GB/s at its best) passes; the N-N efficiency
    (89 %: 55 GB/s) would fail it by construction."""
    scaled = 37.4 * 62 / 136.4
    curve = [row("1", 2.0, "write"), row("64", scaled, "write"), row("512", scaled * 0.95, "write")]
    (result,) = sweeps.check(curve, small_like(), [], "full", {"ior-n1": "seq-n1"})
    assert result.verdict == "pass" and result.reference == pytest.approx(scaled)
    assert "62 GB/s (storage links) x 27.4%" in result.basis
    (worse,) = sweeps.check([row("64", scaled * 0.85, "write")], small_like(), [], "full", {"ior-n1": "seq-n1"})
    assert worse.verdict == "fail"


def test_a_baseline_from_real_runs_carries_its_runs_and_spread(tmp_path: Path) -> None:
    dirs = [RUNS / "local-quick-suite", RUNS / "local-mixed-verdicts"]
    path, count = baseline.write("local", dirs, tmp_path / "local.yaml")
    data = yaml.safe_load(path.read_text())
    entries = {(e["workload"], e["operation"], e["threads"]): e for e in data["references"]}
    # Only tests that passed in every run: fio at one thread (the IOzone test failed in the second run).
    assert set(entries) == {("fio-rand4k", "write_iops", 1), ("fio-rand4k", "read_iops", 1)}
    assert count == 2
    fio = entries[("fio-rand4k", "write_iops", 1)]
    assert fio["kind"] == "baseline" and fio["mode"] == "quick" and fio["unit"] == "IOPS"
    assert fio["value"] == pytest.approx((672.6 + 522.4) / 2, rel=0.01)
    assert "local-quick-suite" in fio["source"]["where"] and fio["tolerance"]["lower"] <= -0.30
    assert references.load("local", path)


def test_a_baseline_needs_two_runs() -> None:
    with pytest.raises(baseline.BaselineError, match="at least 2 runs"):
        baseline.write("local", [RUNS / "local-quick-suite"])


def test_compare_flags_changes_beyond_the_noise() -> None:
    changes = {(c.workload, c.point, c.figure): c for c in compare.compare(runs.Run(RUNS / "local-quick-suite"),
                                                                           runs.Run(RUNS / "local-mixed-verdicts"))}
    assert changes[("iozone-seq", "1", "write")].verdict == "better"  # 28.8 -> 52.1 MiB/s
    assert changes[("iozone-seq", "1", "read")].verdict == "within noise"  # 195 -> 214 MiB/s
    assert changes[("ior-n1", "4", "write")].verdict == "only in A"


def _runs_on(tmp_path: Path, machines: list[str]) -> list[Path]:
    """The two real runs, copied, as if made on the given machines."""
    import shutil

    out = []
    for name, machine_id in zip(["local-quick-suite", "local-mixed-verdicts"], machines):
        copy = tmp_path / name
        shutil.copytree(RUNS / name, copy)
        provenance = json.loads((copy / "provenance.json").read_text())
        provenance["machine"] = {"id": machine_id, "description": f"test machine {machine_id}", "facts": {"cpus": 2}}
        (copy / "provenance.json").write_text(json.dumps(provenance))
        out.append(copy)
    return out


def test_a_baseline_is_keyed_to_the_machine_its_runs_were_made_on(tmp_path: Path) -> None:
    path, count = baseline.write("local", _runs_on(tmp_path, ["host-aaaaaaaaaaaa"] * 2), tmp_path / "local.yaml")
    data = yaml.safe_load(path.read_text())
    assert count == 2 and {e["machine"] for e in data["references"]} == {"host-aaaaaaaaaaaa"}
    assert data["machines"]["host-aaaaaaaaaaaa"]["description"] == "test machine host-aaaaaaaaaaaa"
    refs = references.load("local", path)
    assert references.lookup(refs, "fio-rand4k", "write_iops", 1, "quick", None, "host-aaaaaaaaaaaa") is not None
    assert references.lookup(refs, "fio-rand4k", "write_iops", 1, "quick", None, "host-bbbbbbbbbbbb") is None


def test_a_new_baseline_replaces_only_its_own_machines(tmp_path: Path) -> None:
    target = tmp_path / "local.yaml"
    baseline.write("local", _runs_on(tmp_path / "a", ["host-aaaaaaaaaaaa"] * 2), target)
    baseline.write("local", _runs_on(tmp_path / "b", ["host-bbbbbbbbbbbb"] * 2), target)
    baseline.write("local", _runs_on(tmp_path / "c", ["host-bbbbbbbbbbbb"] * 2), target)
    data = yaml.safe_load(target.read_text())
    machines = sorted(e["machine"] for e in data["references"])
    assert machines == ["host-aaaaaaaaaaaa"] * 2 + ["host-bbbbbbbbbbbb"] * 2
    assert sorted(data["machines"]) == ["host-aaaaaaaaaaaa", "host-bbbbbbbbbbbb"]


def test_runs_from_two_machines_make_no_baseline(tmp_path: Path) -> None:
    with pytest.raises(baseline.BaselineError, match="different machines"):
        baseline.write("local", _runs_on(tmp_path, ["host-aaaaaaaaaaaa", "host-bbbbbbbbbbbb"]), tmp_path / "x.yaml")
