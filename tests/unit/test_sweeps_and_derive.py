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
    # "a theoretical peak of 422 GB/s for reads and 172 GB/s for writes" (132 drives)
    assert "= 422.4 GB/s" in d["read"].lines[0] and "= 171.6 GB/s" in d["write"].lines[0]
    # "11 InfiniBand EDR links ... 12.4 GB/s ... aggregate theoretical peak performance of 136.4 GB/s"
    assert d["read"].peak_gbps == pytest.approx(136.4) and d["read"].limit == "storage links"
    assert d["read"].threshold_gbps == pytest.approx(136.4 * 0.97)
    assert d["write"].threshold_gbps == pytest.approx(136.4 * 0.89)
    assert "97%" in d["read"].lines[-1]


def test_no_drive_bandwidth_no_derivation() -> None:
    lab = beegfs_like()
    for group in lab["node_groups"]:
        for drive in group.get("hardware", {}).get("drives", []):
            drive.pop("read_mbps")
    assert "read" not in derive.derive(lab)


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


def test_derived_limits_apply_only_where_nothing_was_published() -> None:
    curve = [row("1", 50.0), row("256", 120.0)]
    (result,) = sweeps.check(curve, beegfs_like(), [], "full", {"ior-n1": "seq-n1"})
    assert result.figure == "read (derived)" and result.verdict == "fail"
    assert result.reference == pytest.approx(132.308)
    assert sweeps.check(curve, beegfs_like(), [], "full", {"ior-n1": "md-empty"}) == []


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
