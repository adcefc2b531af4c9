"""A remote lab's run, launched on its login node and brought home.

mpirun's daemons and IOzone's children connect back to the launching host, which must be
on the lab's network: a cloud or bare-metal lab's runs start on its login node (the
inventory's ``login``, else its first client). The run is launched there detached from
the SSH session that starts it (setsid, its output to a file there), so a dropped
connection never ends a run of hours: this machine follows its output over SSH,
reattaches when the session drops, and a later make bench finds a run still going and
reattaches to it. The whole run directory comes home afterwards, also when the run failed
or was interrupted, so nothing measured is lost.

What the login node keeps of the run being launched, in the lab's state there
(<remote root>/build/<lab>/detached; the run directory itself is made by the bench there
and must not exist before it): run (its name), since (UTC start), pid (the detached
shell), console.log (everything the bench printed), status (its exit status, written
when it ends). Every ssh reads the lab's one SSH config (:mod:`pfslab.transport.ssh`)."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from pfslab import KIT_ROOT, names
from pfslab.lifecycle import Refusal, build_dir, inventory_at
from pfslab.lifecycle.adapter import Exit
from pfslab.lifecycle.remote_up import Remote
from pfslab.model import Inventory
from pfslab.transport.ssh import SshTransport

#: The bench's variables a run on the login node takes over from this machine's.
PASSED_ON = ("PFSLAB_MODE", "PFSLAB_NO_PRECHECK", "PFSLAB_WATCHDOG_INTERVAL")

#: A follow session's status when the login node records no such run (it was ended there).
NO_SUCH_RUN = 4

#: How long an interrupted make bench waits for the run there to finish writing.
END_WAIT_S = 60


def tag() -> str:
    return os.environ.get("PFSLAB_LOG_TAG") or "bench"


def say(line: str) -> None:
    print(f"[{tag()}] {line}", file=sys.stderr, flush=True)


def remote_root() -> str:
    """The kit on the nodes (PFSLAB_REMOTE_ROOT)."""
    return os.environ.get("PFSLAB_REMOTE_ROOT") or "/opt/pfslab"


class Failed(Exception):
    """A step that said why already (in its own words): the run ends with STATUS."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Interrupted(Exception):
    """Ctrl-C or TERM of the make bench following the run."""


@dataclass(frozen=True)
class Login:
    """A remote lab's login node as this machine reaches it."""

    lab: str
    node: str
    inventory: Inventory

    @classmethod
    def of(cls, lab: str) -> Login:
        inventory = inventory_at(build_dir() / lab / "inventory.json")
        return cls(lab, inventory.login_node, inventory)

    @property
    def ssh_dir(self) -> Path:
        return build_dir() / self.lab / "ssh"

    @property
    def transport(self) -> SshTransport:
        return SshTransport(self.ssh_dir / "config")

    @property
    def state(self) -> str:
        """The lab's state on the login node."""
        return f"{remote_root()}/build/{self.lab}"

    @property
    def detached(self) -> str:
        return f"{self.state}/detached"

    def remote_run_dir(self, name: str) -> str:
        return f"{remote_root()}/build/runs/{self.lab}/{name}"

    def argv(self, script: str) -> list[str]:
        return self.transport.shell_argv(self.node, script)

    def ssh(self, script: str, *, quiet: bool = False) -> subprocess.CompletedProcess[str]:
        """SCRIPT run on the login node, its output captured (stderr too with ``quiet``)."""
        return subprocess.run(self.argv(script), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL if quiet else None, text=True, check=False)


# ---- the run recorded on the login node -------------------------------------------------

@dataclass(frozen=True)
class Recorded:
    """STATE is running, ended (it wrote its exit status) or lost (its process is gone
    without one: the login node restarted, or it was killed)."""

    name: str
    since: str
    state: str

    def line(self) -> str:
        return f"{self.name} {self.since} {self.state}"


