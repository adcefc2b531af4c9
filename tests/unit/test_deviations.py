"""Departures from a lab's sources as data: the lab file's ``deviations`` (what, the
seed's value, the kit's, why), validated by labs/schema.json, merged with the ones the
kit derives (tool versions, launcher lines, seed_args, the release), listed by
``pfslab lab deviations``, kept in provenance and shown in the report."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pfslab import deviations, labs, provenance, report, runs

KIT = Path(__file__).resolve().parents[2]
RUNS = KIT / "tests" / "fixtures" / "runs"
PFSLAB = Path(sys.executable).with_name("pfslab")

#: The choices issue 23 names for beegfs-medium, as a reader finds them in the listing.
BEEGFS_CHOICES = ("storage services per dedicated storage server", "transparent huge pages",
                  "IOzone random prepare step and cache drop", "mdtest working directory")
#: ... and the tool and release versions the seed ran that the lab does not (seed 002: IOzone
#: 3.487, Open MPI 1.10.7, BeeGFS 7.1.3; IOR and mdtest 3.3.0 are the seed view's own).
BEEGFS_VERSIONS = ("iozone 3.487", "openmpi 1.10.7", "beegfs release the nodes install")
ISSUE_CHOICES = {
    "pixstor-capex": ("NSD (storage) servers", "High Demand Metadata Module servers"),
    "cephfs-stria": ("placement groups per pool", "CRUSH failure domain", "OSD host layout", "ceph-mgr placement"),
    "nss73-ha": ("NFS export and mount options", "random I/O sweep"),
}


def lab_with(tmp_path: Path, entries: object) -> Path:
    data = yaml.safe_load((KIT / "labs" / "local.yaml").read_text())
    data["name"] = "dev"
    data["deviations"] = entries
    path = tmp_path / "dev.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


GOOD = {"what": "mount point", "seed": "not stated", "kit": "/mnt/x", "why": "the seed gives none"}


@pytest.mark.parametrize("missing", ["what", "seed", "kit", "why"])
def test_a_deviation_missing_a_field_is_refused_naming_the_lab_and_the_field(tmp_path: Path, missing: str) -> None:
    path = lab_with(tmp_path, [GOOD, {k: v for k, v in GOOD.items() if k != missing}])
    with pytest.raises(labs.LabError) as err:
        labs.load(str(path))
    message = str(err.value)
    assert "\n" not in message and "dev.yaml" in message
    assert f"deviations[1]: '{missing}' is a required property" in message


def test_a_deviation_with_an_extra_or_empty_field_is_refused(tmp_path: Path) -> None:
    with pytest.raises(labs.LabError, match=r"dev\.yaml: deviations\[0\]\.field: unknown field; "
                                            r"allowed here: kit, seed, what, why$"):
        labs.load(str(lab_with(tmp_path, [{**GOOD, "field": "filesystem.mount"}])))
    with pytest.raises(labs.LabError, match=r"dev\.yaml: deviations\[0\]\.why: ' ' is not allowed; allowed: .*non-empty"):
        labs.load(str(lab_with(tmp_path, [{**GOOD, "why": " "}])))
    assert labs.load(str(lab_with(tmp_path, [GOOD])))["deviations"] == [GOOD]


def test_no_shipped_lab_keeps_a_departure_as_a_comment_phrase() -> None:
    for path in sorted((KIT / "labs").glob("*.yaml")):
        assert "kit's choice" not in path.read_text().lower(), f"{path.name}: a departure is a deviations entry"


def listed(lab: str) -> str:
    return subprocess.run([str(PFSLAB), "lab", "deviations", lab], capture_output=True, text=True, check=True).stdout


def test_lab_deviations_beegfs_medium_lists_every_named_choice_and_the_tool_versions() -> None:
    out = listed("beegfs-medium")
    for what in (*BEEGFS_CHOICES, *BEEGFS_VERSIONS, "MPI launcher line (launcher.mpirun)", "ior arguments of ior-n1"):
        assert what in out, what
    # Each entry with the seed's value, the kit's and why.
    block = out.split("- transparent huge pages")[1].split("\n- ")[0]
    assert [line.split(":")[0].strip() for line in block.splitlines()[1:]] == ["seed", "kit", "why"]
    assert "seed: openmpi 1.10.7\n    kit:  openmpi 4.1.8" in out
    assert "kit:  " + labs.release(labs.load("beegfs-medium"))["installed"] in out


@pytest.mark.parametrize("lab", sorted(ISSUE_CHOICES))
def test_the_other_seed_labs_list_the_choices_the_issue_names(lab: str) -> None:
    whats = [d.what for d in deviations.declared(labs.lab_path(lab))]
    for named in ISSUE_CHOICES[lab]:
        assert any(w.startswith(named) for w in whats), f"{lab}: {named}"


def test_a_lab_that_extends_another_inherits_its_entries_and_adds_its_own(tmp_path: Path) -> None:
    base = yaml.safe_load((KIT / "labs" / "local.yaml").read_text())
    base.update(name="base", deviations=[GOOD])
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    own = {"what": "subnet", "seed": "not stated", "kit": "10.1.0.0/16", "why": "none given"}
    (tmp_path / "child.yaml").write_text(yaml.safe_dump({"extends": "base", "name": "child", "title": "child",
                                                          "deviations": [own]}))
    assert labs.load(str(tmp_path / "child.yaml"), tmp_path)["deviations"] == [GOOD, own]
    found = [(d.what, d.file) for d in deviations.declared(tmp_path / "child.yaml", tmp_path)]
    assert found == [("mount point", "base.yaml"), ("subnet", "child.yaml")]
    # The shipped scalable configurations inherit beegfs-medium's.
    small = [d.what for d in deviations.declared(labs.lab_path("beegfs-small+2"))]
    assert all(any(w.startswith(c) for w in small) for c in BEEGFS_CHOICES)


def test_provenance_and_a_dry_runs_report_show_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A dry run records provenance (scripts/dry-run: pfslab record) before ReFrame writes
    # its job scripts: the dry-run fixture's ReFrame report under beegfs-medium's record.
    monkeypatch.delenv("PFSLAB_RUN_DIR", raising=False)
    run_dir = tmp_path / "beegfs-medium" / "run"
    shutil.copytree(RUNS / "pixstor-capex-dry-run", run_dir)
    for name in ("references.yaml", "provenance.json", "lab.json", "lab.yaml"):
        (run_dir / name).unlink(missing_ok=True)
    data = provenance.record(run_dir, "beegfs-medium", "/nonexistent")
    recorded = json.loads((run_dir / "provenance.json").read_text())["deviations"]
    assert recorded == data["deviations"]
    whats = [d["what"] for d in recorded]
    for named in (*BEEGFS_CHOICES, "iozone version", "openmpi version", "beegfs release the nodes install"):
        assert any(w.startswith(named) for w in whats), named
    assert all(set(d) == {"what", "seed", "kit", "why", "file"} and all(d.values()) for d in recorded)
    page = report.build(runs.Run(run_dir), tmp_path / "out").read_text()
    section = page.split("<h2>Where the lab departs from its sources</h2>")[1].split("<h2>")[0]
    for dev in recorded:
        row = (f"<tr><td>{html.escape(dev['what'])}</td><td>{html.escape(dev['seed'])}</td>"
               f"<td>{html.escape(dev['kit'])}</td><td>{html.escape(dev['why'])}</td><td>{html.escape(dev['file'])}</td></tr>")
        assert row in section, dev["what"]


def test_a_report_shows_what_the_run_recorded_even_in_the_earlier_format(tmp_path: Path) -> None:
    run_dir = tmp_path / "pixstor-capex" / "run"
    shutil.copytree(RUNS / "pixstor-capex-dry-run", run_dir)
    prov = run_dir / "provenance.json"
    data = json.loads(prov.read_text())
    data["deviations"] = [{"field": "filesystem.gpfs.pagepool", "value": "8G", "note": "a recorded note",
                           "file": "pixstor-capex.yaml"}]
    prov.write_text(json.dumps(data))
    page = report.build(runs.Run(run_dir), tmp_path / "out").read_text()
    section = page.split("<h2>Where the lab departs from its sources</h2>")[1].split("<h2>")[0]
    assert "<tr><td>filesystem.gpfs.pagepool</td><td></td><td>8G</td><td>a recorded note</td>" in section
    assert "metadata block size" not in section
