"""A run on a lab with Slurm keeps its jobs' accounting records, named in provenance.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pfslab import accounting, labs


def jobcomp_line(job: int, state: str = "COMPLETED", node: str = "cli0") -> str:
    """A line as Slurm 22.05's jobcomp/filetxt writes it (scripts/roles/slurm, tests/bats/slurm_role.bats)."""
    return (f"JobId={job} UserId=bench(1001) GroupId=bench(1001) Name=rfm_IOR_{job:08x} JobState={state} "
            f"Partition=local_slurm TimeLimit=10 StartTime=2026-11-27T20:00:0{job % 10} EndTime=2026-11-27T20:01:00 "
            f"NodeList={node} NodeCnt=2 ProcCnt=4 WorkDir=/stage ReservationName= Tres=cpu=4,node=2,billing=4 "
            f"Account= QOS= WcKey= Cluster=local_slurm SubmitTime=2026-11-27T19:59:59 EligibleTime=2026-11-27T19:59:59 "
            f"DerivedExitCode=0:0 ExitCode=0:0")


def run_dir(tmp_path: Path, jobids: list[str | None], scheduler: str = "squeue") -> Path:
    run = tmp_path / "run"
    run.mkdir()
    cases = [{"name": f"IOR_{i}", "jobid": j, "scheduler": scheduler} for i, j in enumerate(jobids)]
    (run / "report.json").write_text(json.dumps({"runs": [{"testcases": cases}]}))
    (run / "provenance.json").write_text(json.dumps({"lab": "local-slurm", "git": {"commit": "abc"}}))
    return run


