"""Which threshold judges a figure: published values, this machine's baselines, the lab's
own calibration, never a number measured on another machine."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pfslab import calibration, labs, machine, references, thresholds, workloads

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "calibration.json"


def cal() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def ref(**changes: Any) -> references.Reference:
    base: dict[str, Any] = dict(
        workload="ior-n1", operation="write", threads=2, nodes=None, value=100.0, unit="MiB/s", kind="baseline",
        mode="quick", lower=-0.5, upper=None, source={"document": "make baseline", "where": "median of 3 runs"},
        noise=0.1, machine="host-aaaaaaaaaaaa",
    )
    base.update(changes)
    return references.Reference(**base)


def judge(refs: list[references.Reference], machine_id: str = "host-aaaaaaaaaaaa",
          calib: dict[str, Any] | None = None) -> thresholds.Judge:
    return thresholds.Judge(labs.load("local"), refs, machine_id, calib)


def test_the_floor_is_a_stated_fraction_of_the_probe_of_the_same_kind() -> None:
    data = cal()
    probe = data["probes"]["seq-write"]["write"]
    rule = calibration.rules()["write"]
    found = calibration.threshold(data, "write", "bandwidth")
    assert found is not None and found.kind == "calibrated" and found.unit == "MiB/s"
    assert found.value == pytest.approx(probe["value"] / 1024)  # KiB/s -> MiB/s
    assert found.lower == pytest.approx(rule.floor - 1.0)
    assert "floor 20% of the lab's own seq-write probe" in references.basis(found)


def test_metadata_rates_are_judged_by_the_metadata_probe() -> None:
    found = calibration.threshold(cal(), "file_creation", "rate")
    assert found is not None and found.unit == "ops/s"
    assert found.value == pytest.approx(cal()["probes"]["metadata"]["create"]["value"])


SMALL_FILES_FIXTURE = FIXTURE.with_name("calibration-small-files.json")


def test_synced_4k_file_creates_are_judged_by_the_small_files_probe_empty_ones_by_metadata() -> None:
    """mdtest -w 4K -y waits for a data write per file: its creates ran at 0.085 of the
    empty-file probe on a healthy lab, at about 1x of a probe doing the same work."""
    calib: dict[str, Any] = json.loads(SMALL_FILES_FIXTURE.read_text())
    j = judge([], calib=calib)
    small, why = j.reference("mdtest-4k", "file_creation", 1, "quick", None, "rate")
    assert small is not None and "small-files probe" in why
    assert small.value == pytest.approx(calib["probes"]["small-files"]["create"]["value"])
    imported, _ = j.reference("pixstor-capex/mdtest-4k", "file_creation", 1, "quick", None, "rate")
    assert imported is not None and imported.value == small.value
    empty, why = j.reference("mdtest-empty", "file_creation", 1, "quick", None, "rate")
    assert empty is not None and "metadata probe" in why
    assert empty.value == pytest.approx(calib["probes"]["metadata"]["create"]["value"])
    stat, why = j.reference("mdtest-4k", "file_stat", 1, "quick", None, "rate")
    assert stat is not None and "metadata probe" in why


def test_a_calibration_without_the_small_files_probe_judges_as_before() -> None:
    found, why = judge([], calib=cal()).reference("mdtest-4k", "file_creation", 1, "quick", None, "rate")
    assert "small-files" not in cal()["probes"]
    assert found is not None and "metadata probe" in why


def test_every_pattern_a_floor_names_is_a_workload_pattern() -> None:
    """A misspelt pattern would silently leave its figures to the general floor."""
    patterns = {str(w["pattern"]) for name in labs.lab_names() for w in labs.load(name).get("workloads", [])}
    named = {pattern for _, pattern in calibration.pattern_rules()}
    assert named and named <= patterns, sorted(named - patterns)


def test_completion_times_have_no_calibrated_threshold() -> None:
    assert calibration.threshold(cal(), "wall_time", "time") is None
    assert calibration.threshold(cal(), "execution_time", "time") is None
    found, why = judge([], calib=cal()).reference("cephfs-stria/lammps-dump", "wall_time", 2, "quick", None, "time")
    assert found is None and why.startswith("no threshold: a completion time")


def test_the_probe_figure_follows_the_kind_the_figure_was_measured_in() -> None:
    """IOzone prints random I/O in ops/s with -O and in KiB/s without: each meets its own kind."""
    as_rate = calibration.threshold(cal(), "random_write", "rate")
    as_bandwidth = calibration.threshold(cal(), "random_write", "bandwidth")
    assert as_rate is not None and as_rate.unit == "ops/s"
    assert as_rate.value == pytest.approx(cal()["probes"]["rand-write"]["write_iops"]["value"])
    assert as_bandwidth is not None and as_bandwidth.unit == "MiB/s"
    assert as_bandwidth.value == pytest.approx(cal()["probes"]["rand-write"]["write"]["value"] / 1024)


def test_shared_tree_removal_is_reported_not_judged_and_says_why() -> None:
    found, why = judge([], calib=cal()).reference("cephfs-stria/mdtest-tree", "tree_removal", 4, "quick", 2, "rate")
    assert found is None and "capabilities between the clients" in why


def test_before_the_figure_is_measured_the_calibration_waits_for_its_kind() -> None:
    found, why = judge([], calib=cal()).reference("fio-rand4k", "write_iops", 2, "quick")
    assert found is None and "once the figure is measured" in why


def test_every_rate_the_local_lab_measures_has_a_probe() -> None:
    """A new figure in a workload of the local lab (or one it imports) must get a rule."""
    lab = labs.load("local")
    measured: set[str] = set()
    for tool in ("ior", "mdtest", "iozone", "fio", "io500"):
        for case in workloads.cases(tool, ["local"]):
            for step in workloads.find(lab, case.workload)["steps"]:
                measured.update(step.get("measures", []) if isinstance(step, dict) else [])
    missing = sorted(measured - set(calibration.rules()) - set(calibration.unjudged()))
    assert not missing, f"no calibration rule judges {missing}, and none says why not"


def test_io500_easy_phases_are_judged_by_the_probes_the_rest_say_why_not() -> None:
    """ior-easy and mdtest-easy creates have the probes' shape; shared files and
    directories, cross-client reads and IO500's composite scores are reported only."""
    j = judge([], calib=cal())
    write, why = j.reference("io500", "ior_easy_write", 2, "quick", None, "bandwidth")
    assert write is not None and write.unit == "MiB/s" and "seq-write probe" in why
    assert write.value == pytest.approx(cal()["probes"]["seq-write"]["write"]["value"] / 1024)
    create, why = j.reference("io500", "mdtest_easy_write", 2, "quick", None, "rate")
    assert create is not None and create.value == pytest.approx(cal()["probes"]["metadata"]["create"]["value"])
    hard, why = j.reference("io500", "mdtest_hard_write", 2, "quick", None, "rate")
    assert hard is None and "capabilities between the clients" in why
    total, why = j.reference("io500", "score", 2, "quick", None, "score")
    assert total is None and why.startswith("no threshold: IO500's scores are geometric means")


