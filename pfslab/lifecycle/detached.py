"""A run on this machine detached from the terminal, for a lab whose target says
detached_runs (targets/<target>/target.json): a site lab, whose user reaches the site's
submit node with their own SSH and runs the kit there.

What a remote lab's login node does for its runs (:mod:`pfslab.lifecycle.login_run`),
done here without SSH: the run is scripts/bench itself in a session of its own (setsid),
so the SSH session dropping (SIGHUP) never ends a run of hours; make bench follows its
output, and a later make bench finds a run still going and reattaches to it.

What this machine keeps of the run being followed, in the lab's state:
  build/<lab>/detached/{run,since,pid}: the run's name, its UTC start, the detached
    shell's pid; made with mkdir, so a second launch fails before anything starts;
    removed once a make bench has shown the run's end.
and in the run directory itself: console.log (everything the run printed) and status
(its exit status, written when it ends)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from pfslab import KIT_ROOT
from pfslab.lifecycle import Refusal, lablock

#: The detached run's environment names its run directory (made by the make bench that
#: launched it); the run's own processes carry PFSLAB_RUN_DIR, which lab-down looks for.
DETACHED_VAR = "PFSLAB_DETACHED_RUN"

#: How often the follower looks for more output (tail -s).
POLL_S = 0.5

#: The detached shell: it writes its pid, runs the bench, then its exit status. It
#: traps SIGINT instead of ignoring it (an ignored signal would be inherited, and the
#: run must get Ctrl-C's SIGINT as in the foreground: ReFrame cancels its jobs), so it
#: still writes the status once the bench ended.
_SHELL = ('d=$1; shift; echo $$ >"$d/pid.new" && mv "$d/pid.new" "$d/pid"; trap : INT; "$@"; '
          'echo $? >"$0/status.new" && mv "$0/status.new" "$0/status"')


def say(line: str) -> None:
    print(f"[bench] {line}", file=sys.stderr, flush=True)


def detached_dir(lab: str) -> Path:
    return KIT_ROOT / "build" / lab / "detached"


def runs_dir(lab: str) -> Path:
    return KIT_ROOT / "build" / "runs" / lab


@dataclass(frozen=True)
class Recorded:
    """The run recorded for the lab: ``state`` is running, ended (it wrote its exit
    status) or lost (its process is gone without one: the machine restarted, or it was
    killed)."""

    name: str
    since: str
    state: str


def _read(path: Path, default: str = "") -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return default


def alive(pid: int) -> bool:
    """Whether process PID lives; a zombie does not (it waits to be reaped)."""
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return False
    # The state follows the command name, which is in parentheses and may hold spaces.
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def _pid(lab: str) -> int:
    text = _read(detached_dir(lab) / "pid")
    return int(text) if text.isdigit() else 0


def recorded(lab: str) -> Recorded | None:
    d = detached_dir(lab)
    name = _read(d / "run")
    if not name:
        return None
    pid = _pid(lab)
    if (runs_dir(lab) / name / "status").exists():
        state = "ended"
    elif pid and alive(pid) and f"runs/{lab}/{name}".encode() in _cmdline(pid):
        state = "running"
    else:
        state = "lost"
    return Recorded(name, _read(d / "since", "?") or "?", state)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def launch(lab: str, run_dir: Path, args: Sequence[str]) -> None:
    """Start scripts/bench in a session of its own, stdin /dev/null, its output to
    RUN_DIR/console.log and its exit status to RUN_DIR/status when it ends; returns as
    soon as it started."""
    d = detached_dir(lab)
    try:
        # mkdir, not makedirs(exist_ok): a second launch while a run is recorded fails here.
        d.mkdir(mode=0o700)
    except OSError:
        raise Refusal(f"could not record the run in {d} (a run already recorded there? 'make bench' reattaches to it)"
                      ) from None
    (d / "run").write_text(run_dir.name + "\n")
    (d / "since").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n")
    console = run_dir / "console.log"
    console.write_bytes(b"")
    say("launching the run detached from this terminal: it goes on if your SSH session drops; "
        "'make bench' reattaches to it")
    # setsid --fork in the foreground: the run is in no process group of this one, and
    # starts with SIGINT at its default (Python's handler is reset by exec).
    with open(console, "ab") as out:
        subprocess.run(["setsid", "--fork", "nohup", "bash", "-c", _SHELL, str(run_dir), str(d),
                        str(KIT_ROOT / "scripts" / "bench"), *args],
                       stdin=subprocess.DEVNULL, stdout=out, stderr=out, check=False,
                       env=dict(os.environ, **{DETACHED_VAR: str(run_dir)}))
    deadline = time.monotonic() + 10
    while not _read(d / "pid"):
        if time.monotonic() >= deadline:
            raise Refusal(f"the detached run did not start within 10 s; see {console}")
        time.sleep(0.25)


def follow(lab: str, run_dir: Path) -> int:
    """The run's output from its first byte, shown as it comes until the run's process
    ends; the run's exit status."""
    pid = _pid(lab)
    out = sys.stdout.buffer
    with open(run_dir / "console.log", "rb") as console:
        while True:
            running = alive(pid) if pid else False
            chunk = console.read()
            if chunk:
                out.write(chunk)
                out.flush()
                continue
            if not running:
                break
            time.sleep(POLL_S)
    status = _read(run_dir / "status", "none")
    if not status.isdigit():
        say(f"run {run_dir.name} ended without an exit status (its process was killed, or this machine restarted)")
        return 1
    return int(status)


