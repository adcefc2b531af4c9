"""The artefact comparison (pfslab/dev/artefact_compare.py) on small folders: what two
renderings of one commit differ in is normalised away, a real difference and a file on
one side only are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfslab.dev import artefact_compare, artefacts


def rendered(folder: Path, checkout: str, files: dict[str, str]) -> Path:
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"checkout": checkout, "out": str(folder)}))
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


JOB = ("export PFSLAB_ROOT={root}\n"
       "pfslab_step 1 {root}/build/runs/aws-nfs/{run}/stage/x/step1.out 'ior -o {out}/scratch/ior-n1-t4-{rand}'\n"
       "# session {uuid}, expiry {expiry}, scratch {tmp}\n")


def job(root: str, out: str, run: str, uuid: str, expiry: str, tmp: str) -> str:
    return JOB.format(root=root, out=out, run=run, uuid=uuid, expiry=expiry, tmp=tmp, rand=uuid[-8:])


def test_two_renderings_of_one_commit_are_identical(tmp_path: Path) -> None:
    old = rendered(tmp_path / "old", "/work/wt-base", {
        "dry-run/aws-nfs/rfm_job.sh": job("/work/wt-base", str(tmp_path / "old"), "20261128T070051Z-dry",
                                          "7869b672-bc1f-84ec-16a6-de012927a7a2", "2026-11-29T07:00:51Z", "/tmp/tmp.AbCdE12345"),
        "dry-run/aws-nfs/.rfm_testcase.json": json.dumps({"tags": ["seed", "quick", "ior"], "x": 1}),
        "plans/aws-nfs/aws/plan/tags.json": '{"lab": "aws-nfs"}\n',
    })
    new = rendered(tmp_path / "new", "/work/wt-golden", {
        "dry-run/aws-nfs/rfm_job.sh": job("/work/wt-golden", str(tmp_path / "new"), "20261201T235959Z+-dry",
                                          "00000000-1111-2222-3333-444444444444", "2026-12-02T23:59:59.5+01:00",
                                          "/tmp/tmp.ZyXwV98765"),
        "dry-run/aws-nfs/.rfm_testcase.json": json.dumps({"tags": ["ior", "seed", "quick"], "x": 1}),
        "plans/aws-nfs/aws/plan/tags.json": '{"lab": "aws-nfs"}\n',
    })
    result = artefact_compare.compare(old, new)
    assert result.clean, artefact_compare.report(result)
    assert (result.compared, len(result.raw_identical), len(result.normalised_identical)) == (3, 1, 2)
    assert result.summary().startswith("3 files compared: 3 identical (1 byte for byte, 2 after normalising)")


def test_a_real_difference_and_one_sided_files_are_reported(tmp_path: Path) -> None:
    old = rendered(tmp_path / "old", "/a", {
        "dry-run/l/rfm_job.sh": "export PFSLAB_ROOT=/a\nsrun -n 8 ior -t 1m\n",
        "user-data/l/aws/refused.txt": "exit status 1\n[render] no hosts\n",
        "plans/l/aws/plan/tags.json": "{}\n",
    })
    new = rendered(tmp_path / "new", "/b", {
        "dry-run/l/rfm_job.sh": "export PFSLAB_ROOT=/b\nsrun -n 16 ior -t 1m\n",
        "user-data/l/site/refused.txt": "exit status 1\n",
        "plans/l/aws/plan/tags.json": "{}\n",
    })
    result = artefact_compare.compare(old, new)
    assert not result.clean
    assert list(result.differing) == ["dry-run/l/rfm_job.sh"]
    diff = result.differing["dry-run/l/rfm_job.sh"]
    assert "-srun -n 8 ior -t 1m" in diff and "+srun -n 16 ior -t 1m" in diff
    assert "PFSLAB_ROOT" not in diff.replace("export PFSLAB_ROOT=<CHECKOUT>", "")  # the path line is the same
    assert (result.only_old, result.only_new) == (["user-data/l/aws/refused.txt"], ["user-data/l/site/refused.txt"])
    text = artefact_compare.report(result)
    assert "only in old: user-data/l/aws/refused.txt" in text
    assert "dry-run: 0 identical, 1 differing, 0 only old, 0 only new" in text
    assert text.rstrip().endswith("2 files compared: 1 identical (1 byte for byte, 0 after normalising), "
                                  "1 differing; 1 only in old, 1 only in new")


def test_normalising_replaces_nothing_but_its_patterns() -> None:
    norm = artefact_compare.Normaliser((("/work/kit+1/build/golden/new", "<OUT>"), ("/work/kit+1", "<CHECKOUT>")))
    text = ("/work/kit+1/scripts /work/kit+1/build/golden/new/x 20261128T070051Z 2026-11-28T07:00:51Z "
            "scratch iozone-seq-t8-e993bd66 ior-t8-e993bd6 deployment 0123456789abcdef 2026-11-28 tmp.short")
    assert norm.text("rfm_job.sh", text) == (
        "<CHECKOUT>/scripts <OUT>/x <TIME> <TIME> scratch iozone-seq-t8-<RAND> ior-t8-e993bd6 deployment 0123456789abcdef "
        "2026-11-28 tmp.short")


def test_the_command_line_exits_1_on_a_difference_and_0_when_clean(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    old = rendered(tmp_path / "old", "/a", {"f": "x /a\n"})
    same = rendered(tmp_path / "same", "/b", {"f": "x /b\n"})
    other = rendered(tmp_path / "other", "/b", {"f": "y /b\n"})
    assert artefacts.main(["compare", str(old), str(same)]) == 0
    assert artefacts.main(["compare", str(old), str(other)]) == 1
    assert "+y <CHECKOUT>" in capsys.readouterr().out
    assert artefacts.main(["compare", str(old), str(tmp_path / "missing")]) == 2
    assert f"{tmp_path / 'missing'} is not a folder of rendered artefacts" in capsys.readouterr().err


def test_render_refuses_a_folder_that_is_no_checkout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert artefacts.main(["render", "--checkout", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert ".venv/bin/pfslab is missing" in capsys.readouterr().err
    assert artefacts.main(["render", "--checkout", str(tmp_path), "--out", str(tmp_path / "o"), "--parts", "plans,x"]) == 2
    assert "--parts plans,x: allowed are dry-run, user-data, plans" in capsys.readouterr().err


def test_dry_run_cases_are_paired_by_their_description_not_their_folder(tmp_path: Path) -> None:
    def case(folder: str, cls: str) -> dict[str, str]:
        stage = f"dry-run/aws-nfs/aws-nfs/clients/pfslab/{folder}"
        return {f"{stage}/.rfm_testcase.json": json.dumps({"descr": "IOzone seq on aws-nfs, 8 threads", "cls": cls}),
                f"{stage}/rfm_job.sh": f"iozone -+m /kit/build/runs/aws-nfs/20261128T070051Z-dry/stage/{folder}/threadlist.8\n"}

    old = rendered(tmp_path / "old", "/kit", case("IOzone_19fad74c", "IOzone"))
    new = rendered(tmp_path / "new", "/kit", case("IOzone_iozone_seq_921f418c", "IOzone"))
    result = artefact_compare.compare(old, new)
    assert result.clean, artefact_compare.report(result)
    assert result.normalised_identical == ["dry-run/aws-nfs/[IOzone seq on aws-nfs, 8 threads]/rfm_job.sh"]
    renamed = rendered(tmp_path / "renamed", "/kit", case("IOzone_iozone_seq_921f418c", "IOzone_iozone_seq"))
    assert list(artefact_compare.compare(old, renamed).differing) == [
        "dry-run/aws-nfs/[IOzone seq on aws-nfs, 8 threads]/.rfm_testcase.json"]
