"""The health watchdog of a benchmark run (scripts/watchdog; scripts/bench starts it).

    watchdog LAB RUN_DIR WATCHED_PID [INTERVAL_S]

Every INTERVAL_S (default 10) it reads the lab's health (:mod:`pfslab.lifecycle.health`):
- not serving (a daemon the file system cannot do without is gone, no active MDS, a
  client mount gone or hung, a slurmd down), seen twice in a row: it writes
  RUN_DIR/lab-health.json {"state": "unhealthy", ...}, ends every benchmark process of
  the run on every node, and exits. The test that was running fails with that reason,
  the tests after it are skipped with it; the run's verdict is FAIL;
- serving but degraded (an OSD down, the pools still available): {"state": "degraded"}
  once, and the watch goes on; the verdict is FAIL.
A local lab's readings are mostly quick (pid files and mounts, milliseconds); every
PFSLAB_WATCHDOG_FULL_EVERY-th one and every one after a fault asks every role. A
remote lab's (this runs on its login node) reach the nodes over the lab's SSH. A site
lab (storage the kit did not install, target site) is watched through its scheduler
only: a node Slurm's controller reports not responding, down or drained is unhealthy
at the first reading, and read once more when the bench ends (TERM); the run's jobs are
cancelled (scancel). It stops by itself when WATCHED_PID (the bench) is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from pfslab import KIT_ROOT, site_health
from pfslab.lifecycle import Refusal, build_dir, health, inventory_at, log
from pfslab.lifecycle.mounts import fuse_abort, fuse_mounts_under, mounts_under
from pfslab.model import Inventory
from pfslab.transport import Transport, bounded, for_lab
from pfslab.transport.local import LocalTransport

TAG = "watchdog"
USAGE = "usage: watchdog LAB RUN_DIR WATCHED_PID [INTERVAL_S]"
#: Seconds a second reading follows a bad one: one bad reading can be a busy machine.
RECHECK_S = 5
#: Seconds the run's processes get to die before the watchdog says which are left.
END_WAIT_S = 10


def _positive(name: str, value: str, what: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise Refusal(f"{name}={value} is not allowed; give {what}, at least 1")
    return int(value)


class _Ended(Exception):
    """TERM: the bench is done."""


@dataclass
class Watch:
    lab: str
    run_dir: Path
    inventory: Inventory
    #: The nodes are namespaces of this host (registry flag ``namespaces``): its daemons'
    #: pid files and client mounts are here, and a reading can be quick.
    namespaces: bool
    #: The lab's storage is the site's (registry flag ``provisions`` false): its scheduler
    #: judges its nodes, and its run's jobs are cancelled through it.
    site: bool
    call_timeout: int
    full_every: int
    site_end_wait: int
    acting: bool = False

    # ---- readings ----

    def reading(self, full: bool) -> health.Reading:
        if self.site:
            return self.site_reading()
        if not full:
            quick = self.quick_problems()
            # Whatever a quick reading finds, a full one judges (a dead MDS is fatal, a dead OSD not).
            if not quick:
                return health.Reading()
        return health.full_reading(self.lab, self.inventory, self.transport(), self.essential_config(),
                                   self.call_timeout)

    def transport(self) -> Transport:
        return for_lab(self.lab, self.inventory, KIT_ROOT, build_dir(), os.environ.get("PFSLAB_REMOTE_ROOT")
                       or "/opt/pfslab", "/etc/pfslab/node.json")

    def essential_config(self) -> str:
        """A node config of the lab on this machine: a local lab's first node's, the login node's own."""
        transport = self.transport()
        if isinstance(transport, LocalTransport):
            table = health.role_table(self.inventory)
            return str(transport.config(table[0].node)) if table else ""
        return "/etc/pfslab/node.json"

    def site_reading(self) -> health.Reading:
        lab = json.loads((KIT_ROOT / "build" / self.lab / "lab.json").read_text())
        try:
            found = site_health.problems(lab)
        except site_health.UnansweredError as err:
            return health.Reading([health.Problem(True, str(err))])
        return health.Reading([health.Problem(True, f) for f in found], certain=bool(found))

    def quick_problems(self) -> list[str]:
        """Every daemon of the lab instance alive (its pid file under the run root) and
        every client's mount there and answering, in milliseconds."""
        found = []
        run_root = self.inventory.run_root
        if run_root:
            for pidfile in sorted(Path(run_root).glob("*/*.pid")):
                if not _alive(pidfile.read_text().strip()):
                    found.append(f"{pidfile.relative_to(run_root)}: not running")
        state_root = self.inventory.state_root
        if not state_root:
            return found
        mounts = mounts_under(state_root)
        found += [f"{m} does not answer" for m in mounts if not bounded(["stat", "-f", m], 10).ok]
        wanted = len(self.inventory.clients or [])
        if len(mounts) < wanted:
            found.append(f"{len(mounts)} of {wanted} client mounts are there")
        return found

    # ---- acting ----

    def write_state(self, state: str, detail: str) -> None:
        new = self.run_dir / "lab-health.json.new"
        new.write_text(json.dumps({"state": state, "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                   "detail": detail}, indent=2) + "\n")
        new.replace(self.run_dir / "lab-health.json")

    def act(self, fatal: str) -> None:
        """The lab is not serving: recorded for the run's tests and verdict, its processes ended."""
        self.acting = True
        log(TAG, f"lab {self.lab} is unhealthy: {fatal}")
        self.write_state("unhealthy", fatal)
        self.end_benchmarks()

    def benchmark_pids(self) -> set[int]:
        """Everything in the client namespaces but the clients' own daemons (a local
        lab), and the run's processes on this host (working in the run's stage)."""
        pids: set[int] = set()
        if self.namespaces:
            daemons = {p.read_text().strip() for p in Path(self.inventory.run_root or "/nonexistent").glob("*/*.pid")}
            for client in self.inventory.clients or []:
                netns = self.inventory.netns.get(client)
                if not netns:
                    continue
                out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, check=False)
                pids |= {int(p) for p in out.stdout.split() if p not in daemons}
        stage = str(self.run_dir / "stage")
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                cwd = os.readlink(proc / "cwd")
            except OSError:
                continue
            if cwd.startswith(stage) and int(proc.name) != os.getpid():
                pids.add(int(proc.name))
        return pids

    def end_benchmarks(self) -> bool:
        if self.site:
            self.cancel_site_jobs()
        pids = self.benchmark_pids()
        left: set[int] = set()
        if pids:
            log(TAG, f"ending the run's benchmark processes: {' '.join(map(str, sorted(pids)))}")
            _kill(pids)
            left, waited = self.benchmark_pids(), 0
            while left and waited < END_WAIT_S:
                if waited == 3 and self.namespaces:
                    self.abort_fuse()
                _kill(left)
                time.sleep(1)
                waited += 1
                left = self.benchmark_pids()
        elif not self.site:
            log(TAG, "no benchmark process was running")
            return True
        if left:
            log(TAG, f"still alive after {END_WAIT_S} s: {' '.join(map(str, sorted(left)))}")
            return False
        if self.site and not self.wait_site_jobs():
            return False
        log(TAG, "no benchmark process is left on any node")
        return True

    def abort_fuse(self) -> None:
        """Abort the FUSE connections of the lab's client mounts: every request waiting
        on one fails, which frees processes SIGKILL alone cannot."""
        state_root = self.inventory.state_root
        if not state_root:
            return
        found = fuse_mounts_under(state_root)
        aborted = fuse_abort(*(conn for _, conn in found))
        for mount, conn in found:
            if conn in aborted:
                log(TAG, f"aborted the FUSE connection of {mount}: processes were stuck in it ('make lab-up' remounts it)")

    def site_jobs(self) -> list[tuple[str, str]]:
        """The run's jobs still in Slurm's queue (submitted from its stage), (id, state)."""
        user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=False).stdout.strip()
        out = subprocess.run(["squeue", "--noheader", f"--user={user}", "--format=%i %T %Z"], capture_output=True,
                             text=True, check=False).stdout
        stages = (str(self.run_dir / "stage"), os.path.realpath(self.run_dir) + "/stage")
        jobs = []
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[2].startswith(stages):
                jobs.append((parts[0], parts[1]))
        return jobs

    def cancel_site_jobs(self) -> None:
        ids = [j for j, _ in self.site_jobs()]
        if not ids:
            return
        log(TAG, f"cancelling the run's Slurm jobs: {' '.join(ids)}")
        done = subprocess.run(["scancel", *ids], capture_output=True, text=True, check=False)
        for line in (done.stdout + done.stderr).splitlines():
            log(TAG, f"scancel: {line}")

    def wait_site_jobs(self) -> bool:
        waited = 0
        while (jobs := self.site_jobs()) and waited < self.site_end_wait:
            time.sleep(2)
            waited += 2
        if not jobs:
            return True
        log(TAG, f"still in Slurm's queue after {self.site_end_wait} s: {', '.join(' '.join(j) for j in jobs)} "
            "(Slurm ends them when it sets their node down)")
        return False


def _alive(pid: str) -> bool:
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def watchdog(args: Sequence[str]) -> int:
    if len(args) < 3 or len(args) > 4:
        raise Refusal(USAGE)
    lab, run_dir, watched = args[0], Path(args[1]), args[2]
    interval = args[3] if len(args) > 3 else "10"
    inv_path = KIT_ROOT / "build" / lab / "inventory.json"
    if not inv_path.is_file() or inv_path.stat().st_size == 0:
        raise Refusal(f"lab {lab} is not up (no {inv_path})")
    if not run_dir.is_dir():
        raise Refusal(f"no run directory {run_dir}")
    every = _positive("INTERVAL_S", interval, "whole seconds")
    full_every = _positive("PFSLAB_WATCHDOG_FULL_EVERY", os.environ.get("PFSLAB_WATCHDOG_FULL_EVERY", "6"),
                           "a whole number of readings")
    call_timeout = _positive("PFSLAB_WATCHDOG_CALL_TIMEOUT", os.environ.get("PFSLAB_WATCHDOG_CALL_TIMEOUT", "25"),
                             "whole seconds")
    end_wait = _positive("PFSLAB_WATCHDOG_SITE_END_WAIT", os.environ.get("PFSLAB_WATCHDOG_SITE_END_WAIT", "90"),
                         "whole seconds")
    if not watched.isdigit():
        raise Refusal(f"WATCHED_PID={watched} is not allowed; give the process id of the bench")
    inventory = inventory_at(inv_path)
    target = inventory.registry_target()
    if not target.provisions:
        # A site lab's daemons are the site's: only its scheduler can say how its nodes are.
        if inventory.scheduler_type != "slurm":
            log(TAG, f"lab {lab} is storage the kit did not install, without a scheduler to ask: no health watch "
                "(a failing node fails its jobs)")
            return 0
    watch = Watch(lab, run_dir, inventory, target.namespaces, not target.provisions, call_timeout, full_every,
                  end_wait)
    return _loop(watch, int(watched), every)


def _loop(watch: Watch, watched: int, interval: int) -> int:
    def on_term(_signum: int, _frame: FrameType | None) -> None:
        # Never in the middle of ending a run's processes: that finishes first.
        if not watch.acting:
            raise _Ended

    signal.signal(signal.SIGTERM, on_term)
    try:
        _watch(watch, watched, interval)
    except _Ended:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if watch.site:
            # A run that ended between two readings (its tests failing fast on a node
            # gone) still gets the node named; only the controller's judgement counts.
            last = watch.site_reading()
            if last.certain:
                watch.act(last.fatal())
    return 0


def _watch(watch: Watch, watched: int, interval: int) -> None:
    strikes = 0
    reported = False
    readings = 0
    while _alive(str(watched)):
        readings += 1
        # A remote lab's daemons are on other hosts, a site lab's its scheduler's: every
        # reading is full. A local lab's first is quick: make bench checked the lab just before.
        full = readings % watch.full_every == 0 or strikes > 0 or not watch.namespaces
        found = watch.reading(full)
        fatal = found.fatal()
        if fatal:
            strikes += 1
            if strikes >= 2 or found.certain:
                watch.act(fatal)
                return
            log(TAG, f"lab {watch.lab} looks unhealthy ({fatal}); checking again in {RECHECK_S} s")
            time.sleep(RECHECK_S)
            continue
        strikes = 0
        degraded = found.degraded()
        if degraded and not reported:
            log(TAG, f"lab {watch.lab} is degraded: {degraded} (the run goes on; its verdict will be FAIL)")
            watch.write_state("degraded", degraded)
            reported = True
        time.sleep(interval)