def test_a_published_reference_wins_over_the_calibration() -> None:
    published = ref(kind="peak", machine=None, value=500.0, source={"document": "seed.txt", "where": "Table 1"})
    found, why = judge([published], calib=cal()).reference("ior-n1", "write", 2, "quick", kind="bandwidth")
    assert found is published and why == "peak: seed.txt, Table 1"


def test_a_baseline_judges_on_its_own_machine_only() -> None:
    baseline = ref()
    found, _ = judge([baseline], "host-aaaaaaaaaaaa", cal()).reference("ior-n1", "write", 2, "quick", kind="bandwidth")
    assert found is baseline
    found, why = judge([baseline], "host-bbbbbbbbbbbb", cal()).reference("ior-n1", "write", 2, "quick", kind="bandwidth")
    assert found is not None and found.kind == "calibrated"
    assert why.startswith("no baseline for this machine (the one in the references file was measured on host-aaaaaaaaaaaa)")


def test_a_baseline_that_names_no_machine_judges_nowhere() -> None:
    found, _ = judge([ref(machine=None)], calib=cal()).reference("ior-n1", "write", 2, "quick", kind="bandwidth")
    assert found is not None and found.kind == "calibrated"


def test_without_a_calibration_there_is_no_threshold_and_the_reason_says_how_to_get_one() -> None:
    found, why = judge([], calib=None).reference("ior-n1", "write", 2, "quick", kind="bandwidth")
    assert found is None
    assert "lab local has no calibration" in why and "make calibrate" in why


def test_a_lab_that_does_not_calibrate_is_never_judged_by_a_calibration() -> None:
    lab = copy.deepcopy(labs.load("local"))
    lab["benchmark"]["calibrate"] = False
    found, why = thresholds.Judge(lab, [], "host-x", cal()).reference("ior-n1", "write", 2, "quick", kind="bandwidth")
    assert found is None and why == "no published or baseline value for this figure"


def test_the_calibration_file_records_the_machine_and_every_sample() -> None:
    data = cal()
    assert data["machine"]["id"] == machine.fingerprint(data["machine"]["facts"])
    for figures in data["probes"].values():
        for entry in figures.values():
            assert len(entry["samples"]) == data["rounds"]
            assert entry["value"] == pytest.approx(sorted(entry["samples"])[len(entry["samples"]) // 2])


def test_equal_machines_share_a_fingerprint_and_fewer_cpus_make_another() -> None:
    facts = machine.host_facts()
    assert machine.fingerprint(facts) == machine.fingerprint(copy.deepcopy(facts))
    smaller = dict(facts, cpus=facts["cpus"] + 1)
    assert machine.fingerprint(smaller) != machine.fingerprint(facts)
    assert machine.fingerprint(facts).startswith("host-")
    assert f"{facts['cpus']} CPUs" in machine.describe(facts)


def test_a_lab_elsewhere_is_the_hardware_its_file_declares() -> None:
    lab = labs.load("beegfs-medium")
    facts = machine.facts_for(lab)
    assert facts["kind"] == "declared" and facts["target"] == lab["target"]
    assert machine.fingerprint(facts) == machine.fingerprint(machine.facts_for(labs.load("beegfs-medium")))
