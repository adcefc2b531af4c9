"""``pfslab smoke``: run every job of the labs at tiny scale on this machine (``make smoke``).

The plan of each job's lines is pfslab/smoke.py's. Here each job runs its scaled steps in
order (a later step reads what an earlier one wrote) in a scratch directory made for the
smoke and removed afterwards, with the binary of the version the lab runs: IOR and mdtest
from the lab's toolchain view or `make tools`' view of the same name (build/tools/view,
view-seed), never another version from PATH; the other tools from the lab's search path
(pfslab/rfm_paths.py; Debian's fio and IOzone here, whose versions the report names).
Jobs whose scaled lines are the same (most sweep points of a workload) run once.

A job fails when a table rejects its exact line, when a step exits non-zero, when a
step's output is one the kit's parser refuses or lacks a figure the job measures, or
when IOR/mdtest report another version than the lab's. A job whose tool is not here is
skipped (its lines are still table-checked), one line saying why. Exit status: 1 on a
failure, when nothing ran at all, or when a tool named in ``--require`` was missing.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, labs, state, toolchain
from pfslab.launcher import LAUNCHER_FILE
from pfslab.results import ParseError
from pfslab.rfm_paths import BUILT_TOOLS, tool_search_path
from pfslab.smoke import StepPlan, plan_lab
from pfslab.tools import TOOLS, executable, parse_text

REPORT_DIR = KIT_ROOT / "build" / "smoke"
#: The longest one scaled step may take, unless its tool's module says otherwise
#: (SMOKE_STEP_TIMEOUT: IO500, whose phases run for a time each, then read what they wrote).
STEP_TIMEOUT = 45


def step_timeout(tool: str) -> int:
    """How long a scaled step of TOOL may run before it counts as hung."""
    return int(getattr(TOOLS.get(tool), "SMOKE_STEP_TIMEOUT", STEP_TIMEOUT))
#: Tools the kit must run in the exact version of the lab's view (others: what is here).
PINNED = frozenset({"ior", "mdtest"})


def root_env() -> dict[str, str]:
    """Open MPI refuses root without these: the ones registry/launcher.json gives remote labs."""
    spec: dict[str, Any] = json.loads(LAUNCHER_FILE.read_text())["remote"]["env"]
    return {k: str(v) for k, v in spec.items() if k.startswith("OMPI_ALLOW_RUN_AS_ROOT")}
#: IOzone's -+m children are started with $RSH <host> <command>: here, on this machine.
LOCAL_RSH = ('#!/bin/sh\n# pfslab smoke: IOzone children on this machine (IOzone runs: $RSH HOST -n COMMAND)\n'
             'while [ "${1#-}" != "$1" ]; do shift; done\nshift\n'
             'while [ "${1#-}" != "$1" ]; do shift; done\nexec sh -c "$*"\n')


@dataclass
class Job:
    lab: str
    workload: str
    job: str
    tool: str
    steps: list[StepPlan]
    status: str = ""  # passed, failed, skipped
    reasons: list[str] = field(default_factory=list)
    run_failures: list[str] = field(default_factory=list)  # what running it showed (shared by its twins)
    ran_as: str = ""
    retried: list[int] = field(default_factory=list)  # steps run a second time after a timeout  # the job whose identical scaled run this one shares
    tool_path: str | None = None
    seconds: float = 0.0


def find_tool(lab: dict[str, Any], tool: str) -> tuple[str | None, str]:
    """(path, why not) of the binary the lab's job runs here."""
    exe = executable(tool)
    if tool in PINNED:
        view = toolchain.view_of(lab)
        root = toolchain.root(view)
        dirs = [p for p in os.environ.get("PFSLAB_TOOL_PATH", "").split(":") if p]
        dirs += [f"{root}/bin", str(BUILT_TOOLS / Path(root).name / "bin")]
        found = shutil.which(exe, path=":".join(dirs))
        version = toolchain.tool_version(lab, tool)
        why = (f"{exe} of IOR {version} (the lab's {view} view) is not built: "
               f"'make tools' (or 'make toolchain') builds it into {BUILT_TOOLS / Path(root).name}/bin")
        return found, ("" if found else why)
    found = shutil.which(exe, path=tool_search_path(lab))
    return found, ("" if found else f"{exe} is not installed (not in the lab's toolchain view, build/tools or PATH)")


def _signature(job: Job) -> str:
    """What a job runs, but for the names of its hostfiles and thread lists (they carry
    the sweep point: hosts.4 and hosts.2 both hold two ranks of this machine)."""
    text = json.dumps([[s.run, sorted(s.files.items())] for s in job.steps])
    return re.sub(r"\b(hosts|nodes|threadlist)\.[0-9x]+", r"\1.N", text)


