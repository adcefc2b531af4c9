"""make bench's launch side (scripts/bench's logic, now pfslab bench): where a run goes,
the lab's lock shared with the shell's lock_lab, a detached run's record and follower,
and a remote run's safe unpacking and launch words."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from pfslab import registry
from pfslab.lifecycle import Refusal, bench, bench_launch, detached, lablock, login_run

KIT = Path(__file__).resolve().parents[2]


@pytest.fixture
def kit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout's build/ of its own for the launch side's files."""
    for module in (bench_launch, lablock, detached):
        monkeypatch.setattr(module, "KIT_ROOT", tmp_path)
    # main() exports the mode it finds (the run's provenance reads it): set here, so that
    # it is undone after each test.
    monkeypatch.setenv("PFSLAB_MODE", "")
    (tmp_path / "build").mkdir()
    return tmp_path


def _up(kit: Path, lab: str, inventory: dict[str, object]) -> None:
    (kit / "build" / "active-lab").write_text(lab + "\n")
    (kit / "build" / lab).mkdir(parents=True, exist_ok=True)
    (kit / "build" / lab / "inventory.json").write_text(json.dumps(inventory))


# ---- arguments and preconditions ----------------------------------------------------------

@pytest.mark.parametrize(("args", "mode"), [
    (["-n", "IOR", "--mode", "full"], "full"),
    (["--mode=quick", "-n", "x"], "quick"),
    (["-n", "--mode"], None),
    ([], None),
])
def test_the_mode_reframes_arguments_name_is_found(args: list[str], mode: str | None) -> None:
    assert bench_launch.mode_of_args(args) == mode


def test_no_lab_up_is_refused_in_one_line(kit: Path) -> None:
    with pytest.raises(Refusal, match=r"^no lab is up; run 'make lab-up' first \(LAB=local by default\)$"):
        bench_launch.main([])


