"""ReFrame dry runs of the seed labs write the seeds' own command lines.

For every seed lab, ``reframe -c reframe/ --dry-run --system <lab>`` runs in a
temporary kit tree whose ``build/`` is empty (so a lab running in this checkout is
not the active one), with its own run directory. Each generated ``rfm_job.sh`` is read
back, every ``pfslab_step N OUTPUT 'COMMAND'`` line and the executable's line (the one
before ``pfslab_done``: launcher, tool, options) is shlex-split, and the tokens are
compared, flag by flag, with the command the seed prints, its variables ($Threads,
my_hosts.$Threads, $Directories, $Size ...) filled in. Where a seed prints no
command (NSS, the CephFS study, PixStor's FIO) the parameters it states are checked.
The dry runs of all seed labs together must take under 60 s.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pfslab import labs, mpi_options, scheduler, toolchain, workloads
from pfslab.tools import ior_options, iozone_options

KIT = Path(__file__).resolve().parents[2]
REFRAME = KIT / ".venv" / "bin" / "reframe"
CONFIG = KIT / "reframe" / "config" / "settings.py"
SEED_LABS = ["pixstor-capex", "nss73-ha", "beegfs-small", "beegfs-small+1", "beegfs-small+2", "beegfs-medium",
             "beegfs-medium+1", "cephfs-stria"]

pytestmark = pytest.mark.skipif(not REFRAME.exists(), reason=f"{REFRAME} is missing: run 'make deps'")


def shipped(lab: str) -> bool:
    return (KIT / "labs" / f"{lab}.yaml").is_file()


def not_shipped_reason(lab: str) -> str:
    return f"lab {lab} is not in labs/"


# ---- running the dry runs --------------------------------------------------------------

@dataclass
class Job:
    """One generated job script: its case, stage directory and steps in order."""

    case: str
    stage: Path
    scratch: str = ""
    events: list[tuple[str, list[str]]] = field(default_factory=list)  # ("drop", []) or ("run", tokens)

    @property
    def runs(self) -> list[list[str]]:
        return [tokens for kind, tokens in self.events if kind == "run"]

    def file(self, name: str) -> str:
        return (self.stage / name).read_text()


@dataclass
class DryRun:
    lab: str
    seconds: float
    jobs: dict[str, Job]  # case -> job


def read_job(case: str, stage: Path) -> Job:
    job = Job(case, stage)
    lines = (stage / "rfm_job.sh").read_text().splitlines()
    for before, line in zip(["", *lines], lines):
        if line.startswith("pfslab_done "):
            # The measured step: ReFrame's executable, after its launcher.
            job.events.append(("run", shlex.split(before)))
        elif line.startswith("mkdir -p "):
            job.scratch = shlex.split(line)[2]
        elif line.strip() == '"$PFSLAB_ROOT/scripts/drop-caches"':
            job.events.append(("drop", []))
        elif line.startswith("pfslab_step "):
            _, _, _, command = shlex.split(line)
            job.events.append(("run", shlex.split(command)))
    return job


def dry_run(lab: str, root: Path, run_dir: Path, only: tuple[str, ...] = ()) -> DryRun:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RFM_", "PFSLAB_"))}
    env.update(RFM_CONFIG_FILES=str(CONFIG), PFSLAB_RUN_DIR=str(run_dir), PFSLAB_ROOT=str(root))
    # --exec-policy=serial, as scripts/dry-run: the asynchronous policy's polling
    # sleeps make a dry run about 2.5 times slower and nothing runs anyway.
    cmd = [str(REFRAME), "-c", str(KIT / "reframe"), "--dry-run", "--system", labs.system_name(lab),
           "--exec-policy=serial", "--nocolor", *(arg for name in only for arg in ("-n", name))]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=KIT, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, f"dry run of {lab} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    report = json.loads((run_dir / "report.json").read_text())
    jobs = {}
    for testcase in report["runs"][0]["testcases"]:
        if testcase["result"] == "skip" and only:
            continue  # a selection may hold a workload of another file system (skipped, as in every run)
        assert testcase["result"] == "pass", f"{lab}: {testcase['name']}: {testcase.get('fail_reason')}"
        jobs[testcase["case"]] = read_job(testcase["case"], Path(testcase["stagedir"]))
    return DryRun(lab, seconds, jobs)


def kit_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The kit with an empty build/: no lab is up in this tree."""
    root = tmp_path_factory.mktemp("kit")
    (root / "build").mkdir()
    for name in ("families", "labs", "pfslab", "registry", "reframe", "scripts", "spack", "targets", "terraform"):
        (root / name).symlink_to(KIT / name)
    return root


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, DryRun]:
    root = kit_tree(tmp_path_factory)
    out = {}
    for lab in SEED_LABS:
        if shipped(lab):
            out[lab] = dry_run(lab, root, tmp_path_factory.mktemp("run"))
    return out


