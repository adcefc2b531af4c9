"""A run of the lab's suite where it is launched (the local lab, a remote lab's login node,
a site lab's submit node): one process of the kit's CLI and one of ReFrame.

``pfslab bench`` (scripts/bench; pfslab/lifecycle/bench_launch.py) decides where a run
goes (a remote lab's login node, a detached site run), takes the lab's lock on a
descriptor of this process and runs it here: the process id is the one the lock names and
the one the watchdog watches. Everything the run needs besides ReFrame (its directory, provenance, the
pre-run check, the progress lines, the accounting records, the verdict) is done in this
process (the watchdog in a child forked from it), so a run starts ReFrame once and the CLI once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from pfslab.errors import KitError

#: A run that judged nothing must not pass a CI gate that reads the exit status alone.
VERDICT_EXIT = {"pass": 0, "fail": 1, "no verdict": 3}

Say = Callable[[str], None]


def say(line: str) -> None:
    print(f"[bench] {line}", file=sys.stderr, flush=True)


def expand_demo(lab: dict[str, Any], args: Sequence[str]) -> list[str]:
    """The arguments with ``--demo`` replaced by one ``-n`` per demo case of the lab."""
    from pfslab import workloads

    out: list[str] = []
    for arg in args:
        if arg != "--demo":
            out.append(arg)
            continue
        try:
            out.extend(workloads.demo_filters(lab))
        except workloads.WorkloadError as err:
            raise KitError(str(err)) from None
    return out


def run_directory(lab: str, given: str | None) -> Path:
    """The run's directory: the one a detached run's launcher made, or a new one."""
    from pfslab import state

    if given:
        path = Path(given)
        runs = state.RUNS_DIR / lab
        if not path.is_dir() or path.resolve().parent != runs.resolve():
            raise KitError(f"run directory {given} is not a run directory of lab {lab} ({runs}/<run>)")
        return path
    try:
        return state.new_run_dir(lab, "", os.environ.get("PFSLAB_RUN_NAME") or None)
    except ValueError as error:
        raise KitError(str(error)) from None
    except FileExistsError:
        raise KitError(f"run directory {os.environ.get('PFSLAB_RUN_NAME')} of lab {lab} exists already") from None


def pre_run_check(lab: str, run_dir: Path) -> None:
    """A lab judged by its calibration repeats its quick probes first: one far below its
    own calibration is recorded unhealthy, so every test skips at once with that reason
    instead of crawling for hours to the same verdict (PFSLAB_NO_PRECHECK=1: run anyway)."""
    from pfslab import calibration

    if os.environ.get("PFSLAB_NO_PRECHECK") or not calibration.path_for(lab).is_file():
        return
    record_pre_run_check(lab, run_dir)


def record_pre_run_check(lab: str, run_dir: Path) -> str | None:
    """The quick probes against the lab's calibration; a lab below its floors is recorded
    unhealthy in the run directory. The problem, or None."""
    import time

    from pfslab import calibration
    from pfslab.runs import HEALTH_FILE

    problem = calibration.check(lab, say=say)
    if problem is None:
        return None
    (run_dir / HEALTH_FILE).write_text(json.dumps(
        {"state": "unhealthy", "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "detail": problem}) + "\n")
    say(f"lab {lab} fails its pre-run check: {problem}")
    return problem


class Watchdog:
    """The run's health watchdog (pfslab/lifecycle/watchdog.py) in a child forked from this
    process, so a run starts the kit's CLI once: its lines go to the terminal and to the
    run's watchdog.log; stopped when the run is over, after it finished what it was doing
    (ending the processes of a run whose lab failed)."""

    def __init__(self, lab: str, run_dir: Path) -> None:
        interval = os.environ.get("PFSLAB_WATCHDOG_INTERVAL", "10")
        watched = os.getpid()
        read_end, write_end = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; its behaviour is watchdog.py's, tested there
            os.close(read_end)
            _watchdog_child(lab, run_dir, watched, interval, write_end)
        os.close(write_end)
        self.pid = pid
        self.stream = os.fdopen(read_end, "rb")
        self.copier = threading.Thread(target=self._copy, args=(run_dir / "watchdog.log",), daemon=True)
        self.copier.start()

    def _copy(self, log: Path) -> None:
        with open(log, "ab") as keep:
            for line in self.stream:
                keep.write(line)
                keep.flush()
                sys.stderr.buffer.write(line)
                sys.stderr.flush()

    def stop(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        self.copier.join(timeout=5)


def _watchdog_child(lab: str, run_dir: Path, watched: int, interval: str, stderr_fd: int) -> NoReturn:
    """The forked watchdog: never returns into the run's code (its finally clauses are the
    parent's), whatever happens."""
    rc = 2
    try:
        # Ctrl-C is for ReFrame; the watchdog ends when the run tells it to (TERM).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(stderr_fd, 2)
        # Nothing else of the run's: above all not the lab's lock (a descriptor
        # pfslab/lifecycle/lablock.py took), which a watchdog outliving a killed run would hold.
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        # The parent's sys.stderr may not be descriptor 2 (a test's capture): the
        # watchdog's lines must reach the pipe.
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - lives as long as the child
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        from pfslab import lifecycle
        from pfslab.lifecycle.watchdog import watchdog

        try:
            rc = watchdog([lab, str(run_dir), str(watched), interval])
        except lifecycle.Refusal as err:
            rc = lifecycle.refuse("watchdog", err)
    except BaseException:  # noqa: BLE001 - whatever it was, said, and the child ends here
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)