def _same_but_count(job: Job) -> str:
    """The signature without rank and thread counts: the sweep points of a workload that
    differ only in them run once, at the most ranks (the jobs are run largest first)."""
    text = re.sub(r"(-np|-n|-t) [0-9]+", r"\1 N", _signature(job))
    text = re.sub(r"slots=[0-9]+|\$\(\( [0-9]+ / [0-9]+ \+ \(r < [0-9]+ % [0-9]+\) \)\)", "N", text)
    # An IOzone thread list: one line per thread, all alike here.
    return re.sub(r'"threadlist\.N", "([^"\\]*)(\\n\1)*\\n"', r'"threadlist.N", "\1"', text)


def _fresh(root: Path) -> tuple[Path, Path]:
    work, scratch = root / "work", root / "scratch"
    for d in (work, scratch):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    return work, scratch


def _outputs(step: StepPlan, work: Path, n: int) -> list[str]:
    if "*" in step.output:
        return sorted(glob.glob(step.output))
    return [step.output]


def _run_step(step: StepPlan, log: str, work: Path, env: dict[str, str]) -> int | None:
    """The step's exit status, or None when it ran over its tool's limit (then it is killed)."""
    with open(log, "w") as out:
        # Its own session: on a timeout the whole group goes (IOzone's children, mpirun's ranks).
        proc = subprocess.Popen(["bash", "-c", step.run], stdout=out, stderr=subprocess.STDOUT, cwd=work,
                                env=env, start_new_session=True)
        try:
            return proc.wait(timeout=step_timeout(step.tool))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None


def run_job(job: Job, root: Path, env: dict[str, str]) -> list[str]:
    """Run the job's scaled steps in order; the reasons it fails (empty: it passed)."""
    work, _scratch = _fresh(root)
    for step in job.steps:
        for name, content in step.files.items():
            (work / name).write_text(content)
    for step in job.steps:
        log = step.output if "*" not in step.output else str(work / f"step{step.step}.launcher.out")
        rc = _run_step(step, log, work, env)
        if rc is None:
            # IOzone's cluster mode now and then hangs setting up its sockets here; a
            # second try tells that from a line that never ends.
            job.retried.append(step.step)
            rc = _run_step(step, log, work, env)
        if rc is None:
            return [f"step {step.step} ran over {step_timeout(step.tool)} s twice: {step.exact}"]
        if rc != 0:
            tail = Path(log).read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            return [f"step {step.step} exited {rc} ({tail[0].strip()[:160]}): {step.exact}"]
        if step.prepare:
            continue
        files = _outputs(step, work, step.step)
        if not files:
            return [f"step {step.step} wrote no output ({step.output}): {step.exact}"]
        for path in files:
            try:
                parsed = parse_text(job.tool, Path(path).read_text(errors="replace"))
            except (OSError, ParseError) as err:
                return [f"step {step.step}: the kit's {job.tool} parser cannot read its output ({err}): {step.exact}"]
            missing = [m for m in step.measures if m not in parsed.operations]
            if missing:
                return [f"step {step.step}: its output has no {', '.join(missing)} figure: {step.exact}"]
            if job.tool in PINNED and parsed.version and step.version and step.version not in parsed.version:
                return [f"step {step.step} ran {job.tool} {parsed.version}; the lab runs {step.version}: {step.exact}"]
    return []


def jobs_of(plans: list[StepPlan]) -> list[Job]:
    jobs: dict[tuple[str, str, str], Job] = {}
    for p in plans:
        key = (p.lab, p.workload, p.job)
        jobs.setdefault(key, Job(p.lab, p.workload, p.job, p.tool, [])).steps.append(p)
    return list(jobs.values())


#: Jobs run in two lanes side by side: IOzone's (its cluster mode listens on fixed ports,
#: so one at a time, and mostly waits) and every other tool's.
LANES = ("iozone", "other")


def _lane(tool: str) -> str:
    return "iozone" if tool == "iozone" else "other"


def smoke(names: list[str], root: Path, log: Any = print) -> list[Job]:
    """Plan and run every job of the labs ``names`` under ``root`` (which must be empty)."""
    env = {**os.environ, **root_env(), "RSH": str(root / "rsh")}
    (root / "rsh").write_text(LOCAL_RSH)
    (root / "rsh").chmod(0o755)
    jobs: list[Job] = []
    for name in names:
        lab = state.lab(name)
        tools = {t: find_tool(lab, t) for t in {w["tool"] for w in _all_workloads(lab)}}
        paths = {t: path for t, (path, _) in tools.items() if path}
        planned = [job for lane in LANES
                   for job in jobs_of(plan_lab(name, str(root / lane / "work"), str(root / lane / "scratch"), paths))
                   if _lane(job.tool) == lane]
        for job in sorted(planned, key=lambda j: -max(s.ranks for s in j.steps)):
            path, why = tools[job.tool]
            job.tool_path = path
            job.reasons = [f"step {s.step}: {p}: {s.exact}" for s in job.steps for p in s.problems]
            if path is None:
                job.status = "failed" if job.reasons else "skipped"
                job.reasons.append(why)
            jobs.append(job)
    runs: dict[str, Job] = {}
    for job in jobs:
        if job.tool_path is not None:
            runs.setdefault(_same_but_count(job), job)

    def run_lane(lane: str) -> None:
        for job in runs.values():
            if _lane(job.tool) == lane:
                started = time.monotonic()
                job.run_failures = run_job(job, root / lane, env)
                job.seconds = time.monotonic() - started
                log(f"ran {job.lab} {job.workload} {job.job}: {'failed' if job.run_failures else 'ok'} "
                    f"({job.seconds:.1f} s)")
        _cleanup(root / lane)

    with ThreadPoolExecutor(len(LANES)) as pool:
        list(pool.map(run_lane, LANES))
    for job in jobs:
        if job.tool_path is not None:
            twin = runs[_same_but_count(job)]
            if twin is not job:
                job.ran_as = f"{twin.lab}/{twin.workload}/{twin.job}"
                job.run_failures = twin.run_failures
            job.reasons += job.run_failures
            job.status = "failed" if job.reasons else "passed"
        if job.status == "failed":
            for reason in job.reasons:
                log(f"FAIL {job.lab} {job.workload} {job.job} {reason}")
    return jobs