def test_every_job_script_runs_the_prelude_file_without_its_header(dry_runs: dict[str, DryRun]) -> None:
    """scripts/lib/job-prelude.sh, where shellcheck sees it, is what job scripts run:
    its lines below the leading comment lines, in one piece, right after the kit root."""
    lines = (KIT / "scripts" / "lib" / "job-prelude.sh").read_text().splitlines()
    body = "\n".join(itertools.dropwhile(lambda line: line.startswith("#"), lines))
    assert body.startswith("pfslab_status=0\n")
    for run in dry_runs.values():
        for job in run.jobs.values():
            text = job.file("rfm_job.sh")
            assert re.search(r"^export PFSLAB_ROOT=\S+\n" + re.escape(body) + "\n", text, re.M), job.case
            assert "# shellcheck" not in text, job.case


def test_every_seed_lab_dry_runs_and_its_time_is_printed(dry_runs: dict[str, DryRun]) -> None:
    # A figure to read, not a verdict: wall time on a shared 2-core machine says more
    # about the neighbours than about the kit (the standards: no timed unit tests).
    total = sum(r.seconds for r in dry_runs.values())
    each = ", ".join(f"{r.lab} {r.seconds:.1f} s ({len(r.jobs)} jobs)" for r in dry_runs.values())
    print(f"\ndry runs of {len(dry_runs)} seed labs: {total:.1f} s ({each})")
    assert sorted(dry_runs) == sorted(SEED_LABS)
    assert all(r.jobs for r in dry_runs.values()), f"a seed lab wrote no job script: {each}"


# ---- filling in the seeds' commands ----------------------------------------------------

def fill(seed_command: str, values: dict[str, str]) -> list[str]:
    """The seed's command as tokens, each variable token (or $var inside one) replaced."""
    tokens = []
    for token in shlex.split(seed_command):
        if token in values:
            tokens.append(values[token])
            continue
        for var in sorted((k for k in values if k.startswith("$")), key=len, reverse=True):
            token = token.replace(var, values[var])
        tokens.append(token)
    return tokens


def as_run(seed: list[str], seed_launcher: str, launcher: str, np: int, hostfile: str) -> list[str]:
    """The seed's filled command as the kit runs it: its mpirun part, which the lab file
    keeps verbatim beside the line that runs (seed_mpirun / seed_launcher), replaced by
    that line (the lab's launcher.deviation says why they differ)."""

    def filled(line: str) -> list[str]:
        return shlex.split(line.replace("{np}", str(np)).replace("{hostfile}", hostfile))

    kept = filled(seed_launcher)
    assert seed[:len(kept)] == kept, f"the lab's seed line {seed_launcher!r} is not the seed's: {seed[:len(kept)]}"
    return filled(launcher) + seed[len(kept):]


def threads_of(case: str) -> int:
    point = case.rsplit("/", 1)[1]
    if "x" in point:
        nodes, per_node = point.split("x")
        return int(nodes) * int(per_node)
    return int(point)


def jobs_of(run: DryRun, workload: str) -> list[Job]:
    jobs = [j for c, j in run.jobs.items() if c.split("/")[1] == workload]
    assert jobs, f"{run.lab}: no job for workload {workload}"
    return sorted(jobs, key=lambda j: threads_of(j.case))


#: Table 3 (000) / Table 5 (002): directories per thread for 2^21 files, 1024 per directory.
DIRECTORIES = {1: 2048, 2: 1024, 4: 512, 8: 256, 16: 128, 32: 64, 64: 32, 128: 16, 256: 8, 512: 4, 1024: 2, 2048: 1}


def round_robin(threads: int, clients: int) -> list[str]:
    return [f"cli{i % clients}" for i in range(threads)]


# ---- PixStor (000) ---------------------------------------------------------------------

PIXSTOR_IOZONE = [
    "./iozone -i0 -c -e -w -r 8M -s 128G -t $Threads -+n -+m ./threadlist",
    "./iozone -i1 -c -e -w -r 8M -s 128G -t $Threads -+n -+m ./threadlist",
]
PIXSTOR_IOR = [
    "mpirun --allow-run-as-root -np $Threads --hostfile my_hosts.$Threads --mca btl_openib_allow_ib 1 --mca pml ^ucx "
    "--oversubscribe --prefix /mmfs1/perftest/ompi /mmfs1/perftest/lanl_ior/bin/ior -a POSIX -v -i 1 -d 3 -e -k -o "
    "/mmfs1/perftest/tst.file -w -s 1 -t 8m -b 128G",
    "mpirun --allow-run-as-root -np $Threads --hostfile my_hosts.$Threads --mca btl_openib_allow_ib 1 --mca pml ^ucx "
    "--oversubscribe --prefix /mmfs1/perftest/ompi /mmfs1/perftest/lanl_ior/bin/ior -a POSIX -v -i 1 -d 3 -e -k -o "
    "/mmfs1/perftest/tst.file -r -s 1 -t 8m -b 128G",
]
PIXSTOR_MDTEST = (
    "mpirun --allow-run-as-root -np $Threads --hostfile my_hosts.$Threads --prefix /mmfs1/perftest/ompi --mca "
    "btl_openib_allow_ib 1 /mmfs1/perftest/lanl_ior/bin/mdtest -v -d /mmfs1/perftest/ -i 1 -b $Directories -z 1 -L "
    "-I 1024 -y -u -t -F"
)