def check_serving(lab: str) -> None:
    """A local lab must be healthy before a run starts (make lab-status shows why not); a
    remote lab's nodes are checked by the pre-run check and the watchdog instead."""
    from pfslab.lifecycle import build_dir, inventory_at, status

    inventory = inventory_at(build_dir() / lab / "inventory.json")
    if inventory.registry_target().namespaces and status.status(lab, show=False) != 0:
        raise KitError(f"lab {lab} is not healthy; 'make lab-status' shows why and 'make lab-up' repairs it")


def run_reframe(kit: Path, lab: str, run_dir: Path, args: Sequence[str]) -> tuple[int, int]:
    """ReFrame's run, its output kept in reframe.out with a line per test on the terminal;
    its exit status and how many test cases it announced.

    junit.xml and the results database come from the generated configuration
    (pfslab/rfmconfig.py). Ctrl-C is ReFrame's to act on (it cancels its jobs and says
    so): this process ignores it and reads on to ReFrame's last line.
    """
    from pfslab import progress

    env = dict(os.environ, PFSLAB_RUN_DIR=str(run_dir), PFSLAB_LAB=lab,
               RFM_CONFIG_FILES=str(kit / "reframe" / "config" / "settings.py"))
    reframe = kit / ".venv" / "bin" / "reframe"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.getsignal(signal.SIGTERM)
    try:
        child = subprocess.Popen(
            [str(reframe), "-c", str(kit / "reframe") + "/", "-r", "--exec-policy=serial", "--nocolor", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        # A TERM of this run (a follower, a supervisor) is ReFrame's to act on too: it
        # cancels its jobs and reports, and this process reads on to its end.
        signal.signal(signal.SIGTERM, lambda _signum, _frame: child.send_signal(signal.SIGTERM))
        assert child.stdout is not None
        keep: IO[str]
        with open(run_dir / "reframe.out", "a") as keep:
            seen = progress.follow(child.stdout.fileno(), keep, say)
        return child.wait(), seen.total
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)


def record_session(run_dir: Path, report: dict[str, object]) -> None:
    """The run's ReFrame session, by which `make compare` reads the run back from
    ReFrame's results database (pfslab/sessions.py)."""
    info = report.get("session_info")
    uuid = info.get("uuid") if isinstance(info, dict) else None
    provenance = run_dir / "provenance.json"
    if not uuid or not provenance.is_file():
        return
    data = json.loads(provenance.read_text())
    data["reframe_session"] = uuid
    provenance.write_text(json.dumps(data, indent=2) + "\n")
    out = run_dir / "reframe.out"
    if out.is_file() and f"Current session stored with UUID: {uuid}" in out.read_text(errors="replace"):
        say(f"stored in ReFrame's results database as session {uuid}")
    else:
        say(f"ReFrame did not store session {uuid} (see {out}); make compare reads this run from its report.json")


def testcase_count(report: dict[str, object]) -> int:
    runs = report.get("runs")
    if not isinstance(runs, list):
        return 0
    return sum(len(r.get("testcases") or []) for r in runs if isinstance(r, dict))


def keep_accounting(run_dir: Path, lab: str) -> None:
    """A lab with Slurm: what Slurm recorded of the run's jobs (sacct, or its job-completion
    log), kept with the run; a run whose records cannot be read still gets its verdict."""
    from pfslab import accounting, state

    try:
        entry = accounting.collect(run_dir, state.lab(lab), None)
    except KitError as err:
        say(f"the Slurm accounting records of the run's jobs were not kept: {err}")
        return
    if entry is None:
        return
    if entry["source"] is None:
        say(f"the Slurm accounting records of the run's jobs were not kept: no accounting records kept for "
            f"{len(entry['jobs'])} job(s): {entry['error']}")
        return
    missing = f"; no record of job(s) {', '.join(entry['missing'])}" if entry["missing"] else ""
    print(f"{accounting.FILE_NAME}: {len(entry['jobs'])} job(s) from {entry['source']}{missing}", file=sys.stderr)


def judged(run_dir: Path) -> tuple[dict[str, Any], str]:
    """A run's verdict: what verdict.json holds, and the table."""
    from pfslab import runs
    from pfslab import verdict as judge

    run = runs.resolve(str(run_dir))
    rows = run.rows()
    summary = judge.summary(rows, run.lab_state)
    notes: list[str] = []
    if run.calibration is not None and any(r.basis.startswith("calibrated") for r in rows):
        from pfslab import calibration

        notes = calibration.summary_lines(run.calibration)
    return ({"rows": [r.as_dict() for r in rows], "summary": summary, "lab_state": run.lab_state,
             "calibration": run.calibration}, judge.table(rows, run.lab_state, notes))


def verdict(run_dir: Path) -> int:
    """The verdict table (printed and kept in verdict.txt) and verdict.json; its exit status."""
    data, table = judged(run_dir)
    (run_dir / "verdict.json").write_text(json.dumps(data, indent=2) + "\n")
    (run_dir / "verdict.txt").write_text(table + "\n")
    print(table, flush=True)
    return VERDICT_EXIT[data["summary"]["overall"]]


def run(lab: str, args: Sequence[str], given_run_dir: str | None = None) -> int:
    """The whole run where it is launched; its exit status (0 pass, 1 a figure failed,
    3 nothing judged, 2 the run could not be made)."""
    from pfslab import KIT_ROOT, junit, labs, provenance, state
    from pfslab.rfm_paths import tool_search_path

    kit = KIT_ROOT
    resolved = labs.load(lab)
    reframe_args = expand_demo(resolved, args)
    check_serving(lab)
    run_dir = run_directory(lab, given_run_dir)
    if not given_run_dir:
        say(f"run directory: {run_dir}")
    rc = 2
    why = "the run ended before ReFrame wrote its JUnit report"
    pid_file = kit / "build" / lab / "bench.pid"
    try:
        provenance.record(run_dir, lab, tool_search_path(state.lab(lab)))
        pid_file.write_text(f"{os.getpid()} {run_dir}\n")
        # The watchdog watches the pre-run check too: a lab that fails during its probes
        # ends them (and the run's tests skip) instead of leaving them hanging.
        watchdog = Watchdog(lab, run_dir)
        try:
            pre_run_check(lab, run_dir)
            rc, announced = run_reframe(kit, lab, run_dir, reframe_args)
        finally:
            watchdog.stop()
            pid_file.unlink(missing_ok=True)
        why = f"the run ended with exit status {rc} before ReFrame wrote its JUnit report; see reframe.out"
        report_path = run_dir / "report.json"
        if announced == 0 and rc == 0 and not report_path.is_file():
            # Filters that select nothing make a run that measured nothing (ReFrame says
            # "0 tests to run" and reports nothing): no run directory is kept for it.
            message = f"no test matches the filters ({' '.join(args) or 'none'}) on lab {lab}; 'reframe -c reframe/ -l' lists the tests"
            if given_run_dir:
                why = message
            else:
                shutil.rmtree(run_dir)
            raise KitError(message)
        if not report_path.is_file() or report_path.stat().st_size == 0:
            raise KitError(f"ReFrame wrote no report (exit status {rc}); see {run_dir}/reframe.out")
        report = json.loads(report_path.read_text())
        record_session(run_dir, report)
        if testcase_count(report) == 0:
            why = "no test matched the filters"
            raise KitError(f"no test matches the filters ({' '.join(args) or 'none'}) on lab {lab}; "
                           f"'reframe -c reframe/ -l' lists the tests (what ReFrame printed: {run_dir}/reframe.out)")
        if labs.setting(resolved, "scheduler.type") is not None:
            keep_accounting(run_dir, lab)
        # 1: a figure failed; 3: nothing was judged, which is no pass either; a
        # passing verdict keeps ReFrame's own failure (a test that errored).
        rc = verdict(run_dir) or rc
        print(f"raw outputs, job scripts and the JSON report: {run_dir}", flush=True)
        return rc
    finally:
        # Every run directory holds a junit.xml: ReFrame's, else one error saying why.
        if run_dir.is_dir():
            junit.write_error(run_dir, why)
