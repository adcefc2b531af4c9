"""Rendering lab workloads into the exact commands a job runs."""

from __future__ import annotations

import pytest

from pfslab import labs, scheduler, workloads

CLIENTS = [workloads.Client("cli0", "10.0.0.1"), workloads.Client("cli1", "10.0.0.2")]


def ctx(**changes: object) -> workloads.Context:
    base = workloads.Context(clients=CLIENTS, scratch_dir="/fs/bench/x", work_dir="/stage", tool_path="/t/bin/tool")
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def local_case(workload: str, threads: int, mode: str = "quick") -> tuple[dict[str, object], workloads.Case]:
    return labs.load("local"), workloads.Case("local", workload, threads, mode)


def test_local_cases_cover_every_workload_and_thread_count() -> None:
    cases = [c for tool in ("ior", "mdtest", "iozone", "fio") for c in workloads.cases(tool, ["local"])]
    names = {c.name for c in cases if "/" not in c.workload}  # the lab's own, not imported shapes
    assert len(names) == 15
    assert "local/ior-n1/4" in names and "local/iozone-seq/1" in names


def test_ior_runs_under_the_labs_mpirun_line_with_a_round_robin_hostfile() -> None:
    lab, case = local_case("ior-n1", 4)
    rendered = workloads.render(lab, case, ctx(tool_path="/t/bin/ior"))
    (step,) = rendered.steps
    assert step.command == (
        "mpirun -np 4 --hostfile /stage/hosts.4 --map-by node /t/bin/ior "
        "-a POSIX -i 1 -e -w -r -s 1 -t 1m -b 64m -o /fs/bench/x/ior.file --posix.odirect"
    )
    assert rendered.files == {"hosts.4": "10.0.0.1 slots=2\n10.0.0.2 slots=2\n"}
    assert step.measures == ["write", "read"]
    assert step.output == "/stage/step1.ior.out"


def test_mdtest_directories_per_thread_keep_the_total_fixed() -> None:
    lab, _ = local_case("mdtest-empty", 1)
    dirs = []
    for threads in (1, 2, 4):
        step = workloads.render(lab, workloads.Case("local", "mdtest-empty", threads, "quick"), ctx()).steps[0]
        dirs.append(step.command.split(" -b ")[1].split()[0])
    assert dirs == ["16", "8", "4"]  # 2048 files / 128 per directory / threads


def test_iozone_gets_a_thread_list_and_the_master_address_only_when_given() -> None:
    lab, case = local_case("iozone-seq", 3)
    plain = workloads.render(lab, case, ctx(tool_path="/usr/bin/iozone"))
    assert plain.steps[0].command == (
        "/usr/bin/iozone -i 0 -i 1 -c -e -w -r 1m -I -s 64m -t 3 -+n -+m /stage/threadlist.3"
    )
    assert plain.files["threadlist.3"].splitlines() == [
        "10.0.0.1 /fs/bench/x /usr/bin/iozone",
        "10.0.0.2 /fs/bench/x /usr/bin/iozone",
        "10.0.0.1 /fs/bench/x /usr/bin/iozone",
    ]
    local = workloads.render(lab, case, ctx(tool_path="/usr/bin/iozone", iozone_master="10.99.0.1"))
    assert local.steps[0].command.endswith("-+m /stage/threadlist.3 -+h 10.99.0.1")


def test_fio_runs_one_process_per_node_with_its_share_of_jobs() -> None:
    lab, case = local_case("fio-rand4k", 3)
    rendered = workloads.render(lab, case, ctx(tool_path="/usr/bin/fio"))
    write, read = rendered.steps
    assert write.command.startswith("mpirun -np 2 --hostfile /stage/nodes.2 --map-by node sh -c ")
    assert "--numjobs=$(( 3 / 2 + (r < 3 % 2) ))" in write.command
    assert "--output=/stage/step1.fio.$r.json" in write.command and "--rw=randwrite" in write.command
    assert read.output == "/stage/step2.fio.*.json" and read.measures == ["read_iops"]
    assert rendered.files["nodes.2"] == "10.0.0.1 slots=1\n10.0.0.2 slots=1\n"


def test_one_thread_uses_one_node() -> None:
    lab, case = local_case("fio-rand4k", 1)
    assert workloads.render(lab, case, ctx()).files == {"nodes.1": "10.0.0.1 slots=1\n"}


def test_quick_sizes_and_sweep_override_the_full_ones() -> None:
    workload = {"id": "w", "threads": [1, 1024], "sizes": {"block": "128g"}, "quick": {"threads": [1, 2], "sizes": {"block": "64m"}}}
    assert workloads.threads_for(workload, "quick") == [1, 2]
    assert workloads.threads_for(workload, "full") == [1, 1024]
    assert workloads.sizes_for(workload, "quick") == {"block": "64m"}
    assert workloads.sizes_for(workload, "full") == {"block": "128g"}


def test_aggregate_size_is_divided_over_threads() -> None:
    values = workloads._values({"id": "w", "tool": "iozone"}, {"aggregate": "8t"}, 256, ctx())
    assert values["file_size"] == "32g"


def test_unknown_placeholder_is_named() -> None:
    with pytest.raises(workloads.WorkloadError, match=r"workload w: unknown placeholder \{blok\}; known: .*block"):
        workloads.render_args("-b {blok}", {"block": "1m"}, "w")