def check_pixstor(run: DryRun) -> None:
    lab = labs.load(run.lab)
    launcher = lab["launcher"]
    assert launcher["deviation"] and "--prefix" not in launcher["mpirun"]
    for job in jobs_of(run, "iozone-seq"):
        t = threads_of(job.case)
        values = {"./iozone": "iozone", "./threadlist": f"{job.stage}/threadlist.{t}", "$Threads": str(t)}
        assert job.runs == [fill(c, values) for c in PIXSTOR_IOZONE], job.case
        # "threadlist was the file that allocated each thread on a different node, using round robin"
        assert [line.split()[0] for line in job.file(f"threadlist.{t}").splitlines()] == round_robin(t, 16)
    assert [threads_of(j.case) for j in jobs_of(run, "iozone-seq")] == [2**i for i in range(11)]  # 1 to 1024

    for job in jobs_of(run, "ior-n1"):
        t = threads_of(job.case)
        values = {"my_hosts.$Threads": f"{job.stage}/hosts.{t}", "$Threads": str(t),
                  "/mmfs1/perftest/lanl_ior/bin/ior": "ior", "/mmfs1/perftest/tst.file": f"{job.scratch}/ior.file"}
        hostfile = f"{job.stage}/hosts.{t}"
        assert job.runs == [as_run(fill(c, values), launcher["seed_mpirun"], launcher["mpirun"], t, hostfile)
                            for c in PIXSTOR_IOR], job.case
        # my_hosts.$Threads: one line per rank, round robin over the 16 clients
        assert job.file(f"hosts.{t}").split() == round_robin(t, 16)
    assert [threads_of(j.case) for j in jobs_of(run, "ior-n1")] == [2**i for i in range(10)]  # 1 to 512

    for workload, extra in (("mdtest-empty", ""), ("mdtest-4k", " -w 4K -e 4K")):
        seen = []
        for job in jobs_of(run, workload):
            t = threads_of(job.case)
            values = {"my_hosts.$Threads": f"{job.stage}/hosts.{t}", "$Threads": str(t), "$Directories": str(DIRECTORIES[t]),
                      "/mmfs1/perftest/lanl_ior/bin/mdtest": "mdtest", "/mmfs1/perftest/": job.scratch}
            own = workloads.find(lab, workload)
            assert job.runs == [as_run(fill(PIXSTOR_MDTEST + extra, values), own["seed_launcher"], own["launcher"], t,
                                       f"{job.stage}/hosts.{t}")], job.case
            seen.append(t)
        assert seen == [2**i for i in range(10)]  # every row of Table 3 up to 512 threads

    # FIO: the seed prints no command; its parameters are checked. It runs with the
    # lab's (mapped) IOR launcher.
    pixstor_mpirun = shlex.split(launcher["mpirun"])
    for job in jobs_of(run, "fio-rand4k"):
        t = threads_of(job.case)
        nodes = min(t, 16)
        for tokens, rw in zip(job.runs, ("randwrite", "randread")):
            launcher = [x.replace("{np}", str(nodes)).replace("{hostfile}", f"{job.stage}/nodes.{nodes}")
                        for x in pixstor_mpirun]
            assert tokens[:len(launcher)] == launcher and tokens[len(launcher):len(launcher) + 2] == ["sh", "-c"]
            script = tokens[-1]
            assert f"--numjobs=$(( {t} / {nodes} + (r < {t} % {nodes}) ))" in script  # t threads in all
            fio = shlex.split(script.split(".json ", 1)[1])
            assert {f"--rw={rw}", "--bs=4k", "--iodepth=16", "--size=32G", f"--directory={job.scratch}",
                    "--filename_format=rand4k.$r.$jobnum"} <= set(fio), job.case  # one file per thread


# ---- BeeGFS (002) ----------------------------------------------------------------------