def recorded(login: Login) -> Recorded | None:
    """The run recorded on the lab's login node, if any; one that is not a run the kit
    made is refused in one line."""
    script = (f"d='{login.detached}'; test -s \"$d/run\" || exit 0; n=$(cat \"$d/run\"); "
              "p=$(cat \"$d/pid\" 2>/dev/null); if test -e \"$d/status\"; then st=ended; "
              "elif test -n \"$p\" && grep -qaF -- \"$n\" /proc/$p/cmdline 2>/dev/null; then st=running; "
              "else st=lost; fi; echo \"$n $(cat \"$d/since\" 2>/dev/null || echo ?) $st\"")
    done = subprocess.run(login.argv(script), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, check=False)
    out = done.stdout.rstrip("\n")
    if done.returncode != 0:
        from pfslab.lifecycle import reach

        # ssh's own messages say why (a warning of a session that worked is not the record).
        said = (done.stderr + done.stdout).rstrip("\n")
        raise Refusal(reach.diagnose(login.lab, login.inventory, login.node, said, login.ssh_dir))
    if not out:
        return None
    words = out.split()
    problem = names.run_name_problem(words[0]) if words else "an empty record"
    if problem or len(words) != 3:
        raise Refusal(f"login node {login.node} records a run that is not the kit's "
                      f"({problem or repr(out)}) in {login.detached}; remove that folder there")
    return Recorded(*words)


def refuse_running(lab: str) -> None:
    """lab-up while a run of the lab goes on its login node (its make bench was killed,
    or gave up reattaching) would sync the kit and restart the roles under it: refused
    in one line naming the run. Asked only of a login node whose host key is recorded
    already, so no connection learns a key here; one that does not answer is lab-up's
    to name."""
    state = build_dir() / lab
    for needed in (state / "inventory.json", state / "ssh" / "config"):
        if not needed.is_file() or needed.stat().st_size == 0:
            return
    try:
        login = Login.of(lab)
        known = (state / "ssh" / "known_hosts").read_text()
    except (Refusal, OSError):
        return
    if not login.node or not any(line.startswith(f"{login.node} ") for line in known.splitlines()):
        return
    try:
        found = recorded(login)
    except Refusal:
        return
    if found is not None and found.state == "running":
        raise Refusal(f"a run of lab {lab} is going on its login node {login.node} since {found.since} (run {found.name}): "
                      "'make bench' reattaches to it and brings it home, 'make lab-down' ends it; lab-up would restart "
                      "the lab under it")


# ---- launch and follow ---------------------------------------------------------------------

