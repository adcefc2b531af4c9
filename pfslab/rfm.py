"""The ReFrame side of the kit: one base class every workload test derives from.

A test instance is one *case*: its parameters lab, workload, threads (or nodes and
processes per node) and mode. It renders the case's
steps into its job script, keeps every step's raw output, fails on a non-zero exit
or an incomplete output, and compares each figure with the lab's reference.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any, TypeVar

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError
from reframe.core.meta import make_test
from reframe.utility import typecheck as typ

from pfslab import KIT_ROOT, labs, registry, scheduler, state, thresholds, tools, workloads
from pfslab import launcher as launcher_of
from pfslab.rfm_launcher import LabMpirun
from pfslab.rfm_paths import tool_search_path
from pfslab.results import Operation, ParseError, ParseResult
from pfslab.runs import HEALTH_FILE
from pfslab.units import convert, kind_of

#: Unit figures are reported in when a lab has no reference for them.
DEFAULT_UNITS: dict[str, str] = {"bandwidth": "MiB/s", "rate": "ops/s", "time": "s"}
IOPS_OPERATIONS: frozenset[str] = frozenset({"read_iops", "write_iops"})
STATUS_LINE = "pfslab: step {n} exit status "

#: Where the shell every job script starts with is kept, so that shellcheck sees it.
JOB_PRELUDE_FILE: Path = KIT_ROOT / "scripts" / "lib" / "job-prelude.sh"


def job_prelude(path: Path = JOB_PRELUDE_FILE) -> list[str]:
    """The lines of a job prelude file below its header (its leading comment lines)."""
    lines = path.read_text().splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return lines


#: Shell functions every job script starts with: each step's output goes to its own
#: file (kept with the run), its status is printed, and a failure stops the job.
JOB_PRELUDE: list[str] = job_prelude()


def current_labs() -> list[str]:
    """The labs of the system ReFrame runs on (`--system` or the running lab).

    Test files expand only these labs' cases: instantiating every lab's hundreds of
    cases just to discard them made a dry run several times slower.
    """
    import reframe.core.runtime as rt

    try:
        system = rt.runtime().system.name
    except Exception:  # no runtime (the file imported outside ReFrame): every lab
        return labs.lab_names()
    return [name for name in labs.lab_names() if labs.system_name(name) == system]


def test_cases(tool: str) -> list[workloads.Case]:
    return workloads.cases(tool, current_labs())


Test = TypeVar("Test", bound="type[WorkloadTest]")


def _class_name(base: str, *parts: str) -> str:
    # The base has no "_": workloads.tool_test reads it back as the part before the first.
    return "_".join([base, *(re.sub(r"[^A-Za-z0-9]+", "_", part).strip("_") for part in parts)])


def define_tests(base: Test, tool: str) -> list[Test]:
    """Register one ReFrame test class per workload of ``tool`` on this system's labs.

    Each class has the parameters lab, workload, its sweep (threads, or nodes and
    processes per node) and mode, so ``-n '%threads=4%'`` selects as ReFrame users
    expect. One class per workload because ReFrame's parameter space is the product of
    its parameters: one class for all workloads held combinations no lab has (99
    listed tests for 39 cases). Every class's product is exactly its cases
    (:func:`workloads.cases`); a tool no lab here runs defines no class (no warning,
    no empty test). The classes go into the test file's module, which ReFrame loads.
    """
    points: dict[tuple[str, str, str], list[tuple[int, int | None]]] = {}
    for case in test_cases(tool):
        points.setdefault((case.workload, case.mode, case.lab), []).append((case.threads, case.nodes))
    groups: dict[tuple[str, str, tuple[tuple[int, int | None], ...]], list[str]] = {}
    for (workload, mode, lab), lab_points in points.items():
        groups.setdefault((workload, mode, tuple(lab_points)), []).append(lab)
    defined: list[Test] = []
    for (workload, mode, sweep), lab_names in groups.items():
        # Labs that run a workload in another mode or sweep (seen outside ReFrame, where
        # every lab's cases are expanded) get a class each, named apart.
        shared = sum(1 for other, _, _ in groups if other == workload) > 1
        name = _class_name(base.__name__, workload, *((lab_names[0], mode) if shared else ()))
        body: dict[str, Any] = {"lab": parameter(lab_names), "workload": parameter([workload])}
        body.update(_sweep_parameters(workload, sweep))
        body["mode"] = parameter([mode])
        cls = make_test(name, (base,), body, module=base.__module__)
        setattr(sys.modules[base.__module__], name, cls)
        rfm.simple_test(cls)
        defined.append(cls)
    return defined


def _sweep_parameters(workload: str, sweep: tuple[tuple[int, int | None], ...]) -> dict[str, Any]:
    """threads, or nodes and processes per node, whose product is the sweep."""
    if all(nodes is None for _, nodes in sweep):
        return {"threads": parameter([threads for threads, _ in sweep])}
    nodes = list(dict.fromkeys(n or 0 for _, n in sweep))
    processes = list(dict.fromkeys(t // (n or 1) for t, n in sweep))
    if sorted(sweep, key=str) != sorted(((n * p, n) for n in nodes for p in processes), key=str):
        raise workloads.WorkloadError(f"workload {workload}: its points {sweep} are not a product of nodes x processes")
    return {"nodes": parameter(nodes), "processes": parameter(processes)}


class WorkloadTest(rfm.RunOnlyRegressionTest):
    """Base of every workload test; a test file registers its classes with :func:`define_tests`."""

    valid_prog_environs = ["pfslab"]
    valid_systems = ["*"]
    exclusive_access = True
    maintainers = ["pfslab"]
    #: Where to put the benchmark's files inside the file system (default: the lab's).
    scratch_root = variable(str, value="")
    #: Why the test was skipped: ReFrame's report keeps variables, not skip messages.
    skip_reason = variable(str, value="")
    #: Per figure, where its threshold comes from (or why it has none), for the verdict.
    reference_basis = variable(typ.Dict[str, str], value={})
    #: The case's name (lab/workload/point), set by the test: the key reports, the verdict
    #: and stored sessions read (before the parameters were separate, it was the parameter).
    case = variable(str, value="")

    # The parameters (define_tests): a class has threads, or nodes and processes.
    lab: str
    workload: str
    mode: str
    threads: int
    nodes: int | None
    processes: int

    # Set in init: the lab file and the workload of this case.
    lab_config: dict[str, Any]
    workload_config: dict[str, Any]
    rendered: workloads.Rendered
    # ReFrame's variable (its value stays ReFrame's), typed for mypy: a lab with a scheduler sets it.
    num_tasks_per_node: int | None

    @property
    def spec(self) -> workloads.Case:
        """The case its parameters make."""
        if hasattr(self, "processes"):
            return workloads.Case(self.lab, self.workload, int(self.nodes or 0) * self.processes, self.mode, self.nodes)
        return workloads.Case(self.lab, self.workload, self.threads, self.mode)

    @run_after("init")
    def bind_case(self) -> None:
        case = self.spec
        self.case = case.name
        # Every test has threads and nodes (None: spread over every client), so that a
        # -E expression over them holds on every test.
        if hasattr(self, "processes"):
            self.threads = case.threads
        else:
            self.nodes = None
        # Resolved once (the run's copy of the lab, with its layout), not re-read from labs/.
        self.lab_config = state.lab(case.lab)
        self.workload_config = workloads.find(self.lab_config, case.workload)
        self.valid_systems = [f"{labs.system_name(case.lab)}:clients"]
        where = f"{case.threads} threads" if case.nodes is None else f"{case.nodes} nodes x {case.threads // case.nodes} processes"
        self.descr = f"{self.workload_config.get('title', case.workload)} on {case.lab}, {where} ({case.mode})"
        self.tags = {"pfslab", case.lab, self.workload_config["tool"], self.workload_config["pattern"], case.mode}
        owner, _, _ = case.workload.rpartition("/")
        if owner:
            # A seed's workload shape run on this lab (`imports`): `-T imported` leaves them out.
            self.tags |= {"imported", owner}
        self.time_limit = workloads.time_limit(self.lab_config, self.workload_config, case.mode)
        self.num_tasks = case.threads
        self.num_tasks_per_node = None

    # ---- setup ---------------------------------------------------------------------

    def _clients(self) -> tuple[list[workloads.Client], dict[str, Any] | None]:
        case = self.spec
        inventory = state.inventory(case.lab) if state.active_lab() == case.lab else None
        if inventory is not None:
            by_name = {n["name"]: n for n in inventory["nodes"]}
            return [workloads.Client(c, by_name[c]["address"]) for c in inventory["clients"]], inventory
        # Not provisioned (a seed lab's dry run): the client names stand in, in node order.
        return [workloads.Client(n["name"], n["name"]) for n in labs.client_nodes(self.lab_config)], None

    @run_after("setup")
    def prepare_job(self) -> None:
        case = self.spec
        clients, inventory = self._clients()
        if inventory is None and not self.is_dry_run():
            self._skip(f"lab {case.lab} is not up; run 'make lab-up LAB={case.lab}'")
        unhealthy = lab_unhealthy()
        if unhealthy:
            self._skip(f"lab unhealthy since {unhealthy['since']}: {unhealthy['detail']}; "
                       f"fix it ('make lab-status' shows it, 'make lab-up' restarts what stopped), then run again")
        fs_type = self.lab_config["filesystem"]["type"]
        if fs_type not in self.workload_config.get("filesystems", [fs_type]):
            self._skip(
                f"workload {case.workload} runs on {', '.join(self.workload_config['filesystems'])} only; "
                f"lab {case.lab} is {fs_type}"
            )
        tool = self.workload_config["tool"]
        executable = tools.executable(tool)
        if inventory is None:
            # A dry run for a lab elsewhere: its nodes find the tool on their own
            # path (the toolchain view), not where this machine has it.
            tool_path = executable
        else:
            found = shutil.which(executable, path=tool_search_path(self.lab_config))
            if found is None:
                self._skip(
                    f"{executable} is not installed: not found in PFSLAB_TOOL_PATH, the toolchain view or PATH "
                    f"(install it with 'make toolchain' or, IOR, mdtest and IO500 without Spack, 'make tools'; "
                    f"or set PFSLAB_TOOL_PATH)"
                )
            tool_path = found or executable
        mount = self.lab_config["filesystem"]["mount"]
        scratch = self.scratch_root or f"{mount}/{labs.setting(self.lab_config, 'benchmark.scratch')}"
        scratch_dir = f"{scratch}/{case.workload}-t{case.threads}-{uuid.uuid4().hex[:8]}"
        # A provisioned lab's inventory carries its launcher; a dry run takes the one its
        # plan would give it, so the job scripts export what the real run would (RSH,
        # MCA settings; a remote lab's login node launching over scripts/lab-rsh).
        launcher = (inventory or {}).get("launcher") or launcher_of.for_dry_run(self.lab_config)
        ctx = workloads.Context(
            clients=clients,
            scratch_dir=scratch_dir,
            work_dir=self.stagedir,
            tool_path=tool_path,
            iozone_master=launcher.get("master_address"),
            hostfile_slots=self.lab_config.get("launcher", {}).get("hostfile_slots", True),
            # A remote lab's stage is on its login node only: ranks on the other clients
            # write their own outputs into the run's scratch in the file system.
            rank_dir=None if registry.target_of(self.lab_config).namespaces else scratch_dir,
            scheduler_launcher=scheduler.launcher(self.lab_config),
        )
        self.rendered = workloads.render(self.lab_config, case, ctx)
        for name, content in self.rendered.files.items():
            Path(self.stagedir, name).write_text(content)
        self.env_vars.update(scheduler.job_env(self.lab_config, launcher.get("env", {})))
        if scheduler.kind(self.lab_config) is not None:
            self._ask_for_allocation(len(clients))
        if inventory is not None:
            # mpirun from the same view as the tool (benchmark.toolchain): the seed view's
            # IOR 3.3.0 is built against its Open MPI 4.1.8, not the default view's 5.0.8.
            self.env_vars["PATH"] = tool_search_path(self.lab_config)
        self.env_vars["PFSLAB_ROOT"] = str(KIT_ROOT)
        self._write_job(scratch_dir)
        self.keep_files = list(self.rendered.files) + [
            os.path.relpath(p, self.stagedir) if os.path.isabs(p) else p
            for step in self.rendered.steps if step.kind == "run"
            for p in [step.output]
        ]
        # What the tool leaves beside its output (IO500's result directory): kept with the run.
        self.keep_files += tools.module(tool).KEEP
        self._set_references()

    def _ask_for_allocation(self, clients: int) -> None:
        """One batch job holds the case's nodes and ranks (its #SBATCH lines); the steps
        start their ranks inside it (workloads.Context.scheduler_launcher): the measured
        one through the partition's launcher, the ones before it with their own srun."""
        case = self.spec
        nodes = workloads.nodes_used((case.threads, case.nodes), clients)
        self.num_tasks = case.threads
        # At most this many on a node (sbatch: --ntasks wins, --ntasks-per-node is a ceiling):
        # the round robin of the kit's hostfiles gives no node more.
        self.num_tasks_per_node = -(-case.threads // nodes)
        # ReFrame 4.10's tests have no node count; its --nodes would be tasks // per node.
        self.job.options += [f"--nodes={nodes}"]

    def _skip(self, reason: str) -> None:
        self.skip_reason = reason
        self.skip(reason)

    def _write_job(self, scratch_dir: str) -> None:
        """The job: the prelude, the preparation (scratch directory, cache drop, the steps
        before the measured one), then the measured tool as ReFrame's executable, started
        by the partition's launcher, its status printed after it."""
        drops = self.lab_config.get("os_tuning", {}).get("drop_caches", "never")
        lines = list(JOB_PRELUDE)
        lines.append(f"mkdir -p {shlex.quote(scratch_dir)}")
        # On every way out (a failed step stops the job early): the benchmark's files go.
        lines.append(f"trap {shlex.quote(f'rm -rf {shlex.quote(scratch_dir)}')} EXIT")
        if drops in ("between-runs", "between-phases"):
            lines.append('"$PFSLAB_ROOT/scripts/drop-caches"')
        steps = self.rendered.steps
        last = steps[-1] if steps else None
        own = last is not None and executable_step(last)
        for n, step in enumerate(steps[:-1] if own else steps, start=1):
            if step.kind == "drop-caches":
                lines.append('"$PFSLAB_ROOT/scripts/drop-caches"')
            else:
                out = step.output if "*" not in step.output else f"{self.stagedir}/step{n}.launcher.out"
                lines.append(f"pfslab_transient={shlex.quote(step.transient)}")
                lines.append(f"pfslab_step {n} {shlex.quote(out)} {shlex.quote(step.command)}")
                if step.collect:
                    lines.append(f"mv {step.collect} {shlex.quote(self.stagedir)}/")
        if not own:
            # Every step ran in the prelude (see executable_step): the job ends with their status.
            self.prerun_cmds = lines
            self.executable = 'exit "$pfslab_status"'
            self.executable_opts = []
            self.job.launcher = getlauncher("local")()
            return
        assert last is not None
        if len(steps) > 1:
            lines.append('[ "$pfslab_status" -eq 0 ] || exit "$pfslab_status"')
        self.prerun_cmds = lines
        program, _, options = last.program.partition(" ")
        self.executable = program
        self.executable_opts = [options] if options else []
        self._set_launcher(last.launch)
        if "*" not in last.output:
            # The tool prints its results: the job's stdout is the step's raw output.
            last.output = os.path.join(self.stagedir, self.job.stdout)
        post = [f"pfslab_done {len(steps)} $?"]
        if last.collect:
            post.append(f"mv {last.collect} {shlex.quote(self.stagedir)}/")
        self.postrun_cmds = [*post, 'exit "$pfslab_status"']

    def _set_launcher(self, start: str) -> None:
        """The partition's launcher, given the start line the case rendered (the lab's
        mpirun line, or srun's options inside the allocation); a tool that starts its own
        processes (no start line) runs as it is."""
        if not start:
            self.job.launcher = getlauncher("local")()
        elif isinstance(self.job.launcher, LabMpirun):
            self.job.launcher.line = start
        elif self.job.launcher.registered_name == "srun" and start.startswith("srun "):
            self.job.launcher.options = shlex.split(start)[1:]
        else:
            raise ValueError(f"partition launcher {self.job.launcher.registered_name!r} cannot run {start!r}; "
                             f"allowed: {scheduler.LAB_MPIRUN}, srun")

    def _set_references(self) -> None:
        case = self.spec
        judge = thresholds.for_lab(case.lab)
        table: dict[str, tuple[float, float | None, float | None, str]] = {}
        for op in self._measured():
            ref, why = judge.reference(case.workload, op, case.threads, case.mode, case.nodes)
            self.reference_basis[op] = why
            if ref is not None:
                table[op] = (ref.value, ref.lower, ref.upper, ref.unit)
        self.reference = {f"{labs.system_name(case.lab)}:clients": table}

    def _measured(self) -> list[str]:
        """Each figure the verdict uses, once (iterations repeat steps)."""
        return list(dict.fromkeys(op for step in self.rendered.steps for op in step.measures))

    # ---- results ---------------------------------------------------------------------

    def _outputs(self, step: workloads.Step) -> list[str]:
        if "*" in step.output:
            return sorted(glob.glob(step.output))
        return [step.output]

    def _parse_step(self, n: int, step: workloads.Step) -> ParseResult:
        files = self._outputs(step)
        if not files:
            raise ParseError(f"step {n} wrote no output ({step.output})")
        results = []
        for path in files:
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                raise ParseError(f"step {n} wrote nothing to {os.path.basename(path)}")
            with open(path, errors="replace") as handle:
                results.append(tools.parse_text(self.workload_config["tool"], handle.read()))
        return results[0] if len(results) == 1 else _sum_results(results)

    def _samples(self) -> dict[str, tuple[str, list[float]]]:
        """Per figure, its unit and its value in each iteration, read from the raw outputs.

        Raises SanityError naming the first step that did not run, failed, or left an
        incomplete output. The sanity check and every figure read through this.
        """
        # The kit's own lines (each step's status) are on the job's stderr (job-prelude.sh).
        with open(os.path.join(self.stagedir, str(self.stderr)), errors="replace") as handle:
            job_output = handle.read()
        seen = {int(n): int(rc) for n, rc in re.findall(r"pfslab: step (\d+) exit status (\d+)", job_output)}
        samples: dict[str, tuple[str, list[float]]] = {}
        for n, step in enumerate(self.rendered.steps, start=1):
            if step.kind != "run":
                continue
            if n not in seen or seen[n] != 0:
                unhealthy = lab_unhealthy()
                if unhealthy:
                    raise SanityError(f"lab unhealthy during the test ({unhealthy['since']}): {unhealthy['detail']}; "
                                      "the watchdog ended the benchmark")
            if n not in seen:
                raise SanityError(f"step {n} did not run (see rfm_job.out and rfm_job.err)")
            if seen[n] != 0:
                raise SanityError(f"step {n} ({self.workload_config['tool']}) exited with status {seen[n]}")
            if step.prepare:
                continue
            try:
                parsed = self._parse_step(n, step)
            except ParseError as err:
                raise SanityError(f"step {n}: {err}") from None
            for op in step.measures:
                if op not in parsed.operations:
                    have = ", ".join(sorted(parsed.operations)) or "none"
                    raise SanityError(f"step {n}: the output has no {op!r} figure (it has: {have})")
                figure = parsed.operations[op]
                unit, values = samples.setdefault(op, (figure.unit, []))
                values.append(convert(figure.mean, figure.unit, unit))
        return samples

    @sanity_function
    def assert_complete(self) -> bool:
        """Every step ran and exited 0, and every measured figure is in its complete output."""
        samples = self._samples()
        missing = [op for op in self._measured() if op not in samples]
        if missing:
            raise SanityError(f"no step measured {', '.join(missing)}")
        return True

    def figure(self, op: str, unit: str) -> float:
        """The performance function of one figure: over iterations, the mean (as the
        seeds averaged three IOzone runs, seven io_shell copies), in ``unit``."""
        native, values = self._samples()[op]
        return convert(sum(values) / len(values), native, unit)

    @run_before("performance")
    def define_figures(self) -> None:
        if self.is_dry_run():
            return  # nothing ran: no figures
        case = self.spec
        table = self.reference.get(f"{labs.system_name(case.lab)}:clients", {})
        judge = thresholds.for_lab(case.lab)
        native_units = {op: unit for op, (unit, _) in self._samples().items()}
        self.perf_variables = {}
        for op in self._measured():
            native = native_units.get(op, "MiB/s")
            if op not in table:
                # No stored reference: the lab's calibration judges it, by the probe of
                # the kind the figure turned out to be (a bandwidth, or a rate).
                ref, why = judge.reference(case.workload, op, case.threads, case.mode, case.nodes, kind_of(native))
                self.reference_basis[op] = why
                if ref is not None:
                    table[op] = (ref.value, ref.lower, ref.upper, ref.unit)
            unit = table[op][3] if op in table else (native if kind_of(native) != "bandwidth" else DEFAULT_UNITS["bandwidth"])
            self.perf_variables[op] = sn.make_performance_function(self.figure, unit, op, unit)
        self.reference = {f"{labs.system_name(case.lab)}:clients": table}


def executable_step(step: workloads.Step) -> bool:
    """Whether a step can be the job's executable: a tool run that is not tried again
    when it fails to start (IOzone's cluster mode: retrying is the prelude's, ReFrame's
    --max-retries would repeat any failure, not only a failed start)."""
    return step.kind == "run" and not step.transient


def lab_unhealthy() -> dict[str, Any] | None:
    """What the run's health watchdog recorded, when it found the lab not serving."""
    run_dir = os.environ.get("PFSLAB_RUN_DIR")
    if not run_dir:
        return None
    path = Path(run_dir, HEALTH_FILE)
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("state") == "unhealthy" else None


def _sum_results(results: list[ParseResult]) -> ParseResult:
    """Figures of one step run as several processes (fio per node): their sum."""
    first = results[0]
    total = ParseResult(first.tool, first.version, first.command, details={"parts": len(results)})
    for name, op in first.operations.items():
        parts = [r.operations[name] for r in results if name in r.operations]
        if len(parts) != len(results):
            raise ParseError(f"only {len(parts)} of {len(results)} outputs report {name}")
        total.operations[name] = Operation(
            name=name,
            unit=op.unit,
            max=sum(p.max for p in parts),
            min=sum(p.min for p in parts),
            mean=sum(p.mean for p in parts),
            iterations=op.iterations,
            tasks=sum(p.tasks or 0 for p in parts) or None,
        )
    return total