BEEGFS_IOZONE_SEQ = "iozone -i 0 -i 1 -c -e -w -r 1m -I -s $Size -t $Thread -+n -+m /path/to/threadlist"
BEEGFS_IOZONE_RAND = "iozone -i 2 -w -c -O -I -r 4K -s $Size -t $Thread -+n -+m /path/to/threadlist"
BEEGFS_IOR = (
    "mpirun -machinefile $hostlist --map-by node -np $threads -mca btl openib,self ~/bin/ior -w -r -i 3 -d 3 -e -O "
    "beegfsNumTargets=33,beegfsChunkSize=2M -o $working_dir/ior.out -s 1 -g -t 2M -b $file_size"
)
BEEGFS_MDTEST = "mpirun -machinefile $hostlist --map-by node -np $threads ~/bin/mdtest -i 3 -b $Directories -z 1 -L -I 1024 -y -u -t -F"
#: Storage targets of each configuration (5.4: "storage pools were created from 15 to 39 storage targets").
TARGETS = {"beegfs-small": 15, "beegfs-small+1": 21, "beegfs-small+2": 27, "beegfs-medium": 33, "beegfs-medium+1": 39}


def eight_tib_over(threads: int) -> str:
    """$Size: "An aggregate file size of 8TB was selected which was equally divided among the number of threads",
    in GiB: IOzone reads k, m and g only (8t would be 8 KiB)."""
    return f"{8192 // threads}g"


def slots(threads: int, clients: int) -> list[str]:
    base, extra = divmod(threads, clients)
    return [f"cli{k} slots={base + (k < extra)}" for k in range(clients) if base + (k < extra)]


def check_beegfs(run: DryRun) -> None:
    launcher = labs.load(run.lab)["launcher"]
    drop: tuple[str, tuple[str, ...]] = ("drop", ())
    for job in jobs_of(run, "iozone-seq"):
        t = threads_of(job.case)
        values = {"$Size": eight_tib_over(t), "$Thread": str(t), "/path/to/threadlist": f"{job.stage}/threadlist.{t}"}
        seed = fill(BEEGFS_IOZONE_SEQ, values)
        # three iterations (the mean is reported), caches dropped before each
        assert [(k, tuple(v)) for k, v in job.events] == [drop, ("run", tuple(seed))] * 3, job.case
        assert [line.split()[0] for line in job.file(f"threadlist.{t}").splitlines()] == round_robin(t, 32)
    assert [threads_of(j.case) for j in jobs_of(run, "iozone-seq")] == [2**i for i in range(11)]

    for job in jobs_of(run, "iozone-rand"):
        t = threads_of(job.case)
        values = {"$Size": eight_tib_over(t), "$Thread": str(t), "/path/to/threadlist": f"{job.stage}/threadlist.{t}"}
        seed = ("run", tuple(fill(BEEGFS_IOZONE_RAND, values)))
        prepare = ("run", tuple(fill("iozone -i 0 -c -e -w -r 1m -I -s $Size -t $Thread -+n -+m /path/to/threadlist", values)))
        events = [(k, tuple(v)) for k, v in job.events]
        # the kit's prepare step writes the files, caches are dropped, then the seed's command, three times
        assert events == [drop, prepare, drop, seed, drop, drop, seed, drop, drop, seed], job.case
    assert [threads_of(j.case) for j in jobs_of(run, "iozone-rand")] == [2**i for i in range(2, 11)]  # 4 to 1024

    for job in jobs_of(run, "ior-n1"):
        t = threads_of(job.case)
        values = {"$hostlist": f"{job.stage}/hosts.{t}", "$threads": str(t), "~/bin/ior": "ior",
                  "$working_dir/ior.out": f"{job.scratch}/ior.file", "$file_size": "128G",
                  "beegfsNumTargets=33,beegfsChunkSize=2M": f"beegfsNumTargets={TARGETS[run.lab]},beegfsChunkSize=2M"}
        assert job.runs == [as_run(fill(BEEGFS_IOR, values), launcher["seed_mpirun"], launcher["mpirun"], t,
                                   f"{job.stage}/hosts.{t}")], job.case
        assert job.file(f"hosts.{t}").splitlines() == slots(t, 32)  # --map-by node cycles over these
    assert [threads_of(j.case) for j in jobs_of(run, "ior-n1")] == [2**i for i in range(10)]

    seen = []
    for job in jobs_of(run, "mdtest-empty"):
        t = threads_of(job.case)
        values = {"$hostlist": f"{job.stage}/hosts.{t}", "$threads": str(t), "~/bin/mdtest": "mdtest",
                  "$Directories": str(DIRECTORIES[t])}
        # + -d: the seed's line has none (it ran in the current directory on BeeGFS)
        assert job.runs == [fill(BEEGFS_MDTEST, values) + ["-d", job.scratch]], job.case
        seen.append(t)
    assert seen == [2**i for i in range(12)]  # every row of Table 5: 1 to 2048 threads


# ---- NSS (001): the seed gives parameters, not commands ---------------------------------