def test_too_many_threads_for_the_files_is_refused() -> None:
    with pytest.raises(workloads.WorkloadError, match="leave no directory for each of 64 threads"):
        workloads._values({"id": "md", "tool": "mdtest"}, {"total_files": 2048, "items": 128}, 64, ctx())


def test_bad_mode_names_the_allowed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PFSLAB_MODE", "fast")
    with pytest.raises(workloads.WorkloadError, match=r"PFSLAB_MODE='fast' is not allowed; allowed: quick, full"):
        workloads.lab_mode(labs.load("local"))


def test_mode_defaults_to_the_labs_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PFSLAB_MODE", raising=False)
    assert workloads.lab_mode(labs.load("local")) == "quick"
    monkeypatch.setenv("PFSLAB_MODE", "full")
    assert workloads.lab_mode(labs.load("local")) == "full"


# ---- inside a batch job (a lab with scheduler.launcher) -------------------------------------

IOR_ARGS = "-a POSIX -i 1 -e -w -r -s 1 -t 1m -b 64m -o /fs/bench/x/ior.file --posix.odirect"


def test_under_srun_an_mpi_step_starts_the_cases_ranks_over_its_nodes_without_hostfile_or_agent() -> None:
    lab, case = local_case("ior-n1", 4)
    rendered = workloads.render(lab, case, ctx(tool_path="/t/bin/ior", scheduler_launcher="srun"))
    (step,) = rendered.steps
    assert step.command == f"srun --ntasks=4 --nodes=2 --distribution=cyclic /t/bin/ior {IOR_ARGS}"
    assert rendered.files == {}  # Slurm knows the nodes: no hostfile
    one = workloads.render(lab, workloads.Case("local", "ior-n1", 1, "quick"), ctx(tool_path="ior", scheduler_launcher="srun"))
    assert one.steps[0].command.startswith("srun --ntasks=1 --nodes=1 ")


def test_under_srun_a_nodes_by_processes_point_asks_for_its_nodes() -> None:
    lab = labs.load("cephfs-stria")
    clients = [workloads.Client(f"cli{i}", f"10.0.0.{i}") for i in range(8)]
    case = workloads.Case("cephfs-stria", "ior-t1m-b2m", 8, "full", nodes=4)
    (step,) = workloads.render(lab, case, ctx(clients=clients, tool_path="ior", scheduler_launcher="srun")).steps
    assert step.command.startswith("srun --ntasks=8 --nodes=4 --distribution=cyclic ior ")


def test_under_srun_fio_runs_one_task_per_node_and_takes_its_rank_from_slurm() -> None:
    lab, case = local_case("fio-rand4k", 3)
    rendered = workloads.render(lab, case, ctx(tool_path="/usr/bin/fio", scheduler_launcher="srun"))
    write, _ = rendered.steps
    assert write.command.startswith("srun --ntasks=2 --nodes=2 --ntasks-per-node=1 --distribution=cyclic sh -c ")
    assert "r=${SLURM_PROCID:-0};" in write.command and "OMPI_COMM_WORLD_RANK" not in write.command
    assert "--numjobs=$(( 3 / 2 + (r < 3 % 2) ))" in write.command
    assert rendered.files == {}


def test_under_mpirun_in_the_allocation_the_labs_line_runs_without_its_hostfile() -> None:
    lab, case = local_case("ior-n1", 4)
    rendered = workloads.render(lab, case, ctx(tool_path="/t/bin/ior", scheduler_launcher="mpirun"))
    assert rendered.steps[0].command == f"mpirun -np 4 --map-by node /t/bin/ior {IOR_ARGS}"
    assert rendered.files == {}
    fio = workloads.render(lab, local_case("fio-rand4k", 3)[1], ctx(scheduler_launcher="mpirun"))
    assert fio.steps[0].command.startswith("mpirun -np 2 --map-by node sh -c ")


@pytest.mark.parametrize("line, want", [
    ("mpirun -np {np} --hostfile {hostfile} --map-by node", "mpirun -np {np} --map-by node"),
    ("mpirun --allow-run-as-root -np {np} --hostfile={hostfile} --oversubscribe",
     "mpirun --allow-run-as-root -np {np} --oversubscribe"),
    ("mpirun -machinefile {hostfile} --map-by node -np {np}", "mpirun --map-by node -np {np}"),
    ("mpirun -np {np} --map-by node", "mpirun -np {np} --map-by node"),
])
def test_an_mpirun_line_loses_only_its_hostfile_option(line: str, want: str) -> None:
    assert scheduler.without_hostfile(line) == want


def test_a_job_under_a_scheduler_exports_the_launcher_environment_without_the_rsh_agent() -> None:
    env = {"OMPI_MCA_plm_rsh_agent": "/kit/scripts/local/nsrsh", "OMPI_MCA_plm_rsh_no_tree_spawn": "1",
           "OMPI_MCA_btl_tcp_if_include": "10.99.0.0/24", "RSH": "/kit/scripts/local/nsrsh"}
    # Slurm starts Open MPI's daemons in the allocation; IOzone's children still need RSH.
    assert scheduler.job_env(labs.load("local-slurm"), env) == {
        "OMPI_MCA_btl_tcp_if_include": "10.99.0.0/24", "RSH": "/kit/scripts/local/nsrsh"}
    assert scheduler.job_env(labs.load("local"), env) == env