def forget(lab: str, name: str) -> None:
    """The lab's record of run NAME removed (a make bench showed its end); a record of
    another run is kept."""
    d = detached_dir(lab)
    if _read(d / "run") == name:
        shutil.rmtree(d, ignore_errors=True)


def _tail(path: Path, lines: int = 20) -> None:
    try:
        text = path.read_bytes()
    except OSError:
        return
    kept = text.splitlines(keepends=True)[-lines:]
    sys.stdout.buffer.write(b"".join(kept))
    sys.stdout.flush()


def show_end(run_dir: Path) -> None:
    """What a run that ended unfollowed shows: its verdict table and where it is, or (it
    ended before a verdict) the last lines it printed."""
    verdict = run_dir / "verdict.txt"
    if verdict.is_file() and verdict.stat().st_size:
        sys.stdout.write(verdict.read_text())
        print(f"raw outputs, job scripts and the JSON report: {run_dir}", flush=True)
    else:
        _tail(run_dir / "console.log")


def run(lab: str, args: Sequence[str], new_run_dir: Path | None = None) -> int:
    """make bench of a detached lab: launch the run (or find the one recorded) and follow
    it; its exit status. The run is scripts/bench again in a session of its own, which
    takes the lab's lock and owns the watchdog and everything else of the run."""
    from pfslab import state

    given = "; the options given are for a new run, once this one has ended" if args else ""
    again = " (the options given are for a new run: run make bench again)" if args else ""
    found = recorded(lab)
    if found is not None:
        name = found.name
        run_dir = runs_dir(lab) / name
        if not run_dir.is_dir():
            raise Refusal(f"{detached_dir(lab)} records run {name}, which has no run directory ({run_dir}); "
                          "remove that folder")
        if found.state == "running":
            say(f"a run is going here since {found.since}: reattaching (run {name}{given}); Ctrl-C ends it")
        elif found.state == "ended":
            say(f"run {name} (since {found.since}) ended while no make bench followed it; its end follows "
                f"(all of it: {run_dir}/console.log){again}")
            show_end(run_dir)
            status = _read(run_dir / "status")
            forget(lab, name)
            return int(status) if status.isdigit() else 1
        else:
            say(f"run {name} (since {found.since}) ended without an exit status (its process was killed, or this "
                f"machine restarted); what it printed: {run_dir}/console.log{again}")
            _tail(run_dir / "console.log")
            forget(lab, name)
            return 1
    else:
        if not lablock.unlocked(lab):
            raise Refusal(lablock.busy(lab))
        try:
            run_dir = new_run_dir or state.new_run_dir(lab, "", os.environ.get("PFSLAB_RUN_NAME") or None)
        except (ValueError, FileExistsError) as err:
            raise Refusal(str(err)) from None
        name = run_dir.name
        say(f"run directory: {run_dir}")
        launch(lab, run_dir, args)
    return _follow_with_signals(lab, name, run_dir)


def _follow_with_signals(lab: str, name: str, run_dir: Path) -> int:
    """Ctrl-C of the follower ends the run as Ctrl-C in the foreground does (SIGINT to
    every process of its session; ReFrame cancels its jobs and reports) and the follower
    shows its end; SIGHUP (the SSH session dropped) or SIGTERM leaves the run going."""

    def interrupted(_signum: int, _frame: FrameType | None) -> None:
        say(f"interrupted: ending run {name} (SIGINT to its processes, as Ctrl-C in the foreground); its end follows")
        pid = _pid(lab)
        if pid:
            try:
                os.killpg(pid, signal.SIGINT)
            except OSError:
                pass

    def left(signum: int, _frame: FrameType | None) -> None:
        what = signal.Signals(signum).name
        try:
            say(f"{what}: no longer following run {name}; the run goes on (its output: {run_dir}/console.log): "
                "run 'make bench' again to reattach")
            sys.stdout.flush()
        except OSError:
            pass
        os._exit(129 if signum == signal.SIGHUP else 143)

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM)}
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGHUP, left)
    signal.signal(signal.SIGTERM, left)
    try:
        rc = follow(lab, run_dir)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    forget(lab, name)
    return rc