def slurm_conf(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "slurm.conf"
    path.write_text("# Written by pfslab\nClusterName=local_slurm\n" + "".join(f"{line}\n" for line in lines))
    return path


@pytest.fixture
def slurm_lab() -> dict[str, Any]:
    return labs.load("local-slurm")


def test_the_runs_lines_of_the_job_completion_log_are_kept_and_named_in_provenance(
    tmp_path: Path, slurm_lab: dict[str, Any],
) -> None:
    log = tmp_path / "jobcomp.log"
    # Other runs' jobs (12, 130) and a job id that only starts like one of ours (1300).
    log.write_text("\n".join([jobcomp_line(12), jobcomp_line(13), jobcomp_line(130), jobcomp_line(14, "FAILED", "cli1"),
                              jobcomp_line(1300)]) + "\n")
    conf = slurm_conf(tmp_path, "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/filetxt",
                      f"JobCompLoc={log}  # one line per finished job")
    run = run_dir(tmp_path, ["13", "14", "15", None])
    entry = accounting.collect(run, slurm_lab, conf, run=lambda argv: pytest.fail(f"no slurmdbd: {argv} ran"))
    kept = (run / accounting.FILE_NAME).read_text().splitlines()
    assert kept == [jobcomp_line(13), jobcomp_line(14, "FAILED", "cli1")]
    provenance = json.loads((run / "provenance.json").read_text())
    assert provenance["git"] == {"commit": "abc"}  # what was there stays
    assert provenance["slurm_accounting"] == entry == {
        "file": "slurm-accounting.txt", "source": f"jobcomp/filetxt {log}", "slurm_conf": str(conf),
        "jobs": ["13", "14", "15"], "missing": ["15"]}


def test_with_slurmdbd_the_records_are_sacct_s(tmp_path: Path, slurm_lab: dict[str, Any]) -> None:
    conf = slurm_conf(tmp_path, "AccountingStorageType=accounting_storage/slurmdbd", "JobCompType=jobcomp/none")
    calls: list[list[str]] = []
    out = ("JobID|JobName|User|Account|QOS|Partition|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NTasks|NodeList\n"
           "21|rfm_IOR|bench|acct-1|normal|batch|COMPLETED|0:0|t|t|t|00:01:00|2||cli[0-1]\n"
           "21.batch|batch||acct-1|||COMPLETED|0:0|t|t|t|00:01:00|1|1|cli0\n")

    def sacct(argv: list[str]) -> tuple[int, str, str]:
        calls.append(argv)
        return 0, out, ""

    entry = accounting.collect(run_dir(tmp_path, ["21", "22"]), slurm_lab, conf, run=sacct)
    assert calls == [["sacct", "-j", "21,22", "--parsable2", f"--format={accounting.SACCT_FIELDS}"]]
    assert (tmp_path / "run" / accounting.FILE_NAME).read_text() == out
    assert entry is not None and entry["source"] == "sacct" and entry["missing"] == ["22"]


def test_a_failed_sacct_falls_back_to_the_job_completion_log_and_says_why(tmp_path: Path, slurm_lab: dict[str, Any]) -> None:
    log = tmp_path / "jobcomp.log"
    log.write_text(jobcomp_line(31) + "\n")
    conf = slurm_conf(tmp_path, "AccountingStorageType=accounting_storage/slurmdbd", "JobCompType=jobcomp/filetxt",
                      f"JobCompLoc={log}")
    entry = accounting.collect(run_dir(tmp_path, ["31"]), slurm_lab, conf,
                               run=lambda argv: (1, "", "sacct: error: Problem talking to the database: Connection refused"))
    assert entry is not None and entry["source"] == f"jobcomp/filetxt {log}" and entry["missing"] == []
    assert entry["error"] == "sacct failed (exit 1): sacct: error: Problem talking to the database: Connection refused"


def test_without_any_record_keeper_nothing_is_written_and_the_reason_is_kept(tmp_path: Path, slurm_lab: dict[str, Any]) -> None:
    conf = slurm_conf(tmp_path, "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none")
    run = run_dir(tmp_path, ["41"])
    entry = accounting.collect(run, slurm_lab, conf)
    assert not (run / accounting.FILE_NAME).exists()
    assert entry is not None and entry["file"] is None and entry["missing"] == ["41"]
    assert entry["error"] == f"{conf} names neither slurmdbd accounting nor a jobcomp/filetxt log"


def test_a_lab_without_slurm_keeps_nothing(tmp_path: Path) -> None:
    run = run_dir(tmp_path, ["1"], scheduler="local")
    assert accounting.collect(run, labs.load("local"), tmp_path / "missing.conf") is None
    assert not (run / accounting.FILE_NAME).exists()
    assert "slurm_accounting" not in json.loads((run / "provenance.json").read_text())


def test_only_batch_jobs_count_as_the_runs_jobs(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    cases = [{"jobid": "7", "scheduler": "squeue"}, {"jobid": "4711", "scheduler": "local"},
             {"jobid": "8", "scheduler": "slurm"}, {"jobid": "7", "scheduler": "squeue"}]
    (run / "report.json").write_text(json.dumps({"runs": [{"testcases": cases[:2]}, {"testcases": cases[2:]}]}))
    assert accounting.job_ids(run) == ["7", "8"]  # a local job's id is a process id; a retried test's job counted once


def test_the_command_says_what_it_kept_and_fails_in_one_line_when_it_kept_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from pfslab import cli

    log = tmp_path / "jobcomp.log"
    log.write_text(jobcomp_line(51) + "\n")
    run = run_dir(tmp_path, ["51", "52"])
    monkeypatch.setenv("SLURM_CONF", str(slurm_conf(tmp_path, "JobCompType=jobcomp/filetxt", f"JobCompLoc={log}")))
    assert cli.main(["accounting", str(run), "local-slurm"]) == 0
    assert capsys.readouterr().out == f"slurm-accounting.txt: 2 job(s) from jobcomp/filetxt {log}; no record of job(s) 52\n"
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "nowhere.conf"))
    assert cli.main(["accounting", str(run), "local-slurm"]) == 2
    err = capsys.readouterr().err
    assert err == (f"pfslab accounting: no accounting records kept for 2 job(s): {tmp_path / 'nowhere.conf'} does not "
                   "exist; allowed: SLURM_CONF or --slurm-conf naming the cluster's slurm.conf\n")