def test_a_bad_mode_from_the_arguments_is_refused_naming_it(kit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _up(kit, "lab1", {"target": "local", "nodes": []})
    with pytest.raises(Refusal, match=r"^MODE=fast is not allowed; allowed: quick, full$"):
        bench_launch.main(["--mode", "fast"])
    assert os.environ["PFSLAB_MODE"] == "fast"


def test_a_lab_without_inventory_is_not_up(kit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (kit / "build" / "active-lab").write_text("lab1\n")
    with pytest.raises(Refusal, match=r"^lab lab1 is not up \(no inventory\); run 'make lab-up LAB=lab1'$"):
        bench_launch.main([])


def test_where_a_run_goes(kit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(detached.DETACHED_VAR, raising=False)
    went: list[str] = []

    def goes(where: str) -> int:
        went.append(where)
        return 0

    monkeypatch.setattr(bench, "run", lambda lab, args, given=None: goes(f"here {given}"))
    monkeypatch.setattr(bench_launch, "_remote", lambda lab, args: goes("login node"))
    monkeypatch.setattr(detached, "run", lambda lab, args: goes("detached"))
    targets = registry.targets().values()
    local = next(t for t in targets if t.namespaces)
    remote = next(t for t in targets if t.remote and not t.detached_runs)
    site = next(t for t in targets if t.detached_runs)
    for target, extra in ((local, {}), (remote, {}), (remote, {"inside": "cli0"}),
                          (site, {"inside": "local"})):
        _up(kit, "lab1", {"target": target.target, "nodes": [], **extra})
        assert bench_launch.main(["-n", "x"]) == 0
        lablock.release("lab1")
    assert went == ["here None", "login node", "here None", "detached"]
    # The detached run itself runs here (a site lab's inventory is the submit node's
    # inside view), in the run directory its launcher made.
    monkeypatch.setenv(detached.DETACHED_VAR, "/some/run")
    assert bench_launch.main([]) == 0
    lablock.release("lab1")
    assert went[-1] == "here /some/run"


# ---- the lab's lock --------------------------------------------------------------------------

def _shell_lock(kit: Path, lab: str) -> subprocess.CompletedProcess[str]:
    """The shell's lock_lab (scripts/lib/common.sh) on the same checkout."""
    return subprocess.run(["bash", "-c", f'source "{KIT}/scripts/lib/common.sh"; lock_lab "$1" lab-down', "_", lab],
                          env=dict(os.environ, PFSLAB_ROOT=str(kit)), capture_output=True, text=True, check=False)


def test_the_lock_is_the_shells_lock_and_names_its_holder(kit: Path) -> None:
    assert lablock.acquire("lab1", "bench")
    try:
        pid, _, what = (kit / "build" / "lab1" / "lock").read_text().split()
        assert (pid, what) == (str(os.getpid()), "bench")
        # lab-down (the shell's lock_lab) is refused while the bench holds it.
        assert _shell_lock(kit, "lab1").returncode != 0
        assert not lablock.unlocked("lab1", wait_s=0.1)
        assert lablock.busy("lab1").startswith(f"lab lab1 is busy: its bench (pid {os.getpid()}, since ")
        assert lablock.busy("lab1").endswith(" UTC) is still running; wait for it to end (or end it), then run this again")
    finally:
        lablock.release("lab1")
    assert lablock.unlocked("lab1", wait_s=0.1)
    # And a lock the shell holds refuses the bench, naming the shell's command.
    holder = subprocess.Popen(["bash", "-c", f'source "{KIT}/scripts/lib/common.sh"; lock_lab lab1 lab-up && exec sleep 30'],
                              env=dict(os.environ, PFSLAB_ROOT=str(kit)))
    try:
        deadline = time.monotonic() + 10
        while "lab-up" not in (kit / "build" / "lab1" / "lock").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert not lablock.acquire("lab1", "bench", wait_s=0.2)
        assert "its lab-up (pid " in lablock.busy("lab1")
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_is_not_inherited_by_what_the_run_starts(kit: Path) -> None:
    assert lablock.acquire("lab1", "bench")
    try:
        fds = subprocess.run(["ls", "/proc/self/fd"], capture_output=True, text=True, check=True).stdout.split()
        assert str(lablock._HELD["lab1"]) not in fds
    finally:
        lablock.release("lab1")


# ---- a detached run (site lab) -------------------------------------------------------------------

def _record(kit: Path, lab: str, name: str, pid: int) -> Path:
    d = kit / "build" / lab / "detached"
    d.mkdir(parents=True)
    (d / "run").write_text(name + "\n")
    (d / "since").write_text("2026-11-28T10:00:00Z\n")
    (d / "pid").write_text(f"{pid}\n")
    run_dir = kit / "build" / "runs" / lab / name
    run_dir.mkdir(parents=True)
    return run_dir


def test_a_recorded_run_is_running_ended_or_lost(kit: Path) -> None:
    assert detached.recorded("lab1") is None
    name = "20261128T100000Z"
    run_dir_text = f"{kit}/build/runs/lab1/{name}"
    # The detached shell's command line names the run directory (bash stays: two commands).
    child = subprocess.Popen(["bash", "-c", "sleep 30; :", run_dir_text])
    try:
        deadline = time.monotonic() + 10
        while run_dir_text.encode() not in Path(f"/proc/{child.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        run_dir = _record(kit, "lab1", name, child.pid)
        assert detached.recorded("lab1") == detached.Recorded(name, "2026-11-28T10:00:00Z", "running")
        # A live process that is not this run's (a pid reused after a restart) is not it.
        (kit / "build" / "lab1" / "detached" / "pid").write_text(f"{os.getpid()}\n")
        assert detached.recorded("lab1").state == "lost"  # type: ignore[union-attr]
        (run_dir / "status").write_text("1\n")
        assert detached.recorded("lab1").state == "ended"  # type: ignore[union-attr]
    finally:
        child.kill()
        child.wait()
    detached.forget("lab1", "20261128T999999Z")
    assert (kit / "build" / "lab1" / "detached").is_dir()
    detached.forget("lab1", name)
    assert not (kit / "build" / "lab1" / "detached").exists()


def test_the_follower_shows_everything_the_run_prints_and_returns_its_status(
        kit: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    name = "20261128T100000Z"
    run_dir = kit / "build" / "runs" / "lab1" / name
    run_dir.mkdir(parents=True)
    console = run_dir / "console.log"
    console.write_bytes(b"first\n")
    writer = subprocess.Popen(["bash", "-c", 'sleep 0.6; printf "second\\nlast, unterminated" >>"$0"; echo 3 >"$1"',
                               str(console), str(run_dir / "status")])
    d = kit / "build" / "lab1" / "detached"
    d.mkdir(parents=True)
    (d / "pid").write_text(f"{writer.pid}\n")
    try:
        assert detached.follow("lab1", run_dir) == 3
    finally:
        writer.wait()
    assert capfdbinary.readouterr().out == b"first\nsecond\nlast, unterminated"


def test_a_run_gone_without_a_status_ends_its_follower_with_one_line(
        kit: Path, capfd: pytest.CaptureFixture[str]) -> None:
    run_dir = kit / "build" / "runs" / "lab1" / "20261128T100000Z"
    run_dir.mkdir(parents=True)
    (run_dir / "console.log").write_text("half a run\n")
    assert detached.follow("lab1", run_dir) == 1
    captured = capfd.readouterr()
    assert captured.out == "half a run\n"
    assert ("[bench] run 20261128T100000Z ended without an exit status (its process was killed, or this machine "
            "restarted)") in captured.err


def test_a_run_that_ended_unfollowed_is_shown_once(kit: Path, capfd: pytest.CaptureFixture[str]) -> None:
    name = "20261128T100000Z"
    run_dir = _record(kit, "lab1", name, 0)
    (run_dir / "status").write_text("1\n")
    (run_dir / "verdict.txt").write_text("verdict: FAIL\n")
    assert detached.run("lab1", ["-n", "IOR"]) == 1
    out = capfd.readouterr()
    assert out.out == f"verdict: FAIL\nraw outputs, job scripts and the JSON report: {run_dir}\n"
    assert (f"[bench] run {name} (since 2026-11-28T10:00:00Z) ended while no make bench followed it; its end follows "
            f"(all of it: {run_dir}/console.log) (the options given are for a new run: run make bench again)") in out.err
    assert not (kit / "build" / "lab1" / "detached").exists()


def test_a_record_without_its_run_directory_is_refused(kit: Path) -> None:
    _record(kit, "lab1", "20261128T100000Z", 0)
    (kit / "build" / "runs" / "lab1" / "20261128T100000Z").rmdir()
    with pytest.raises(Refusal, match=r"records run 20261128T100000Z, which has no run directory .*; remove that folder$"):
        detached.run("lab1", [])


def test_a_busy_lab_is_refused_before_a_detached_run_is_made(kit: Path) -> None:
    assert lablock.acquire("lab1", "lab-up")
    try:
        with pytest.raises(Refusal, match=r"^lab lab1 is busy: its lab-up \(pid "):
            detached.run("lab1", [])
    finally:
        lablock.release("lab1")
    assert not (kit / "build" / "runs").exists()
    assert not (kit / "build" / "lab1" / "detached").exists()


def test_a_second_launch_while_a_run_is_recorded_fails_before_anything_starts(kit: Path) -> None:
    run_dir = _record(kit, "lab1", "20261128T100000Z", 0)
    with pytest.raises(Refusal, match=r"^could not record the run in .*/detached \(a run already recorded there\?"):
        detached.launch("lab1", run_dir, [])


# ---- a remote run: its launch words and what comes home --------------------------------------------

def test_launch_words_split_into_environment_and_bench_arguments() -> None:
    assert login_run.split_launch_words(["A=1", "B=x y", "--", "-n", "C=3"]) == (["A=1", "B=x y"], ["-n", "C=3"])
    # The parser may have dropped the "--".
    assert login_run.split_launch_words(["A=1", "-n", "IOR"]) == (["A=1"], ["-n", "IOR"])
    assert login_run.split_launch_words([]) == ([], [])


def _tar(path: Path, *members: tuple[str, str, str]) -> None:
    with tarfile.open(path, "w") as tar:
        for kind, name, extra in members:
            info = tarfile.TarInfo(name)
            info.uid = info.gid = 1000
            data = None
            if kind == "file":
                data = b"{}\n"
                info.size, info.mode = len(data), int(extra, 8)
            elif kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, extra
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, extra
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
            tar.addfile(info, io.BytesIO(data) if data else None)


@pytest.mark.parametrize(("member", "named"), [
    (("symlink", "./report.json", "/etc/shadow"), "./report.json -> /etc/shadow"),
    (("hardlink", "./passwd", "etc/passwd"), "./passwd link to etc/passwd"),
    (("fifo", "./pipe", ""), "./pipe"),
    (("file", "./a/../../up.json", "644"), "./a/../../up.json"),
    (("file", "/etc/cron.d/x", "644"), "/etc/cron.d/x"),
])
def test_a_run_archive_with_anything_but_plain_files_inside_is_refused_before_a_byte_is_unpacked(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], member: tuple[str, str, str], named: str) -> None:
    archive, dest = tmp_path / "run.tar", tmp_path / "home" / "run1"
    dest.mkdir(parents=True)
    _tar(archive, ("dir", ".", ""), ("file", "./job.out", "644"), member)
    assert not login_run.untar_plain(archive, dest)
    assert list(dest.iterdir()) == []
    assert (f"refused to unpack into {dest}: members that are not plain files or folders inside it ({named}); "
            "allowed: files and folders only") in capfd.readouterr().err


def test_plain_files_come_home_without_setuid_bits(tmp_path: Path) -> None:
    archive, dest = tmp_path / "run.tar", tmp_path / "run1"
    dest.mkdir()
    _tar(archive, ("dir", ".", ""), ("dir", "./out", ""), ("file", "./out/job.out", "4755"),
         ("file", "./report.json", "2644"))
    old = os.umask(0o022)
    try:
        assert login_run.untar_plain(archive, dest)
    finally:
        os.umask(old)
    assert (dest / "out" / "job.out").stat().st_mode & 0o7777 == 0o755
    assert (dest / "report.json").stat().st_mode & 0o7777 == 0o644
    assert (dest / "report.json").read_text() == "{}\n"


def test_something_that_is_not_an_archive_is_named(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run.tar").write_text("not a tar\n")
    assert not login_run.untar_plain(tmp_path / "run.tar", tmp_path)
    assert f"{tmp_path}/run.tar is not a tar archive" in capfd.readouterr().err


def test_the_reattach_limit_must_be_seconds_above_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PFSLAB_REATTACH_TIMEOUT", raising=False)
    assert login_run.reattach_limit() == 600
    for bad in ("soon", "0", "-5", "1.5"):
        monkeypatch.setenv("PFSLAB_REATTACH_TIMEOUT", bad)
        with pytest.raises(Refusal, match=f"^PFSLAB_REATTACH_TIMEOUT={bad} is not allowed; give a number of seconds"):
            login_run.reattach_limit()


def test_the_login_node_is_the_inventorys_login_else_its_first_client() -> None:
    from pfslab.model import Inventory

    assert Inventory.from_json({"target": "x", "login": "lg", "clients": ["c0"]}).login_node == "lg"
    assert Inventory.from_json({"target": "x", "clients": ["c0", "c1"]}).login_node == "c0"
    assert Inventory.from_json({"target": "x", "clients": []}).login_node == ""
    assert Inventory.from_json({"target": "x", "inside": "lg"}).inside == "lg"



# ---- the small commands around a run: drop-caches, baseline ---------------------------------------

def _lab_up_in(build: Path, monkeypatch: pytest.MonkeyPatch, inventory: dict[str, object]) -> None:
    monkeypatch.setenv("PFSLAB_BUILD", str(build))
    monkeypatch.delenv("PFSLAB_LAB", raising=False)
    (build / "lab1" / "ssh").mkdir(parents=True)
    (build / "lab1" / "ssh" / "config").write_text("Host *\n")
    (build / "lab1" / "inventory.json").write_text(json.dumps(inventory))
    (build / "active-lab").write_text("lab1\n")


def test_drop_caches_on_a_local_lab_drops_once_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pfslab.lifecycle import drop_caches

    local = next(t for t in registry.targets().values() if t.namespaces)
    _lab_up_in(tmp_path, monkeypatch, {"target": local.target, "nodes": [{"name": "a"}, {"name": "b"}]})
    drops: list[str] = []
    monkeypatch.setattr(drop_caches, "drop_here", lambda: drops.append("here"))
    assert drop_caches.main(None) == 0
    assert drops == ["here"]


def test_drop_caches_on_a_remote_lab_drops_on_every_node_and_counts_failures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pfslab.lifecycle import drop_caches

    remote = next(t for t in registry.targets().values() if t.remote)
    _lab_up_in(tmp_path, monkeypatch, {"target": remote.target,
                                       "nodes": [{"name": "mon0"}, {"name": "cli0"}, {"name": "cli1"}]})
    shims = tmp_path / "shims"
    shims.mkdir()
    # ssh -F CONFIG -n NODE COMMAND: recorded; cli1 does not answer.
    (shims / "ssh").write_text('#!/bin/bash\necho "$4 $5" >>"$0.log"\n[[ $4 != cli1 ]] || exit 255\n')
    (shims / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    with pytest.raises(Refusal, match=r"^could not drop caches on 1 node\(s\) of lab lab1$"):
        drop_caches.main("lab1")
    assert sorted((shims / "ssh.log").read_text().splitlines()) == [
        f"{n} {drop_caches.COMMAND}" for n in ("cli0", "cli1", "mon0")]


def test_drop_caches_without_a_lab_up_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pfslab.lifecycle import drop_caches

    monkeypatch.setenv("PFSLAB_BUILD", str(tmp_path))
    monkeypatch.delenv("PFSLAB_LAB", raising=False)
    with pytest.raises(Refusal, match=r"^no lab is up; run 'make lab-up' first$"):
        drop_caches.main(None)
    with pytest.raises(Refusal, match=r"^lab lab2 is not up \(no .*/lab2/inventory.json\)$"):
        drop_caches.main("lab2")
    with pytest.raises(Refusal, match=r"^LAB=../x is not a lab name"):
        drop_caches.main("../x")


def test_a_baseline_needs_two_runs_or_more_and_takes_each_runs_newest_directory(tmp_path: Path) -> None:
    from pfslab.lifecycle import baseline_runs

    for bad in ("1", "two", "", "-3"):
        with pytest.raises(Refusal, match=f"^REPEAT={bad} is not allowed; a baseline needs a whole number of runs, at least 2$"):
            baseline_runs.repeat_of(bad)
    assert baseline_runs.repeat_of("3") == 3
    runs = tmp_path / "runs"
    for name, age in (("20261128T090000Z", 100), ("20261128T100000Z", 0), ("20261128T100001Z", 0)):
        (runs / name).mkdir(parents=True)
        os.utime(runs / name, (time.time() - age, time.time() - age))
    assert baseline_runs.newest_since(runs, time.time() - 50) == runs / "20261128T100001Z"
    assert baseline_runs.newest_since(runs, time.time() + 50) is None
    assert baseline_runs.newest_since(tmp_path / "none", 0) is None


# ---- the run recorded on a remote lab's login node, through an ssh that runs here -------------------

@pytest.fixture
def login_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A remote lab whose login node cli0 is this machine under a scratch kit folder (an
    ssh stand-in runs the command here); the login node's record folder."""
    build, root = tmp_path / "build", tmp_path / "login" / "opt" / "pfslab"
    (build / "lab1" / "ssh").mkdir(parents=True)
    (build / "lab1" / "ssh" / "config").write_text("Host *\n")
    remote = next(t for t in registry.targets().values() if t.remote)
    (build / "lab1" / "inventory.json").write_text(json.dumps(
        {"target": remote.target, "login": "cli0", "nodes": [{"name": "cli0", "address": "10.0.0.2"}]}))
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "ssh").write_text('#!/bin/bash\n[[ ! -e "$0.down" ]] || { echo "ssh: connect to host 10.0.0.2 port 22: '
                               'Connection refused" >&2; exit 255; }\nexec bash -c "$5"\n')
    (shims / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    monkeypatch.setenv("PFSLAB_BUILD", str(build))
    monkeypatch.setenv("PFSLAB_REMOTE_ROOT", str(root))
    return root / "build" / "lab1" / "detached"


def test_the_run_recorded_on_the_login_node(login_here: Path, tmp_path: Path) -> None:
    login = login_run.Login.of("lab1")
    assert login.node == "cli0"
    assert login_run.recorded(login) is None
    login_here.mkdir(parents=True)
    (login_here / "run").write_text("20261128T100000Z\n")
    (login_here / "since").write_text("2026-11-28T10:00:00Z\n")
    assert login_run.recorded(login) == login_run.Recorded("20261128T100000Z", "2026-11-28T10:00:00Z", "lost")
    (login_here / "status").write_text("0\n")
    assert login_run.recorded(login).state == "ended"  # type: ignore[union-attr]
    (login_here / "run").write_text("../../etc\n")
    with pytest.raises(Refusal, match=r"^login node cli0 records a run that is not the kit's \(run name '../../etc'"):
        login_run.recorded(login)
    (tmp_path / "shims" / "ssh.down").touch()
    with pytest.raises(Refusal, match="cli0"):
        login_run.recorded(login)


def test_lab_up_is_refused_only_while_a_run_goes_on_a_login_node_whose_key_is_known(
        login_here: Path, tmp_path: Path) -> None:
    name = "20261128T100000Z"
    login_here.mkdir(parents=True)
    (login_here / "run").write_text(name + "\n")
    (login_here / "since").write_text("2026-11-28T10:00:00Z\n")
    child = subprocess.Popen(["bash", "-c", "sleep 30; :", name])
    try:
        (login_here / "pid").write_text(f"{child.pid}\n")
        deadline = time.monotonic() + 10
        while name.encode() not in Path(f"/proc/{child.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        login_run.refuse_running("lab1")  # no host key of cli0 recorded: not asked
        (tmp_path / "build" / "lab1" / "ssh" / "known_hosts").write_text("cli0 ssh-ed25519 AAAA\n")
        with pytest.raises(Refusal, match=(r"^a run of lab lab1 is going on its login node cli0 since "
                                           r"2026-11-28T10:00:00Z \(run 20261128T100000Z\): 'make bench' reattaches")):
            login_run.refuse_running("lab1")
    finally:
        child.kill()
        child.wait()
    login_run.refuse_running("lab1")  # lost: nothing to refuse


def test_a_follow_session_killed_by_a_signal_reads_as_the_shell_says_it(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """ssh killed by SIGKILL: 137 (128 + 9), as bash's wait gives; Popen's -9 would print
    "exit status -9" in the reattach line."""
    login = login_run.Login.__new__(login_run.Login)
    monkeypatch.setattr(login_run.Login, "argv", lambda self, script: ["sh", "-c", "echo one; kill -9 $$"])
    monkeypatch.setattr(login_run.Login, "detached", property(lambda self: "/nowhere"))
    console = tmp_path / "console.log"
    assert login_run.follow_once(login, "run1", console, 0) == 137
    assert console.read_text() == "one\n"