def check_nss(run: DryRun) -> None:
    mpirun = ["mpirun", "--allow-run-as-root", "-np"]
    for job in jobs_of(run, "iozone-seq"):
        t = threads_of(job.case)
        write, read = job.runs
        for tokens, test in ((write, "0"), (read, "1")):
            assert tokens[tokens.index("-i") + 1] == test
            # "Anforderungsgröße von 1024 KiB", "Gesamtmenge ... 256 GiB"
            assert tokens[tokens.index("-r") + 1] == "1024k"
            assert tokens[tokens.index("-s") + 1] == f"{256 // t}g" and tokens[tokens.index("-t") + 1] == str(t)
        assert [line.split()[0] for line in job.file(f"threadlist.{t}").splitlines()] == round_robin(t, 32)
    assert [threads_of(j.case) for j in jobs_of(run, "iozone-seq")] == [1, 2, 4, 8, 16, 32, 64]
    for job in jobs_of(run, "iozone-rand"):
        random = job.runs[-1][1:]  # after the tool
        # "Anforderungsgröße von 4 KiB ... jeder Client hat eine Datei von 4 GiB"
        assert random[:2] == ["-i", "2"] and random[random.index("-r") + 1] == "4K" and random[random.index("-s") + 1] == "4G"
    for job in jobs_of(run, "mdtest"):
        t = threads_of(job.case)
        (tokens,) = job.runs
        assert tokens[:len(mpirun)] == mpirun and tokens[3] == str(t)
        assert {"-C", "-T", "-r"} <= set(tokens) and "-E" not in tokens  # create, stat, remove
        assert tokens[tokens.index("-b") + 1] == str(DIRECTORIES[t])
        # 2, 4, 8, 16 threads per client from 64 threads on: round robin over 32 clients
        assert job.file(f"hosts.{t}").split() == round_robin(t, 32)
    assert [threads_of(j.case) for j in jobs_of(run, "mdtest")] == [2**i for i in range(10)]


# ---- CephFS on Stria (003): bullet-point parameters ---------------------------------------

def check_cephfs(run: DryRun) -> None:
    for transfer in ("512k", "1m"):
        for block in ("1m", "2m", "4m"):
            jobs = jobs_of(run, f"ior-t{transfer}-b{block}")
            points = sorted(j.case.rsplit("/", 1)[1] for j in jobs)
            assert points == sorted(f"{n}x{p}" for n in (2, 4, 8) for p in (1, 2, 4))  # 2, 4, 8 clients x 1, 2, 4
            for job in jobs:
                nodes, per_node = (int(x) for x in job.case.rsplit("/", 1)[1].split("x"))
                (tokens,) = job.runs
                assert tokens[tokens.index("-np") + 1] == str(nodes * per_node)
                assert job.file(f"hosts.{nodes}x{per_node}").splitlines() == [f"cli{k} slots={per_node}" for k in range(nodes)]
                args = tokens[tokens.index("ior") + 1:]
                assert args[args.index("-i") + 1] == "10000"  # "10,000 Iterations"
                assert args[args.index("-t") + 1] == transfer and args[args.index("-b") + 1] == block
                assert "-w" in args and "-r" not in args  # "IOR writes"
                assert {"-e", "--posix.odirect"} <= set(args)  # write caching mitigated (the kit's way)
    groups = {"mdtest-create-remove": {"-C", "-r"}, "mdtest-stat-read": {"-C", "-T", "-E", "-r"}, "mdtest-tree": {"-C", "-r"}}
    for workload, phases in groups.items():
        jobs = jobs_of(run, workload)
        assert sorted(j.case.rsplit("/", 1)[1] for j in jobs) == ["8x1", "8x2", "8x4"]  # 8 client nodes x 1, 2, 4
        for job in jobs:
            (tokens,) = job.runs
            args = tokens[tokens.index("mdtest") + 1:]
            # "Treedepth = 3, Treewidth = 3, Filecount = 5", "300 iterations"
            assert args == ["-d", job.scratch, "-i", "300", "-z", "3", "-b", "3", "-I", "5", *sorted(phases, key=args.index)]
    (ioshell,) = jobs_of(run, "ioshell-copy")
    generate, *copies = ioshell.runs
    assert generate[:3] == ["io_shell", "--in_type", "generated"] and len(copies) == 7  # "Average of 7 iterations"
    assert all(c == ["io_shell", f"{ioshell.scratch}/mesh.e", f"{ioshell.scratch}/copy.e"] for c in copies)
    for job in jobs_of(run, "lammps-dump"):
        (tokens,) = job.runs
        assert tokens[tokens.index("lmp") + 1:] == ["-in", f"{job.stage}/in.lammps", "-log", "none"]
        text = job.file("in.lammps")
        # "1000 timestep run", "Dumps program state every 100 steps"
        assert re.search(r"^run\s+1000$", text, re.M) and re.search(r"^dump\s+\S+\s+all\s+custom\s+100\s", text, re.M)
        assert f"{job.scratch}/dump.*.lammpstrj" in text  # POSIX I/O into the file system


