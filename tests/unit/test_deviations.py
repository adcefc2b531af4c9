"""Departures from a lab's sources: said once in the lab file, beside the value, and shown
in the run's report (pfslab.deviations, pfslab.report)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pfslab import deviations, labs, report, runs

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"

LAB = """\
# Header: every value is the seed's unless a comment says "kit's choice".
schema_version: 1
name: x
filesystem:
  mount: /mnt/x  # kit's choice: the seed gives no mount point
  nfs:
    # The seed's own words, no deviation here.
    luns: 8
    # Kit's choice: the seed does not say how the LUNs
    # are joined.
    lun_layout: striped

    # Kit's choice: a note a blank line above a key stands beside no value.

    xfs: {su: 128k,
          sw: 8}  # kit's choice: a note on a flow mapping's last line
    description: >-
      Block text # kit's choice: this is text, not a comment
node_groups:
  - name: srv
    count: 2  # Kit's choices, the server count.
    hardware:
      drives:
        - {use: data, count: 12}
        - {use: os, count: 2}  # the seed's
  - name: cli
    count: 4  # "kit's choice" quoted is not a note
workloads:
  - id: ior
    steps:
      - args: -w -r  # seed
      # Kit's choice of flags: the PixStor line.
      - args: -w -e
        measures: [write]