def split_launch_words(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """[VAR=VALUE...] -- BENCH-ARGS... as the environment and the bench's arguments (the
    command line's parser may have dropped the ``--``: the leading VAR=VALUE words are
    the environment then)."""
    words = list(words)
    if "--" in words:
        split = words.index("--")
        return words[:split], words[split + 1:]
    split = 0
    while split < len(words) and _assignment(words[split]):
        split += 1
    return words[:split], words[split:]


def _assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier()


def launch(login: Login, name: str, env: Sequence[str], args: Sequence[str]) -> None:
    """Start scripts/bench on the login node in a session of its own, its output to the
    record's console.log and its exit status to status when it ends; returns as soon as
    it started."""
    d = login.detached
    say(f"launching the run on login node {login.node} (detached: it goes on if this machine's SSH session drops)")
    envs = " ".join(shlex.quote(e) for e in env)
    words = " ".join(shlex.quote(a) for a in args)
    # mkdir, not mkdir -p: a second launch while a run is recorded fails here, before
    # anything starts.
    script = (f"cd '{remote_root()}' && mkdir -m 700 '{d}' && printf '%s\\n' '{name}' >'{d}/run' && "
              f"date -u +%Y-%m-%dT%H:%M:%SZ >'{d}/since' && : >'{d}/console.log' &&\n"
              "    { setsid nohup bash -c '\"$@\"; echo $? >\"$0/status.new\" && mv \"$0/status.new\" \"$0/status\"' "
              f"'{d}' env {envs} scripts/bench {words} </dev/null >>'{d}/console.log' 2>&1 & echo $! >'{d}/pid'; }}")
    if login.ssh(script).returncode != 0:
        raise Refusal(f"could not launch the run on login node {login.node} (a run already recorded in "
                      f"{login.node}:{d}? 'make bench' reattaches to it)")


def follow_once(login: Login, name: str, console: Path, offset: int) -> int:
    """One SSH session following the run: its output from byte OFFSET+1 until the run's
    process ends (tail --pid), shown and appended to CONSOLE line by line. Status: 0 the
    run ended, 4 no such run there, else the session dropped."""
    d = login.detached
    start = offset + 1
    script = (f"d='{d}'; test \"$(cat \"$d/run\" 2>/dev/null)\" = '{name}' || exit {NO_SUCH_RUN}; "
              "p=$(cat \"$d/pid\" 2>/dev/null); if test ! -e \"$d/status\" && test -n \"$p\" && "
              f"grep -qaF -- '{name}' /proc/$p/cmdline 2>/dev/null; then exec tail -c +{start} --pid=$p -f "
              f"\"$d/console.log\"; else exec tail -c +{start} \"$d/console.log\"; fi")
    out = sys.stdout.buffer
    partial = b""
    with open(console, "ab") as keep:
        child = subprocess.Popen(login.argv(script), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        try:
            assert child.stdout is not None
            for line in iter(child.stdout.readline, b""):
                if not line.endswith(b"\n"):
                    partial = line
                    break
                out.write(line)
                out.flush()
                keep.write(line)
                keep.flush()
            rc = child.wait()
            # A session killed by a signal reads as the shell says it (128 + the signal),
            # as its line and the tests expect: "exit status 137", never "-9".
            if rc < 0:
                rc = 128 - rc
        except BaseException:
            # An interrupted make bench: its follow session ends with it.
            child.kill()
            child.wait()
            raise
        # The run's last line, unterminated; one cut by a drop is not shown: the next
        # session sends it whole.
        if rc == 0 and partial:
            out.write(partial)
            out.flush()
            keep.write(partial)
    return rc


def reattach_limit() -> int:
    limit = os.environ.get("PFSLAB_REATTACH_TIMEOUT") or "600"
    if not limit.isdigit() or limit.startswith("0"):
        raise Refusal(f"PFSLAB_REATTACH_TIMEOUT={limit} is not allowed; give a number of seconds above 0 (default 600)")
    return int(limit)


def follow(login: Login, name: str, console: Path) -> int:
    """The run's output from the byte after what CONSOLE holds (this machine's copy) to
    its end, shown and appended to CONSOLE: no byte twice, none lost. When the SSH
    session drops, one line says so and it reattaches, trying for up to
    PFSLAB_REATTACH_TIMEOUT seconds since the drop (the lab's SSH config has ssh notice a
    dead network within 45 s). The run's exit status; a login node that stays out of
    reach fails in one line, and the run goes on there."""
    limit = reattach_limit()
    console.touch()
    window: float | None = None
    while True:
        size = console.stat().st_size
        started = time.monotonic()
        rc = follow_once(login, name, console, size)
        if rc == 0:
            done = login.ssh(f"cat '{login.detached}/status' 2>/dev/null || echo none")
            if done.returncode == 0:
                status = done.stdout.strip()
                break
        if rc == NO_SUCH_RUN:
            raise Refusal(f"login node {login.node} no longer records run {name} ({login.detached}): it was ended there "
                          f"(lab-down?); what it brought home stays in {console.parent}")
        rc = rc or 255
        # A session that followed for a while, or brought output, starts a new retry
        # window; one that drops at once counts against the window already open.
        now = time.monotonic()
        if window is None or console.stat().st_size > size or now - started >= 60:
            window = now
        say(f"the SSH session following the run on login node {login.node} dropped (exit status {rc}): reattaching, "
            f"for up to {limit} s (PFSLAB_REATTACH_TIMEOUT)")
        while not (time.monotonic() - window < limit and login.ssh("true", quiet=True).returncode == 0):
            left = limit - (time.monotonic() - window)
            if left <= 0:
                raise Refusal(f"could not reattach to run {name} on login node {login.node} within {limit} s "
                              "(PFSLAB_REATTACH_TIMEOUT); the run goes on there: run 'make bench' again to reattach "
                              "and bring it home")
            time.sleep(min(left, 5))
        say(f"reattached to run {name} on login node {login.node}: its output resumes at byte {console.stat().st_size}")
    if not status.isdigit():
        say(f"run {name} on login node {login.node} ended without an exit status (its process was killed, or the "
            "login node restarted)")
        return 1
    return int(status)


def forget(login: Login, name: str) -> None:
    """Run NAME's record on the login node removed once the run is home (its run
    directory gone from there); kept while it is not, so the next make bench brings it
    home."""
    login.ssh(f"test -d '{login.remote_run_dir(name)}' || rm -rf '{login.detached}'")


def wait_ended(login: Login, limit: float) -> bool:
    """Wait (up to LIMIT seconds) for the recorded run to write its exit status."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if login.ssh(f"test -e '{login.detached}/status' || ! test -e '{login.detached}/run'", quiet=True).returncode == 0:
            return True
        time.sleep(1)
    return False


# ---- bringing the run home -----------------------------------------------------------------

def _bad_member(member: tarfile.TarInfo) -> str | None:
    """How ``tar -tv`` names a member that is not a plain file or folder inside DEST."""
    if member.issym():
        return f"{member.name} -> {member.linkname}"
    if member.islnk():
        return f"{member.name} link to {member.linkname}"
    if not (member.isfile() or member.isdir()):
        return member.name
    return None


def _outside(name: str) -> bool:
    return name.startswith("/") or ".." in name.split("/")


def untar_plain(archive: Path, dest: Path) -> bool:
    """Unpack a tar archive made on a lab node into DEST: only plain files and folders,
    every name inside DEST (none absolute, no ..), owners and setuid/setgid bits not
    taken from it. Anything else is refused in one line naming up to three members,
    before a byte is unpacked."""
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            bad = [b for b in map(_bad_member, members) if b]
            bad += [m.name for m in members if _outside(m.name)]
            if bad:
                say(f"refused to unpack into {dest}: members that are not plain files or folders inside it "
                    f"({';'.join(bad[:3])}); allowed: files and folders only")
                return False
            umask = os.umask(0)
            os.umask(umask)
            for member in members:
                target = dest / member.name
                mode = member.mode & 0o777 & ~umask
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    target.chmod(mode | 0o700)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                with source, open(target, "wb") as out:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
                target.chmod(mode)
    except tarfile.TarError:
        say(f"{archive} is not a tar archive")
        return False
    return True


def fetch_run(login: Login, name: str, dest: Path) -> bool:
    """The run directory brought home whole (then removed from the login node), through
    a private file next to it and :func:`untar_plain`."""
    there = login.remote_run_dir(name)
    if login.ssh(f"test -d '{there}'", quiet=True).returncode != 0:
        say(f"the login node {login.node} has no run {name} to bring home")
        return False
    dest.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".fetch-{name}.", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            got = subprocess.run(login.argv(f"tar -C '{there}' -cf - ."), stdin=subprocess.DEVNULL, stdout=out,
                                 check=False).returncode == 0
        ok = got and untar_plain(Path(tmp), dest)
    finally:
        os.unlink(tmp)
    if not ok:
        say(f"could not bring the whole run home from {login.node}:{there} (it stays there)")
        return False
    login.ssh(f"rm -rf '{there}'")
    say(f"brought the run home from {login.node}: {dest}")
    return True


# ---- ending what runs there ------------------------------------------------------------------

def stop_bench(lab: str) -> None:
    """A run of the lab still going on its login node, ended (lab-down, an interrupted
    bench): the login node's own scripts/lab stop-bench."""
    login = Login.of(lab)
    if not login.node:
        return
    root = remote_root()
    subprocess.run(login.argv(f"test -x '{root}/scripts/lab' && cd '{root}' && scripts/lab stop-bench {lab}"),
                   stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=subprocess.DEVNULL, check=False)


def end_lab_processes(lab: str) -> None:
    """Every node's processes that use the lab's file system (scripts/host-end-processes,
    sent from this checkout): what a run started through SSH and left behind."""
    inventory = inventory_at(build_dir() / lab / "inventory.json")
    mount = inventory.mount or ""
    script = KIT_ROOT / "scripts" / "host-end-processes"
    transport = SshTransport(build_dir() / lab / "ssh" / "config")
    for node in inventory.nodes:
        argv = ["ssh", "-F", str(transport.ssh_config), node.name, f"bash -s -- {shlex.quote(mount)}"]
        with open(script, "rb") as source:
            child = subprocess.Popen(argv, stdin=source, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert child.stdout is not None
            for line in child.stdout:
                sys.stderr.write(f"[{os.environ.get('PFSLAB_LOG_TAG') or 'lab'}] {node.name}: "
                                 f"{line.decode(errors='replace')}")
            sys.stderr.flush()
            if child.wait() != 0:
                say(f"could not end what uses the file system on {node.name} (ignored)")


# ---- make bench of a remote lab ----------------------------------------------------------------

def shell_lib(lab: str, calls: str) -> str:
    """Steps of the lab's setup still in scripts/lib (login.sh's login_ship_tools), run in bash;
    their stdout. One that fails has said why in its own line: :class:`Failed`."""
    program = (f'source "$PFSLAB_ROOT/scripts/lib/common.sh" && source "$PFSLAB_ROOT/scripts/lib/remote.sh" && '
               f'PFSLAB_LOG_TAG={tag()} && {calls}')
    done = subprocess.run(["bash", "-c", program, "bash", lab], stdout=subprocess.PIPE, text=True, check=False,
                          env=dict(os.environ, PFSLAB_ROOT=str(KIT_ROOT)))
    if done.returncode != 0:
        raise Failed(done.returncode)
    return done.stdout.strip()


def bench(login: Login, name: str, console: Path, args: Sequence[str]) -> int:
    """Run scripts/bench on the login node with the run's name chosen here, detached;
    then follow it. The kit there is made this checkout's, the lab's state and
    PFSLAB_TOOL_PATH's folders are shipped first."""
    remote = Remote(login.lab, tag())
    try:
        remote.kit_sync()
        remote.ship_state()
    except Exit as ended:
        raise Failed(ended.status) from ended
    tools = shell_lib(login.lab, 'login_ship_tools "$1"')
    commit = subprocess.run(["git", "-C", str(KIT_ROOT), "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, check=False).stdout.strip()
    # The run's provenance names this machine and its commit (the login node's kit is a copy of it).
    env = [f"PFSLAB_RUN_NAME={name}", f"PFSLAB_LAB={login.lab}", f"PFSLAB_LAUNCHED_FROM={socket.gethostname()} {commit}"]
    if tools:
        env.append(f"PFSLAB_TOOL_PATH={tools}")
    env += [f"{var}={os.environ[var]}" for var in PASSED_ON if os.environ.get(var)]
    launch(login, name, env, args)
    return follow(login, name, console)


def _interrupted(login: Login, name: str, run_dir: Path) -> int:
    """Ctrl-C (or TERM) of this make bench ends the run on the login node too, waits (up
    to a minute) for its bench there to finish writing, and brings home what it measured."""
    say("interrupted: ending the run on the login node and bringing home what it measured")
    stop_bench(login.lab)
    if not wait_ended(login, END_WAIT_S):
        say(f"the run on the login node did not end within {END_WAIT_S} s; bringing home what is there")
    fetch_run(login, name, run_dir)
    forget(login, name)
    return 130


#: The run directory here of the run being followed, once it is known (for its junit.xml).
RUN_DIR: list[Path] = []


def run(lab: str, args: Sequence[str], runs: Path) -> int:
    """make bench of a remote lab: its exit status; its run directory here (under RUNS,
    build/runs/<lab>) goes into :data:`RUN_DIR` as soon as it is known. A run still going there (its make bench was killed, or lost
    the network) is reattached to instead of starting a second; one that ended unfollowed
    is brought home."""
    from pfslab import state

    if not (build_dir() / lab / "ssh" / "config").is_file() or not (build_dir() / lab / "ssh" / "config").stat().st_size:
        Remote(lab, tag()).write_ssh_config()
    login = Login.of(lab)
    found = recorded(login)
    if found is not None:
        name = found.name
        run_dir = runs / name
        run_dir.mkdir(parents=True, exist_ok=True)
        if found.state == "running":
            given = "; the options given are for a new run, once this one is home" if args else ""
            say(f"a run is going on login node {login.node} since {found.since}: reattaching (run {name}{given}); "
                "Ctrl-C ends it")
        else:
            again = " (the options given are for a new run: run make bench again)" if args else ""
            say(f"run {name} on login node {login.node} (since {found.since}) ended while no make bench followed it: "
                f"bringing it home{again}")
        # What an earlier make bench of this run showed, then the rest from where it stopped.
        shown = run_dir / "console.log"
        if shown.is_file() and shown.stat().st_size:
            sys.stdout.buffer.write(shown.read_bytes())
            sys.stdout.flush()
    else:
        try:
            run_dir = state.new_run_dir(lab, "", os.environ.get("PFSLAB_RUN_NAME") or None)
        except (ValueError, FileExistsError) as err:
            raise Refusal(str(err)) from None
        name = run_dir.name
        say(f"run directory: {run_dir} (launched on login node {login.node}, brought home when it ends)")
    RUN_DIR.append(run_dir)
    console = run_dir / "console.log"

    def stop(_signum: int, _frame: FrameType | None) -> None:
        raise Interrupted

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    rc = 0
    try:
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        rc = follow(login, name, console) if found is not None else bench(login, name, console, args)
    except Interrupted:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return _interrupted(login, name, run_dir)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if not fetch_run(login, name, run_dir) and rc == 0:
        rc = 1
    forget(login, name)
    report = run_dir / "report.json"
    if not report.is_file() or not report.stat().st_size:
        raise Refusal(f"the run on the login node wrote no report (exit status {rc}); what came home is in {run_dir}")
    print(f"raw outputs, job scripts and the JSON report: {run_dir}", flush=True)
    return rc