CHECKS = {"pixstor-capex": check_pixstor, "nss73-ha": check_nss, "cephfs-stria": check_cephfs,
          **{lab: check_beegfs for lab in TARGETS}}


@pytest.mark.parametrize("lab", SEED_LABS)
def test_dry_run_writes_the_seeds_commands(lab: str, dry_runs: dict[str, DryRun]) -> None:
    if not shipped(lab):
        pytest.skip(not_shipped_reason(lab))
    CHECKS[lab](dry_runs[lab])


# ---- the cloud and bare-metal reproductions ---------------------------------------------

def remote_reproductions() -> list[str]:
    return [name for name in labs.lab_names()
            if name not in SEED_LABS and labs.load(name)["target"] != "local"]


@pytest.fixture(scope="module")
def remote_dry_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, DryRun]:
    root = kit_tree(tmp_path_factory)
    return {lab: dry_run(lab, root, tmp_path_factory.mktemp("run")) for lab in remote_reproductions()}


@pytest.mark.parametrize("lab", remote_reproductions())
def test_every_reproduction_writes_a_job_for_each_workload(lab: str, remote_dry_runs: dict[str, DryRun]) -> None:
    workload_ids = {w["id"] for w in labs.load(lab)["workloads"]}
    written = {case.split("/")[1] for case in remote_dry_runs[lab].jobs}
    assert workload_ids, f"lab {lab} has no workloads (its own, or those of the lab it reproduces)"
    assert written == workload_ids, f"{lab}: jobs for {sorted(written)}, workloads {sorted(workload_ids)}"


def test_a_reproduction_without_workloads_runs_the_seeds_commands_with_its_own_settings(
    remote_dry_runs: dict[str, DryRun],
) -> None:
    lab = labs.load("azure-beegfs-medium")
    assert lab["reproduces"] == "beegfs-medium"
    assert lab["workloads"] == labs.load("beegfs-medium")["workloads"]
    job = remote_dry_runs["azure-beegfs-medium"].jobs["azure-beegfs-medium/ior-n1/512"]
    (command,) = job.runs
    ior = command[command.index("ior"):]
    # The seed's line, its target count taken from this lab's pool (11, not the seed's 33).
    assert ior[:9] == ["ior", "-w", "-r", "-i", "3", "-d", "3", "-e", "-O"]
    assert ior[9] == "beegfsNumTargets=11,beegfsChunkSize=2M"
    assert command[:3] == ["mpirun", "-np", "512"]
    script = (job.stage / "rfm_job.sh").read_text()
    # The lab file's launcher environment reaches the job, as the inventory's does on a real run.
    # The kit's remote shell from the login node (registry/launcher.json) replaces the seed's plain ssh.
    assert "export RSH=/opt/pfslab/scripts/lab-rsh" in script.splitlines()
    assert "export OMPI_MCA_pml=ucx" in script.splitlines()


def test_remote_jobs_start_ranks_from_the_login_node_over_the_labs_own_ssh(remote_dry_runs: dict[str, DryRun]) -> None:
    """registry/launcher.json reaches every remote lab's job scripts (as the lab plan puts
    it in the inventory for real runs): ranks over scripts/lab-rsh, on the lab's subnet.
    A lab with a scheduler is not one of them: Slurm starts its ranks (test_workloads)."""
    own_ssh = {name: run for name, run in remote_dry_runs.items() if scheduler.kind(labs.load(name)) is None}
    assert own_ssh and len(own_ssh) < len(remote_dry_runs)
    for name, run in own_ssh.items():
        subnet = labs.load(name)["network"]["subnet"]
        for job in run.jobs.values():
            lines = job.file("rfm_job.sh").splitlines()
            assert "export OMPI_MCA_plm_rsh_agent=/opt/pfslab/scripts/lab-rsh" in lines, job.case
            assert "export OMPI_MCA_plm_rsh_no_tree_spawn=1" in lines, job.case
            assert f"export OMPI_MCA_btl_tcp_if_include={subnet}" in lines, job.case


# ---- every MPI option is one the locked Open MPI accepts ---------------------------------

def job_mpi_settings(job: Job) -> tuple[dict[str, str], list[list[str]]]:
    """The job's exported environment and its mpirun command lines."""
    env = {}
    for line in job.file("rfm_job.sh").splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export "):].partition("=")
            env[key] = " ".join(shlex.split(value))
    return env, [tokens for tokens in job.runs if tokens and tokens[0] == "mpirun"]