"""


def test_notes_are_found_beside_their_fields() -> None:
    found = [(d.field, d.value, d.note) for d in deviations.from_text(LAB, "x.yaml")]
    assert found == [
        ("filesystem.mount", "/mnt/x", "kit's choice: the seed gives no mount point"),
        ("filesystem.nfs.lun_layout", "striped", "Kit's choice: the seed does not say how the LUNs are joined."),
        ("filesystem.nfs.xfs", {"su": "128k", "sw": 8}, "kit's choice: a note on a flow mapping's last line"),
        ("node_groups[srv].count", 2, "Kit's choices, the server count."),
        ("workloads[ior].steps[1].args", "-w -e", "Kit's choice of flags: the PixStor line."),
    ]


def test_every_note_of_every_shipped_lab_names_a_field_the_lab_has() -> None:
    for name in labs.lab_names():
        for dev in deviations.for_file(labs.lab_path(name)):
            assert dev.value is not None, f"{name}: {dev.field} ({dev.note[:40]}...) names no value"
            assert "kit" in dev.note.lower()


def test_a_lab_that_extends_another_keeps_its_notes_unless_it_sets_the_field(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("name: base\nnetwork:\n  subnet: 10.1.0.0/16  # kit's choice: no addressing\n"
                                        "filesystem:\n  mount: /mnt/b  # kit's choice: no mount\n")
    (tmp_path / "child.yaml").write_text("extends: base\nname: child\nfilesystem:\n  mount: /mnt/c\n")
    found = [(d.field, d.file) for d in deviations.for_file(tmp_path / "child.yaml", tmp_path)]
    assert found == [("network.subnet", "base.yaml")]


@pytest.fixture()
def pixstor_run(tmp_path: Path) -> runs.Run:
    """The dry-run fixture with the current pixstor-capex lab file beside it."""
    run_dir = tmp_path / "pixstor-capex" / "run"
    shutil.copytree(RUNS / "pixstor-capex-dry-run", run_dir)
    shutil.copy2(labs.lab_path("pixstor-capex"), run_dir / "lab.yaml")
    return runs.Run(run_dir)


def test_the_report_lists_the_labs_declared_departures(pixstor_run: runs.Run, tmp_path: Path) -> None:
    page = report.build(pixstor_run, tmp_path / "out").read_text()
    assert "<h2>Where the lab departs from its sources</h2>" in page
    section = page.split("<h2>Where the lab departs from its sources</h2>")[1].split("<h2>")[0]
    assert "<td><code>filesystem.gpfs.metadata_block_size</code></td><td><code>2M</code></td>" in section
    assert "only 2 MiB blocks" in section and "<td>lab.yaml</td>" in section
    assert "<td><code>network.subnet</code></td><td><code>10.10.0.0/16</code></td>" in section


def test_the_report_shows_what_the_run_recorded(pixstor_run: runs.Run, tmp_path: Path) -> None:
    # provenance.json keeps the notes as the run's lab file had them; a later lab file
    # does not change the report of an earlier run.
    prov = pixstor_run.path / "provenance.json"
    data = json.loads(prov.read_text())
    data["deviations"] = [{"field": "filesystem.gpfs.pagepool", "value": "8G", "note": "Kit's choice: a recorded note",
                           "file": "pixstor-capex.yaml"}]
    prov.write_text(json.dumps(data))
    page = report.build(runs.Run(pixstor_run.path), tmp_path / "out").read_text()
    assert "Kit&#x27;s choice: a recorded note" in page and "metadata_block_size" not in page.split("Where the lab departs")[1].split("<h2>")[0]


def test_the_report_shows_the_installed_release_beside_the_sources(tmp_path: Path) -> None:
    # A run of beegfs-small: the dry-run fixture's results (they do not matter here) under
    # beegfs-small's resolved lab and lab file.
    run_dir = tmp_path / "beegfs-small" / "run"
    shutil.copytree(RUNS / "pixstor-capex-dry-run", run_dir)
    (run_dir / "lab.json").write_text(json.dumps(labs.load("beegfs-small")))
    (run_dir / "references.yaml").unlink()
    shutil.copy2(labs.lab_path("beegfs-small"), run_dir / "lab.yaml")
    run = runs.Run(run_dir)
    installed = labs.release(run.lab)["installed"]
    assert installed and installed != "7.1.3"
    page = report.build(run, tmp_path / "out").read_text()
    assert (f"<tr><th>file system</th><td>beegfs: the kit installs {installed} (filesystem.beegfs.repo.version); "
            "the lab&#x27;s source ran 7.1.3 (filesystem.version)</td></tr>") in page
    # The note beside filesystem.version comes from the lab it extends.
    assert "<td><code>filesystem.version</code></td><td><code>7.1.3</code></td>" in page
    assert "<td>beegfs-medium.yaml</td>" in page


def test_pfslab_lab_deviations_prints_them_with_the_installed_release() -> None:
    import subprocess
    import sys

    out = subprocess.run([str(Path(sys.executable).with_name("pfslab")), "lab", "deviations", "beegfs-small"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    installed = labs.release(labs.load("beegfs-small"))["installed"]
    assert out[0] == (f"filesystem.beegfs.repo.version = {installed}: the release the nodes install "
                      "(filesystem.version, what the lab's source ran: 7.1.3)")
    assert out[1].startswith('filesystem.version = "7.1.3"  [beegfs-medium.yaml] Table 3. Kit\'s choice: ')


def test_pfslab_lab_deviations_prints_the_tool_versions_the_seed_step_and_a_release_the_kit_does_not_choose() -> None:
    import subprocess
    import sys

    def deviations_of(lab: str) -> list[str]:
        return subprocess.run([str(Path(sys.executable).with_name("pfslab")), "lab", "deviations", lab],
                              capture_output=True, text=True, check=True).stdout.splitlines()

    out = deviations_of("pixstor-capex")
    assert out[0] == ('filesystem.version = "5.0.4-2": what the lab\'s source ran; the nodes run the release their gpfs '
                      "packages bring (the distribution's or the user's installer, not the kit's to choose), which may differ")
    versions = [line for line in out if line.startswith("benchmark.toolchain (")]
    assert [line.split(" = ")[0] for line in versions] == [
        "benchmark.toolchain (fio)", "benchmark.toolchain (iozone)", "benchmark.toolchain (openmpi)"]
    assert versions[2].startswith('benchmark.toolchain (openmpi) = "4.1.8"  [spack/spack.yaml] the source ran openmpi 4.0.1; '
                                  "the lab's seed view (/opt/pfslab/view-seed) runs openmpi 4.1.8: ")
    # A reproduction runs the seed lab's workloads: the note is that file's.
    step = [line for line in deviations_of("azure-beegfs-medium") if line.startswith("workloads[ior-n1]")]
    assert len(step) == 1 and "  [beegfs-medium.yaml] {beegfs_striping} is the seed's" in step[0]
    assert "(the source's: -w -r -i 3 -d 3 -e -O beegfsNumTargets={beegfs_targets}" in step[0]