def _all_workloads(lab: dict[str, Any]) -> list[dict[str, Any]]:
    own: list[dict[str, Any]] = list(lab.get("workloads", []))
    return own + [w for imported in lab.get("imports", []) for w in labs.load(imported).get("workloads", [])]


def _cleanup(root: Path) -> None:
    for d in ("work", "scratch"):
        shutil.rmtree(root / d, ignore_errors=True)


def summary(jobs: list[Job]) -> list[dict[str, Any]]:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for job in jobs:
        row = rows.setdefault((job.lab, job.workload), {
            "lab": job.lab, "workload": job.workload, "tool": job.tool, "jobs": 0, "run": 0, "passed": 0,
            "failed": 0, "table_checked": 0, "skipped": 0, "table_options": set()})
        row["jobs"] += 1
        row["run"] += job.status != "skipped" and job.tool_path is not None
        row[job.status] += 1
        options = {o for s in job.steps for o in s.table_checked}
        row["table_checked"] += bool(options)
        row["table_options"] |= options
    return [{**r, "table_options": sorted(r["table_options"])} for _, r in sorted(rows.items())]


def print_summary(rows: list[dict[str, Any]], jobs: list[Job], seconds: float) -> None:
    print(f"{'lab':22} {'workload':34} {'jobs':>5} {'run':>5} {'passed':>6} {'failed':>6} {'table':>6} {'skipped':>7}")
    for r in rows:
        print(f"{r['lab']:22} {r['workload']:34} {r['jobs']:5} {r['run']:5} {r['passed']:6} {r['failed']:6} "
              f"{r['table_checked']:6} {r['skipped']:7}")
    checked = sorted({o for r in rows for o in r["table_options"]})
    if checked:
        print("checked against the option tables instead of run (hardware absent here): " + "; ".join(checked))
    for tool in sorted({j.tool for j in jobs if j.tool not in PINNED and j.tool_path}):
        # Not pinned to the lab's view: say what ran against what the labs' views hold.
        views = sorted({s.version or "none" for j in jobs if j.tool == tool for s in j.steps})
        paths = sorted({str(j.tool_path) for j in jobs if j.tool == tool and j.tool_path})
        print(f"{tool}: ran {', '.join(paths)}; the labs' toolchain views run {', '.join(views)}")
    for reason in sorted({j.reasons[-1] for j in jobs if j.status == "skipped"}):
        print(f"SKIPPED: {reason}")
    executed = sum(1 for j in jobs if j.status != "skipped" and not j.ran_as)
    failed = sum(1 for j in jobs if j.status == "failed")
    print(f"smoke: {len(jobs)} jobs, {executed} distinct scaled jobs executed, {failed} failed, "
          f"{sum(1 for j in jobs if j.status == 'skipped')} skipped, {seconds:.0f} s")


def main(args: argparse.Namespace) -> int:
    names = args.labs or labs.lab_names()
    for name in names:
        labs.lab_path(name)  # an unknown lab: one line naming it and the labs there are
    required = {t for t in (args.require or "").split(",") if t}
    parent = args.scratch or os.environ.get("SCRATCH") or None
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="pfslab-smoke.", dir=parent))
    try:
        jobs = smoke(names, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    seconds = time.monotonic() - started
    rows = summary(jobs)
    print_summary(rows, jobs, seconds)
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    report = REPORT_DIR / f"smoke-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    report.write_text(json.dumps({"labs": names, "seconds": round(seconds, 1), "summary": rows,
                                  "jobs": [asdict(j) for j in jobs]}, indent=1) + "\n")
    print(f"smoke: report {report.relative_to(KIT_ROOT) if report.is_relative_to(KIT_ROOT) else report}")
    status = 0
    if any(j.status == "failed" for j in jobs):
        status = 1
    if not any(j.status == "passed" for j in jobs):
        print("smoke: no job ran; nothing is proven")
        status = 1
    missing = sorted({j.tool for j in jobs if j.status == "skipped" and j.tool in required})
    if missing:
        print(f"smoke: --require {','.join(sorted(required))}: {', '.join(missing)} not here; the smoke does not pass")
        status = 1
    return status