def test_every_mpi_option_of_every_job_is_accepted_by_every_locked_open_mpi(
    dry_runs: dict[str, DryRun], remote_dry_runs: dict[str, DryRun],
) -> None:
    """Seed and cloud labs' job scripts: mpirun options against the option list of each
    Open MPI version in spack.lock, --mca / OMPI_MCA_* against its frameworks and built
    components (spack/openmpi-components.json). A job runs with its lab's view's Open MPI
    (benchmark.toolchain: the seed view's 4.1.8 or the default view's 5.0.8), and a lab
    can be switched to the other view, so both must accept it."""
    builds = mpi_options.locked()
    assert [m.version for m in builds] == mpi_options.versions(), "the lock's Open MPIs and the component list differ"
    problems: dict[str, set[str]] = {}
    checked = 0
    for run in [*dry_runs.values(), *remote_dry_runs.values()]:
        for job in run.jobs.values():
            env, commands = job_mpi_settings(job)
            for mpi in builds:
                found = mpi_options.check_env(mpi, env)
                for tokens in commands:
                    found += mpi_options.check_command(mpi, tokens)
                    checked += 1
                for problem in found:
                    problems.setdefault(problem, set()).add(f"{run.lab} (Open MPI {mpi.version})")
    print(f"\n{checked} mpirun lines of {len(dry_runs) + len(remote_dry_runs)} labs checked against "
          + ", ".join(f"Open MPI {m.version} fabrics={','.join(sorted(m.fabrics)) or 'none'}" for m in builds))
    assert checked > 100
    assert not problems, "\n".join(f"{p}: {', '.join(sorted(where))}" for p, where in sorted(problems.items()))


# ---- every IOR, mdtest and IOzone line is one the tool that runs it reads -----------------

def tool_runs(job: Job, program: str) -> list[list[str]]:
    return [tokens for tokens in job.runs if any(Path(t).name == program for t in tokens)]


def test_every_ior_and_mdtest_line_is_accepted_by_the_ior_its_lab_runs(
    dry_runs: dict[str, DryRun], remote_dry_runs: dict[str, DryRun],
) -> None:
    """Seed and remote labs' job scripts: every ior and mdtest argument against the option
    table of the IOR release in the lab's toolchain view (spack/ior-options.json, built
    with the lab's features: BeeGFS striping on BeeGFS labs). 3.3.0's -O beegfsNumTargets
    under IOR 4.0.0, for one, stops IOR ("Unrecognized parameter")."""
    problems: dict[str, set[str]] = {}
    checked: dict[str, int] = {}
    for run in [*dry_runs.values(), *remote_dry_runs.values()]:
        lab = labs.load(run.lab)
        ior = ior_options.for_lab(lab)
        for job in run.jobs.values():
            for program in ior_options.TOOLS:
                for tokens in tool_runs(job, program):
                    checked[ior.version] = checked.get(ior.version, 0) + 1
                    for problem in ior_options.check_command(ior, tokens, program):
                        problems.setdefault(problem, set()).add(run.lab)
    print(f"\nior and mdtest lines checked, by the IOR release that runs them: {checked}")
    assert checked.get("3.3.0", 0) > 100 and checked.get("4.0.0", 0) > 20
    assert not problems, "\n".join(f"{p}: {', '.join(sorted(where))}" for p, where in sorted(problems.items()))


def test_every_iozone_size_is_written_with_a_suffix_iozone_reads(
    dry_runs: dict[str, DryRun], remote_dry_runs: dict[str, DryRun],
) -> None:
    problems: dict[str, set[str]] = {}
    checked = 0
    for run in [*dry_runs.values(), *remote_dry_runs.values()]:
        for job in run.jobs.values():
            for tokens in tool_runs(job, "iozone"):
                checked += 1
                for problem in iozone_options.check_args(tokens[1:]):
                    problems.setdefault(problem, set()).add(run.lab)
    assert checked > 100
    assert not problems, "\n".join(f"{p}: {', '.join(sorted(where))}" for p, where in sorted(problems.items()))


def test_seed_labs_run_the_seeds_ior_where_the_kit_has_it() -> None:
    """Seeds 000 and 002 ran IOR and mdtest 3.3.0: their labs, and the reproductions of
    seed 002, run the seed view's. Part of the lab, so the login node of a remote lab
    runs them too (it gets the resolved lab, not this machine's environment)."""
    for name in ["pixstor-capex", *TARGETS, "aws-beegfs-medium", "azure-beegfs-medium"]:
        lab = labs.load(name)
        assert toolchain.view_of(lab) == "seed", name
        assert toolchain.tool_version(lab, "ior") == toolchain.tool_version(lab, "mdtest") == "3.3.0", name


# ---- a lab with Slurm: batch jobs -------------------------------------------------------

