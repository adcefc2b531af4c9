"""The Slurm accounting records of a run's jobs, kept in its run directory.

A run on a lab with Slurm keeps what Slurm recorded of each of its jobs (user, nodes,
state, times, exit code) beside ReFrame's report: ``sacct`` where the cluster keeps
its accounting in slurmdbd, else the lines of Slurm's job-completion log
(``JobCompType=jobcomp/filetxt``, the kit's own Slurm: scripts/roles/slurm) whose JobId
is one of the run's jobs. The file is named in the run's ``provenance.json``.
"""

from __future__ import annotations

import json
import os
import time
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pfslab import scheduler

FILE_NAME = "slurm-accounting.txt"
#: Where Slurm's commands read their configuration when SLURM_CONF does not say.
DEFAULT_SLURM_CONF = Path("/etc/slurm/slurm.conf")
#: The fields of each job (and step) sacct prints, parsable (one record a line, '|' between).
SACCT_FIELDS = "JobID,JobName,User,Account,QOS,Partition,State,ExitCode,Submit,Start,End,Elapsed,NNodes,NTasks,NodeList"
_JOBCOMP_ID = re.compile(r"^JobId=(\d+)\s")

#: Runs sacct: (argv) -> (exit status, stdout, stderr); replaced in tests.
Runner = Callable[[list[str]], tuple[int, str, str]]


def _run(argv: list[str]) -> tuple[int, str, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 1, "", str(err)
    return done.returncode, done.stdout, done.stderr


def job_ids(run_dir: Path) -> list[str]:
    """The ids of the batch jobs of the run's tests (ReFrame's report), in report order."""
    report = json.loads((run_dir / "report.json").read_text())
    ids = [str(case["jobid"]) for run in report.get("runs", []) for case in run.get("testcases", [])
           if case.get("jobid") and case.get("scheduler") in ("slurm", "squeue")]
    return list(dict.fromkeys(ids))


def slurm_conf(path: Path) -> dict[str, str]:
    """The settings of a slurm.conf (keys as written; Slurm ignores their case)."""
    settings: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        key, sep, value = line.partition("=")
        if sep and " " not in key:
            settings[key.strip().lower()] = value.strip()
    return settings


#: Half-seconds to wait for the job-completion lines of the run's last jobs.
JOBCOMP_WAIT_TRIES = 20


def _jobcomp_ids(lines: list[str]) -> set[str]:
    return {m.group(1) for line in lines if (m := _JOBCOMP_ID.match(line))}


def jobcomp_records(log: Path, ids: list[str]) -> list[str]:
    """The job-completion log's lines of the given jobs (a job requeued has several)."""
    wanted = set(ids)
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    return [line for line in lines if (m := _JOBCOMP_ID.match(line)) and m.group(1) in wanted]


def collect(run_dir: Path, lab: dict[str, Any], conf_path: Path | None = None, run: Runner = _run) -> dict[str, Any] | None:
    """Write the run's accounting records to ``FILE_NAME`` and name them in provenance.json.

    None for a lab without Slurm. Returns what provenance.json records: where the
    records came from, the run's jobs and those Slurm had no record of.
    """
    if scheduler.kind(lab) != "slurm":
        return None
    ids = job_ids(run_dir)
    conf_path = conf_path or Path(os.environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF)
    conf = slurm_conf(conf_path) if conf_path.is_file() else {}
    text, source, found = "", "", set[str]()
    why = ""
    if ids and "slurmdbd" in conf.get("accountingstoragetype", ""):
        status, out, err = run(["sacct", "-j", ",".join(ids), "--parsable2", f"--format={SACCT_FIELDS}"])
        if status == 0:
            text, source = out, "sacct"
            found = {line.split("|", 1)[0].split(".", 1)[0] for line in out.splitlines()[1:]}
        else:
            why = f"sacct failed (exit {status}): {err.strip().splitlines()[-1] if err.strip() else 'no message'}"
    if not source:
        log = conf.get("jobcomploc", "")
        if conf.get("jobcomptype") == "jobcomp/filetxt" and log:
            lines = jobcomp_records(Path(log), ids)
            found = _jobcomp_ids(lines)
            # slurmctld appends a job's line shortly after the job ends: wait a little
            # for the last ones rather than call them missing.
            for _ in range(JOBCOMP_WAIT_TRIES):
                if found >= set(ids):
                    break
                time.sleep(0.5)
                lines = jobcomp_records(Path(log), ids)
                found = _jobcomp_ids(lines)
            text, source = "".join(f"{line}\n" for line in lines), f"jobcomp/filetxt {log}"
        else:
            why = why or (f"{conf_path} names neither slurmdbd accounting nor a jobcomp/filetxt log" if conf
                          else f"{conf_path} does not exist; allowed: SLURM_CONF or --slurm-conf naming the cluster's slurm.conf")
    entry: dict[str, Any] = {"file": FILE_NAME if source else None, "source": source or None, "slurm_conf": str(conf_path),
                             "jobs": ids, "missing": [i for i in ids if i not in found]}
    if why:
        entry["error"] = why
    if source:
        (run_dir / FILE_NAME).write_text(text)
    provenance = run_dir / "provenance.json"
    data: dict[str, Any] = json.loads(provenance.read_text()) if provenance.is_file() else {}
    data["slurm_accounting"] = entry
    provenance.write_text(json.dumps(data, indent=2) + "\n")
    return entry