#: A lab with Slurm that gives every access option (labs/local-slurm.yaml gives none).
SLURM_LAB = """\
schema_version: 1
name: slurm-access
extends: local-slurm
title: The local lab with Slurm, every access option given
scheduler: {type: slurm, launcher: srun, partition: batch, account: acct-1, qos: normal, constraint: ssd}
"""


@pytest.fixture(scope="module")
def slurm_dry_run(tmp_path_factory: pytest.TempPathFactory) -> DryRun:
    """The IOR and FIO jobs of a lab with Slurm, in a kit tree whose labs/ holds the
    shipped labs and that lab."""
    root = kit_tree(tmp_path_factory)
    (root / "labs").unlink()
    (root / "labs").mkdir()
    for path in (KIT / "labs").iterdir():
        (root / "labs" / path.name).symlink_to(path)
    (root / "labs" / "slurm-access.yaml").write_text(SLURM_LAB)
    return dry_run("slurm-access", root, tmp_path_factory.mktemp("run"), only=("IOR", "FIO"))


def sbatch_lines(job: Job) -> list[str]:
    return [line.split(None, 1)[1] for line in job.file("rfm_job.sh").splitlines() if line.startswith("#SBATCH ")]


def test_a_slurm_labs_job_asks_for_its_access_options_and_the_cases_allocation(slurm_dry_run: DryRun) -> None:
    jobs = slurm_dry_run.jobs
    assert any(case.split("/")[1] == "pixstor-capex" for case in jobs), sorted(jobs)  # a seed's shape is among them
    for case, job in jobs.items():
        threads = threads_of(case)
        point = case.rsplit("/", 1)[1]
        nodes = int(point.split("x")[0]) if "x" in point else min(threads, 2)  # local-slurm has 2 clients
        sbatch = sbatch_lines(job)
        assert {"--partition=batch", "--account=acct-1", "--qos=normal", "--constraint=ssd",
                f"--ntasks={threads}", f"--nodes={nodes}", f"--ntasks-per-node={-(-threads // nodes)}",
                "--exclusive"} <= set(sbatch), (case, sbatch)
        text = job.file("rfm_job.sh")
        # The job ends with its steps' status, the measured one's included.
        assert text.splitlines()[-1] == 'exit "$pfslab_status"', case
        assert "--hostfile" not in text and "--allow-run-as-root" not in text and "plm_rsh_agent" not in text, case


def test_a_slurm_labs_steps_run_the_seeds_tool_line_under_srun(slurm_dry_run: DryRun) -> None:
    """The tool's tokens are what the same case renders to with the lab's own mpirun line
    (the seed's ior arguments); only what starts the ranks differs."""
    lab = labs.load(str(KIT / "labs" / "local-slurm.yaml"))
    clients = [workloads.Client(n["name"], n["name"]) for n in labs.client_nodes(lab)]
    checked = 0
    for case_name, job in slurm_dry_run.jobs.items():
        _, workload, threads, nodes = workloads.parse_case_name(case_name)
        owner = workload.split("/")[0] if "/" in workload else None
        case = workloads.Case("local-slurm", workload, threads, "quick" if owner else workloads.lab_mode(lab), nodes)
        tool = workloads.find(lab, workload)["tool"]
        ctx = workloads.Context(clients=clients, scratch_dir=job.scratch, work_dir=str(job.stage), tool_path=tool)
        plain = workloads.render(lab, case, ctx)
        used = workloads.nodes_used((threads, nodes), len(clients))
        for tokens, step in zip(job.runs, [s for s in plain.steps if s.kind == "run"], strict=True):
            mpirun = shlex.split(step.command)
            if tool == "fio":
                srun = ["srun", f"--ntasks={used}", f"--nodes={used}", "--ntasks-per-node=1", "--distribution=cyclic"]
                assert tokens[:len(srun)] == srun and tokens[len(srun):len(srun) + 2] == ["sh", "-c"], case_name
                assert tokens[-1].startswith("r=${SLURM_PROCID:-0}; ") and tokens[-1].split(";", 1)[1] == mpirun[-1].split(";", 1)[1]
                continue
            srun = ["srun", f"--ntasks={threads}", f"--nodes={used}", "--distribution=cyclic"]
            assert tokens[:len(srun)] == srun, (case_name, tokens)
            assert tokens[len(srun):] == mpirun[mpirun.index("ior"):], case_name
            if workload == "pixstor-capex/ior-n1":
                # PixStor's own ior arguments (PIXSTOR_IOR), on this lab's scratch.
                assert tokens[len(srun):len(srun) + 10] == ["ior", "-a", "POSIX", "-v", "-i", "1", "-d", "3", "-e", "-k"]
                checked += 1
            checked += 1
    assert checked > 5 and any(case.split("/")[1:3] == ["pixstor-capex", "ior-n1"] for case in slurm_dry_run.jobs)
