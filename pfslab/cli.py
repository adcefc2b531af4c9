"""``pfslab``: subcommands for users and for the kit's own scripts.

Every failure is one line on stderr naming the bad value, and exit status 2.
Subcommands import what they need when they run, so the command line starts fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeAlias

from pfslab.errors import KitError

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class UsageError(KitError):
    """Bad input from the user: printed as one line, exit status 2."""


# ---- parse ---------------------------------------------------------------------------

def _cmd_parse(args: argparse.Namespace) -> int:
    from pfslab import tools

    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    json.dump(tools.parse_file(args.tool, path).as_dict(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _add_parse(sub: Subparsers) -> None:
    p = sub.add_parser(
        "parse",
        help="print the figures of a benchmark output as JSON",
        description="Parse an output of a run made inside or outside the kit and print, per "
        "operation, max, min, mean, units, iterations and tasks as JSON.",
    )
    p.add_argument("tool", help="the tool that wrote FILE: ior, mdtest, iozone, fio, lammps or ioshell")
    p.add_argument("file", help="the tool's output (stdout as saved)")
    p.set_defaults(handler=_cmd_parse)


# ---- lab -----------------------------------------------------------------------------

def _cmd_lab(args: argparse.Namespace) -> int:
    from pfslab import labs

    if args.lab_command == "list":
        print("\n".join(labs.lab_names()))
        return 0
    if args.lab_command == "export":
        from pfslab import labexport

        written = labexport.export(Path(args.directory))
        print(f"{written} resolved lab(s) in {args.directory}")
        return 0
    if args.lab_command == "docs":
        from pfslab import schemadoc

        sys.stdout.write(schemadoc.render())
        return 0
    if args.lab_command == "collisions":
        from pfslab import instance

        problems = instance.collisions(json.loads(Path(args.resolved).read_text()))
        if problems:
            print("\n".join(problems))
        return 1 if problems else 0
    if args.lab_command in ("stop-bench", "sweep", "leftovers"):
        from pfslab import lifecycle
        from pfslab.lifecycle import teardown

        try:
            return teardown.main(args.lab_command, args.lab if args.lab_command == "stop-bench" else args.resolved)
        except lifecycle.Refusal as err:
            return lifecycle.refuse(teardown.TAG, err)
    if args.lab_command in ("phases", "diagnose", "cluster-copy", "step-failed"):
        return _lab_remote(args)
    lab = labs.load(args.lab)
    if args.lab_command == "check":
        print(f"lab {lab['name']}: valid ({lab['filesystem']['type']}, target {lab['target']})")
    elif args.lab_command == "system":
        print(labs.system_name(lab["name"]))
    elif args.lab_command == "demo-filters":
        from pfslab import workloads

        try:
            print("\n".join(workloads.demo_filters(lab)))
        except workloads.WorkloadError as err:
            raise UsageError(str(err)) from None
    elif args.lab_command == "deviations":
        from pfslab import deviations

        print("\n".join(deviations.lines(deviations.listing(lab, labs.lab_path(args.lab)))))
    elif args.lab_command == "show":
        if args.target:
            from pfslab import registry

            if args.target not in registry.targets():
                raise UsageError(f"target {args.target!r} is not one of {', '.join(registry.targets())}")
            lab = labs.with_defaults(lab, args.target)
        from pfslab import instance, layout, registry

        if args.bridge or args.subnet:
            if not registry.target_of(lab).namespaces:
                raise UsageError(f"BRIDGE and SUBNET are settings of a local lab; lab {lab['name']} runs on {lab['target']}")
            lab = instance.apply_local(lab, args.bridge, args.subnet)
            errors = labs.validate(lab, lab["name"])
            if errors:
                raise UsageError(f"lab {lab['name']} with BRIDGE/SUBNET: {errors[0]}")
        shown = layout.resolved(lab, args.target)
        if args.instance:
            shown = instance.with_instance(shown, target=args.target)
        json.dump(shown, sys.stdout, indent=2 if args.pretty else None)
        sys.stdout.write("\n")
    else:
        # A field the lab leaves out has the schema's default, if it states one.
        value = labs.setting(lab, args.field)
        if value is None:
            raise UsageError(f"lab {lab['name']} has no field {args.field!r}")
        print(value if isinstance(value, str) else json.dumps(value))
    return 0


def _lab_remote(args: argparse.Namespace) -> int:
    """A remote lab's phases and its one-line reasons (pfslab/lifecycle/phases.py, reach.py):
    refusals in scripts/lib/common.sh's die form, with the caller's log tag."""
    from pfslab import lifecycle
    from pfslab.lifecycle import cluster_copy, phases, reach, status

    tag = os.environ.get("PFSLAB_LOG_TAG") or "pfslab"
    try:
        if args.lab_command == "phases":
            return phases.main(args.lab, args.action)
        if args.lab_command == "cluster-copy":
            return cluster_copy.main(args.lab)
        if args.lab_command == "step-failed":
            return phases.step_failed_main(args.lab, args.node, args.status, args.what)
        inventory, _ = status.lab_of(args.lab)
        print(reach.diagnose(args.lab, inventory, args.node, sys.stdin.read(),
                             lifecycle.build_dir() / args.lab / "ssh"))
        return 0
    except lifecycle.Refusal as err:
        return lifecycle.refuse(tag, err)


def _add_lab(sub: Subparsers) -> None:
    p = sub.add_parser("lab", help="list, validate and read lab files", description="Lab files under labs/.")
    actions = p.add_subparsers(dest="lab_command", required=True, metavar="ACTION")
    actions.add_parser("list", help="names of the labs that exist")
    actions.add_parser("docs", help="labs/README.md, generated from labs/schema.json")
    actions.add_parser("check", help="validate a lab file").add_argument("lab", help="lab name or path to a lab file")
    actions.add_parser("system", help="the lab's ReFrame system name (for --system)").add_argument("lab")
    actions.add_parser("demo-filters", help="ReFrame's -n arguments selecting the lab's demo cases, one a line"
                       ).add_argument("lab")
    actions.add_parser("deviations", help="where the lab departs from its sources (what, the source's value, the "
                       "kit's, why): its file's deviations list (and those of the labs it extends), each step's "
                       "seed_args, the launcher lines, each tool version its toolchain view does not share with "
                       "its source, and the file system release the nodes install"
                       ).add_argument("lab")
    show = actions.add_parser("show", help="print a validated lab as JSON (extends applied, defaults filled in, its layout derived)")
    show.add_argument("lab")
    show.add_argument("--pretty", action="store_true")
    show.add_argument("--target", help="the target to fill in defaults and lay the lab out for (default: the lab's own)")
    show.add_argument("--instance", action="store_true",
                      help="add the lab instance of this checkout and user (checkout id, owner, namespace prefix, run root)")
    show.add_argument("--bridge", help="a local lab's bridge instead of its file's targets.local.bridge (make lab-up BRIDGE=)")
    show.add_argument("--subnet", help="a local lab's subnet instead of its file's network.subnet (make lab-up SUBNET=)")
    coll = actions.add_parser("collisions", help="why a resolved local lab cannot come up beside the local labs that are up "
                              "(same bridge, overlapping subnet, same mount path); exit 1 if any")
    coll.add_argument("resolved", help="the resolved lab (pfslab lab show --instance)")
    # A local lab's teardown proof (scripts/lab down; pfslab/lifecycle/teardown.py).
    actions.add_parser("stop-bench", help="end a benchmark run of the lab still running on this machine"
                       ).add_argument("lab")
    # A remote lab's bring-up and lab-down (scripts/lib/remote.sh; pfslab/lifecycle/phases.py).
    phases = actions.add_parser("phases", help="start (up) or stop (down, reverse order) a remote lab's roles phase by "
                                "phase over SSH, each step bounded (PFSLAB_ROLE_STEP_TIMEOUT)")
    phases.add_argument("lab")
    phases.add_argument("action", help="up or down")
    actions.add_parser("cluster-copy", help="copy a remote lab's cluster files from its bootstrap node to the nodes "
                       "whose roles use them, host to host (scp -3), never through this machine's disk"
                       ).add_argument("lab")
    failed = actions.add_parser("step-failed", help="say why a step on a remote lab's node failed (ssh's 255: the node "
                                "restarted or was lost, PFSLAB_RESTART_WAIT) and exit 2")
    for name in ("lab", "node", "status", "what"):
        failed.add_argument(name)
    diagnose = actions.add_parser("diagnose", help="one line saying why ssh to a remote lab's node failed and what to "
                                  "do, from ssh's messages on stdin")
    diagnose.add_argument("lab")
    diagnose.add_argument("node")
    actions.add_parser("sweep", help="stop a local lab's bench, remove by name what is left of it (processes, mounts, "
                       "namespaces, links, its bridge unless another lab uses it, cgroups, files), then print what "
                       "still is, one a line; exit 1 if anything").add_argument(
                           "resolved", help="the lab as its lab-up resolved it (build/<lab>/lab.json)")
    actions.add_parser("leftovers", help="print what a local lab left on this machine, one a line (mount, namespace, "
                       "bridge, link, process, benchmark process, files, cgroup, directory); exit 1 if anything"
                       ).add_argument("resolved", help="the lab as its lab-up resolved it (build/<lab>/lab.json)")
    export = actions.add_parser(
        "export", help="write every lab resolved for every target (DIR/<lab>@<target>.json) and DIR/pairs.json; "
        "the Terraform tests plan these")
    export.add_argument("directory")
    get = actions.add_parser("get", help="print one field (dotted path) of a validated lab")
    get.add_argument("lab")
    get.add_argument("field", help="e.g. target or filesystem.mount")
    p.set_defaults(handler=_cmd_lab)


# ---- registry ------------------------------------------------------------------------

def _cmd_registry(args: argparse.Namespace) -> int:
    from pfslab import registry

    if args.registry_command == "families":
        for fam in registry.families().values():
            print(f"{fam.filesystem}\t{fam.family}\t{fam.title}")
        return 0
    if args.registry_command == "targets":
        for tgt in registry.targets().values():
            print(f"{tgt.target}\t{'remote' if tgt.remote else 'this host'}\t{tgt.title}")
        return 0
    if args.registry_command == "cluster-files":
        print("\n".join(registry.cluster_files_for(args.roles)))
        return 0
    if args.registry_command == "check":
        fams = registry.families()
        if not registry.schema_is_current():
            raise UsageError(
                "labs/schema.json is not what families/*/family.json and registry/*/*.json make; "
                "run '.venv/bin/pfslab registry schema --write'"
            )
        tgts, scheds = registry.targets(), registry.schedulers()
        print(f"{len(fams)} families ({', '.join(fams)}), {len(registry.all_roles())} roles, "
              f"{len(tgts)} targets ({', '.join(tgts)}), {len(scheds)} schedulers ({', '.join(scheds)}); "
              "labs/schema.json is current")
        return 0
    changed = registry.write_schema()
    print("labs/schema.json " + ("written from the registry" if changed else "already current"))
    return 0


def _add_registry(sub: Subparsers) -> None:
    p = sub.add_parser(
        "registry",
        help="the file-system families and targets of registry/",
        description="List the families or targets, check the registry files and that labs/schema.json "
        "matches them, or write labs/schema.json's family and target parts from them.",
    )
    actions = p.add_subparsers(dest="registry_command", required=True)
    actions.add_parser("families", help="one line per family: file system, family, title")
    actions.add_parser("targets", help="one line per target: name, where its nodes are, title")
    actions.add_parser("check", help="validate the family files; fail when labs/schema.json is stale")
    actions.add_parser("cluster-files", help="the cluster's files a node with these roles gets from the bootstrap "
                       "node, one a line").add_argument("roles", nargs="*", metavar="ROLE")
    schema = actions.add_parser("schema", help="write labs/schema.json's enums and settings from the families")
    schema.add_argument("--write", action="store_true", required=True, help="rewrite labs/schema.json in place")
    p.set_defaults(handler=_cmd_registry)


# ---- runs: record, verdict, report, compare, baseline, overhead ---------------------

def _cmd_record(args: argparse.Namespace) -> int:
    from pfslab import labs, provenance, state
    from pfslab.rfm_paths import tool_search_path

    labs.load(args.lab)
    data = provenance.record(Path(args.run_dir), args.lab, tool_search_path(state.lab(args.lab)))
    print(json.dumps({k: data[k] for k in ("lab", "git", "mode")}))
    return 0


def _cmd_accounting(args: argparse.Namespace) -> int:
    from pfslab import accounting, state

    entry = accounting.collect(Path(args.run_dir), state.lab(args.lab), Path(args.slurm_conf) if args.slurm_conf else None)
    if entry is None:
        print(f"lab {args.lab} has no Slurm: no accounting records to keep")
        return 0
    if entry["source"] is None:
        raise KitError(f"no accounting records kept for {len(entry['jobs'])} job(s): {entry['error']}")
    missing = f"; no record of job(s) {', '.join(entry['missing'])}" if entry["missing"] else ""
    print(f"{accounting.FILE_NAME}: {len(entry['jobs'])} job(s) from {entry['source']}{missing}")
    return 0


def _add_accounting(sub: Subparsers) -> None:
    p = sub.add_parser("accounting", help="keep the Slurm accounting records of a run's jobs in its run directory")
    p.add_argument("run_dir")
    p.add_argument("lab")
    p.add_argument("--slurm-conf", help="the cluster's slurm.conf (default $SLURM_CONF, else /etc/slurm/slurm.conf)")
    p.set_defaults(handler=_cmd_accounting)


def _cmd_run_dir(args: argparse.Namespace) -> int:
    from pfslab import labs, state

    labs.lab_path(args.lab)  # an unknown lab is an error here, not an empty directory
    try:
        print(state.new_run_dir(args.lab, "-dry" if args.dry else "", args.name))
    except ValueError as error:
        raise KitError(str(error)) from None
    except FileExistsError:
        raise KitError(f"run directory {args.name} of lab {args.lab} exists already") from None
    return 0


def _add_run_dir(sub: Subparsers) -> None:
    p = sub.add_parser("run-dir", help="make a new run directory build/runs/<lab>/<UTC time>[-dry] and print it")
    p.add_argument("lab")
    p.add_argument("--dry", action="store_true", help="a dry run's directory (suffix -dry)")
    p.add_argument("--name", help="the run's name, given by the kit's machine (a run on a remote lab's login node)")
    p.set_defaults(handler=_cmd_run_dir)


def _cmd_junit_error(args: argparse.Namespace) -> int:
    from pfslab import junit

    junit.write_error(Path(args.run_dir), args.message)
    return 0


def _add_junit_error(sub: Subparsers) -> None:
    p = sub.add_parser("junit-error", help="give a run that ended before ReFrame reported a junit.xml with one error")
    p.add_argument("run_dir")
    p.add_argument("message", help="why the run ended")
    p.set_defaults(handler=_cmd_junit_error)


def _add_record(sub: Subparsers) -> None:
    p = sub.add_parser("record", help="store a run's provenance (lab, references, inventory, git, tool versions)")
    p.add_argument("run_dir")
    p.add_argument("lab")
    p.set_defaults(handler=_cmd_record)


def _cmd_verdict(args: argparse.Namespace) -> int:
    from pfslab.lifecycle import bench

    data, table = bench.judged(Path(args.run_dir))
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(table)
    return bench.VERDICT_EXIT[data["summary"]["overall"]]


def _add_verdict(sub: Subparsers) -> None:
    p = sub.add_parser(
        "verdict",
        help="the pass/fail/skip table of a run",
        description="One row per figure of a run (and per sweep-wide reference): measured, reference, "
        "verdict. Exit status 0 when the run passed, 1 when any figure failed, 3 when it judged "
        "nothing (no test ran, or no figure had a threshold).",
    )
    p.add_argument("run_dir", help="build/runs/<lab>/<timestamp>")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(handler=_cmd_verdict)


def _cmd_report(args: argparse.Namespace) -> int:
    from pfslab import report, runs, state

    run = runs.resolve(args.run, state.active_lab() if not args.run else None)
    print(report.build(run, Path(args.out) if args.out else None))
    return 0


def _add_report(sub: Subparsers) -> None:
    p = sub.add_parser("report", help="write a run's HTML report and PNG plots into <run>/report/")
    p.add_argument("run", nargs="?", help="run directory or <lab>/<timestamp> (default: the newest run)")
    p.add_argument("--out", help="write into this directory instead of <run>/report/")
    p.set_defaults(handler=_cmd_report)


def _cmd_compare(args: argparse.Namespace) -> int:
    from pfslab import compare, runs

    run_a, run_b = runs.resolve(args.a), runs.resolve(args.b)
    sources = compare.read_stored(run_a, run_b)
    changes = compare.compare(run_a, run_b)
    print(compare.table(changes, str(run_a.path), str(run_b.path), sources))
    return 1 if any(c.verdict == "worse" for c in changes) else 0


def _add_compare(sub: Subparsers) -> None:
    p = sub.add_parser("compare", help="what changed from run A to run B, noise taken into account")
    p.add_argument("a", help="run directory or <lab>/<timestamp>")
    p.add_argument("b", help="run directory or <lab>/<timestamp>")
    p.set_defaults(handler=_cmd_compare)


def _cmd_baseline(args: argparse.Namespace) -> int:
    from pfslab import baseline, labs

    labs.load(args.lab)
    path, count = baseline.write(args.lab, [Path(d) for d in args.run_dirs])
    print(f"{path}: {count} baseline references from {len(args.run_dirs)} runs")
    return 0


def _add_baseline(sub: Subparsers) -> None:
    p = sub.add_parser("baseline", help="write a lab's references from runs on a known-good lab")
    p.add_argument("lab")
    p.add_argument("run_dirs", nargs="+", help="build/runs/<lab>/<timestamp> of each run")
    p.set_defaults(handler=_cmd_baseline)


def _cmd_overhead(args: argparse.Namespace) -> int:
    from pfslab import overhead

    rounds, threads, tools = args.rounds, args.threads, list(args.tools)
    if args.words:
        rounds, threads = args.words[0], args.words[1] if len(args.words) > 1 else threads
        tools = args.words[2:] or tools
    for name, value in (("ROUNDS", rounds), ("THREADS", threads)):
        if not value.isdigit() or int(value) < 1:
            print(f"[bench-overhead] error: {name}={value} is not allowed; give a whole number of at least 1",
                  file=sys.stderr)
            return 2
    for line in overhead.measure(int(rounds), int(threads), tools):
        print(line, flush=True)
    return 0


def _add_overhead(sub: Subparsers) -> None:
    p = sub.add_parser("overhead", help="kit/hand throughput ratio of one case per tool on the running lab "
                       "(scripts/bench-overhead [ROUNDS] [THREADS] [TOOL...])")
    p.add_argument("--rounds", default="5")
    p.add_argument("--threads", default="2")
    p.add_argument("--tools", nargs="+", default=["ior", "fio"], help="of ior, fio (default: both)")
    p.add_argument("words", nargs="*", metavar="ROUNDS [THREADS [TOOL...]]")
    p.set_defaults(handler=_cmd_overhead)


def _cmd_baseline_runs(args: argparse.Namespace) -> int:
    from pfslab import lifecycle
    from pfslab.lifecycle import baseline_runs

    bench_args = list(args.bench_args)
    if bench_args[:1] == ["--"]:
        bench_args = bench_args[1:]
    try:
        return baseline_runs.main(os.environ.get("REPEAT") or "3", bench_args)
    except lifecycle.Refusal as err:
        return lifecycle.refuse(baseline_runs.TAG, err)


def _add_baseline_runs(sub: Subparsers) -> None:
    p = sub.add_parser("baseline-runs", help="make baseline: run the active lab's suite REPEAT times (default 3) and "
                       "write reframe/references/<lab>.yaml from the runs (scripts/baseline)")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="-- then scripts/bench's options")
    p.set_defaults(handler=_cmd_baseline_runs)


def _cmd_drop_caches(args: argparse.Namespace) -> int:
    from pfslab import lifecycle
    from pfslab.lifecycle import drop_caches

    os.environ["PFSLAB_LOG_TAG"] = drop_caches.TAG
    try:
        return drop_caches.main(args.lab)
    except lifecycle.Refusal as err:
        return lifecycle.refuse(drop_caches.TAG, err)


def _add_drop_caches(sub: Subparsers) -> None:
    p = sub.add_parser("drop-caches", help="drop the page, dentry and inode caches on every node of the running lab "
                       "(scripts/drop-caches; job scripts call it)")
    p.add_argument("lab", nargs="?", help="default: $PFSLAB_LAB, then the active lab")
    p.set_defaults(handler=_cmd_drop_caches)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from pfslab import calibration, labs

    lab = labs.load(args.lab)
    if args.check:
        from pfslab.lifecycle import bench

        return 1 if bench.record_pre_run_check(lab["name"], Path(args.check)) else 0
    if args.show:
        data = calibration.load(calibration.path_for(lab["name"]))
        if data is None:
            raise UsageError(f"lab {lab['name']} has no calibration; 'make calibrate' runs it")
        print("\n".join(calibration.summary_lines(data)))
        return 0
    data = calibration.run(lab["name"], say=lambda line: print(f"[calibrate] {line}", file=sys.stderr, flush=True))
    print("\n".join(calibration.summary_lines(data)))
    return 0


def _add_calibrate(sub: Subparsers) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure what the running lab can do (fio probes through a client) for its thresholds",
        description="Run the calibration probes of reframe/references/policy.yaml through the lab's first "
        "client and write build/<lab>/calibration.json; the lab's figures are then judged against "
        "floors of these probe figures.",
    )
    p.add_argument("lab")
    p.add_argument("--show", action="store_true", help="print the lab's calibration instead of running it")
    p.add_argument("--check", metavar="RUN_DIR",
                   help="repeat the quick probes against the calibration; when the lab is below its floors, "
                        "record it as unhealthy in RUN_DIR (the run's tests then skip) and exit 1")
    p.set_defaults(handler=_cmd_calibrate)


def _cmd_bench(args: argparse.Namespace) -> int:
    from pfslab import lifecycle
    from pfslab.lifecycle import bench, bench_launch

    reframe_args = list(args.reframe_args)
    if reframe_args[:1] == ["--"]:
        reframe_args = reframe_args[1:]
    try:
        return bench_launch.main(reframe_args)
    except lifecycle.Refusal as err:
        return lifecycle.refuse("bench", err)
    except KitError as err:
        # scripts/bench exec's this command: its errors read as that script's.
        bench.say(f"error: {err}")
        return 2
    except KeyboardInterrupt:
        bench.say("interrupted before ReFrame started")
        return 130


def _add_bench(sub: Subparsers) -> None:
    p = sub.add_parser("bench", help="run the active lab's suite with ReFrame (scripts/bench): here, detached from "
                       "the terminal (a site lab), or on a remote lab's login node, followed and brought home")
    p.add_argument("reframe_args", nargs=argparse.REMAINDER,
                   help="-- then ReFrame's options (--demo: the lab's demo cases)")
    p.set_defaults(handler=_cmd_bench)


def _cmd_login(args: argparse.Namespace) -> int:
    """A remote lab's runs on its login node (pfslab/lifecycle/login_run.py), for the
    shell's lab-up and lab-down and the tests: refusals in the die form with the
    caller's log tag."""
    from pfslab import lifecycle
    from pfslab.lifecycle import login_run

    try:
        if args.login_command == "refuse-running":
            login_run.refuse_running(args.lab)
            return 0
        if args.login_command == "stop-bench":
            login_run.stop_bench(args.lab)
            return 0
        if args.login_command == "end-lab-processes":
            login_run.end_lab_processes(args.lab)
            return 0
        login = login_run.Login.of(args.lab)
        if args.login_command == "recorded":
            found = login_run.recorded(login)
            if found is not None:
                print(found.line())
            return 0
        if args.login_command == "launch":
            env, bench_args = login_run.split_launch_words(args.words)
            login_run.launch(login, args.name, env, bench_args)
            return 0
        if args.login_command == "follow":
            return login_run.follow(login, args.name, Path(args.console))
        return 0 if login_run.fetch_run(login, args.name, Path(args.dest)) else 1
    except lifecycle.Refusal as err:
        return lifecycle.refuse(login_run.tag(), err)


def _add_login(sub: Subparsers) -> None:
    p = sub.add_parser("login", help="a remote lab's runs on its login node (make bench launches, follows and brings "
                       "them home; lab-up and lab-down ask and end them)")
    actions = p.add_subparsers(dest="login_command", required=True, metavar="ACTION")
    actions.add_parser("refuse-running", help="exit 2 in one line when a run of the lab goes on its login node "
                       "(lab-up would restart the lab under it)").add_argument("lab")
    actions.add_parser("stop-bench", help="end a run of the lab still going on its login node").add_argument("lab")
    actions.add_parser("end-lab-processes", help="end every node's processes that use the lab's file system"
                       ).add_argument("lab")
    actions.add_parser("recorded", help="NAME SINCE STATE (running, ended, lost) of the run recorded on the lab's "
                       "login node; nothing when none").add_argument("lab")
    launch = actions.add_parser("launch", help="start scripts/bench on the login node detached from this session")
    launch.add_argument("lab")
    launch.add_argument("name", help="the run's name")
    launch.add_argument("words", nargs=argparse.REMAINDER, metavar="[VAR=VALUE...] -- BENCH-ARGS...")
    follow = actions.add_parser("follow", help="show the run's output from what CONSOLE holds to its end, reattaching "
                                "when the session drops (PFSLAB_REATTACH_TIMEOUT); exit with the run's status")
    for name in ("lab", "name", "console"):
        follow.add_argument(name)
    fetch = actions.add_parser("fetch-run", help="bring the run directory home whole (plain files and folders only)")
    for name in ("lab", "name", "dest"):
        fetch.add_argument(name)
    p.set_defaults(handler=_cmd_login)


# ---- a target's own commands -----------------------------------------------------------

def _add_targets(sub: Subparsers) -> None:
    """``pfslab <target> ...`` for every target whose target.json names a Python module:
    the module adds the actions and runs them (:class:`pfslab.registry.TargetCommands`)."""
    from pfslab import registry

    for target in registry.targets().values():
        if target.module is None:
            continue
        if target.target in sub.choices:
            raise registry.RegistryError(f"targets/{target.target}/{registry.TARGET_FILE}: python: "
                                         f"'pfslab {target.target}' is already one of pfslab's own commands")
        module = registry.target_module(target)
        p = sub.add_parser(target.target, help=module.HELP)
        module.add_commands(p)
        p.set_defaults(handler=module.run)


def _cmd_fabric_probe(args: argparse.Namespace) -> int:
    from pfslab import fabric, state

    path = Path(args.inventory) if args.inventory else state.inventory_path(args.lab)
    if not path.is_file():
        raise fabric.FabricError(f"lab {args.lab} is not up here (no {path})")
    inventory = json.loads(path.read_text())
    try:
        ok, line = fabric.run_probe(state.lab(args.lab), inventory, args.node_a, args.node_b)
    except fabric.ProbeUnavailable as err:
        print(f"no MPI to probe between {args.node_a} and {args.node_b}: {err}")
        return PROBE_UNAVAILABLE
    print(line)
    return 0 if ok else 1


#: fabric-probe's exit status when the node has no MPI or ior to probe with (preflight: SKIP).
PROBE_UNAVAILABLE = 3


def _add_fabric_probe(sub: Subparsers) -> None:
    p = sub.add_parser(
        "fabric-probe",
        help="which transport MPI selects between two nodes of the lab (run on its login node)",
        description="Two ranks, one per node, started with the lab's launcher, print Open MPI's pml/mtl/btl and "
        "UCX/libfabric choice; one line says whether they use the lab's network.fabric (registry/fabrics.json). "
        "Exit status 1 when they do not (e.g. TCP on an InfiniBand or EFA lab), 3 when the node has no mpirun "
        "or ior to probe with.",
    )
    p.add_argument("lab")
    p.add_argument("node_a")
    p.add_argument("node_b")
    p.add_argument("--inventory", help="the lab's inventory (default build/<lab>/inventory.json)")
    p.set_defaults(handler=_cmd_fabric_probe)


# ---- smoke ---------------------------------------------------------------------------

def _cmd_smoke(args: argparse.Namespace) -> int:
    from pfslab import smoke_run

    return smoke_run.main(args)


def _add_smoke(sub: Subparsers) -> None:
    p = sub.add_parser("smoke", help="run every job of the labs at tiny scale here with the tools and options they use")
    p.add_argument("labs", nargs="*", help="labs (default: every lab in labs/)")
    p.add_argument("--scratch", help="folder to make the smoke's scratch directory in (default $SCRATCH, else /tmp)")
    p.add_argument("--require", default="", help="comma-separated tools whose absence fails the smoke (CI: ior,mdtest)")
    p.set_defaults(handler=_cmd_smoke)


# ---- lifecycle: preflight and the run's watchdog --------------------------------------

def _cmd_lifecycle(args: argparse.Namespace) -> int:
    from pfslab import lifecycle

    # Their refusals read as the shell script's that runs them.
    tag = {"health": "lab"}.get(args.command, args.command)
    try:
        if args.command == "preflight":
            from pfslab.lifecycle.preflight import preflight

            return preflight(args.args)
        if args.command == "health":
            from pfslab.lifecycle import health_command

            return health_command.main(args.args)
        from pfslab.lifecycle.watchdog import watchdog

        return watchdog(args.args)
    except lifecycle.Refusal as err:
        return lifecycle.refuse(tag, err)


def _add_lifecycle(sub: Subparsers) -> None:
    p = sub.add_parser("preflight", help="check a running remote lab's nodes, fabric and MPI (scripts/preflight)")
    p.add_argument("args", nargs="*", metavar="LAB", help="the lab (default: the active one)")
    p.set_defaults(handler=_cmd_lifecycle)
    p = sub.add_parser("health", help="a local lab's health: repair it and wait until it is "
                       "healthy, or its status table and mounts (scripts/lab up and status)")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="converge LAB SECONDS | status LAB")
    p.set_defaults(handler=_cmd_lifecycle)
    p = sub.add_parser("watchdog", help="watch a lab's health during a run (scripts/watchdog)")
    p.add_argument("args", nargs="*", metavar="LAB RUN_DIR WATCHED_PID [INTERVAL_S]")
    p.set_defaults(handler=_cmd_lifecycle)
    p = sub.add_parser("local", help="a local lab's plumbing on this machine: its network, directories, mounts "
                       "and node files (scripts/local/*, which Terraform's provisioners run)")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="netns|prepare|cleanup|bind-mount|unmount|node-config|"
                   "cluster-files ARGS")
    p.set_defaults(handler=_cmd_local)
    p = sub.add_parser("throttle", help="starve a running local lab's daemons of CPU, or release them (scripts/throttle)")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="on [PERCENT] [DAEMON] | off | status")
    p.set_defaults(handler=_cmd_local)


def _cmd_local(args: argparse.Namespace) -> int:
    from pfslab.lifecycle import local_command

    if args.command == "throttle":
        return local_command.throttle_main(args.args)
    return local_command.main(args.args)


def _cmd_labctl(args: argparse.Namespace) -> int:
    from pfslab.lifecycle import labctl

    return labctl.main(args.args)


def _add_labctl(sub: Subparsers) -> None:
    p = sub.add_parser("labctl", help="bring labs up and down, their status, calibration and expiry (scripts/lab)",
                       description="The work behind scripts/lab: up [LAB], down [LAB], status [LAB], calibrate [LAB], "
                       "active, stop-bench LAB, expired; terraform LAB TARGET ARGS (a remote lab's Terraform root).")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ACTION [LAB]")
    p.set_defaults(handler=_cmd_labctl)


# ---- hosts ---------------------------------------------------------------------------

def _cmd_hosts(args: argparse.Namespace) -> int:
    from pfslab.hosts import command

    return command.main(args.args)


def _add_hosts(sub: Subparsers) -> None:
    p = sub.add_parser("hosts", help="hosts on this machine standing in for a site's existing machines "
                       "(scripts/hosts: up, down, status, exec, stop-sshd, restart, poweroff)")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ACTION LAB [HOST [COMMAND...]]")
    p.set_defaults(handler=_cmd_hosts)


# ---- image: the kit's digest and archive, Packer's template directory ------------------

def _cmd_image(args: argparse.Namespace) -> int:
    from pfslab.images import command

    return command.main(args.args)


def _add_image(sub: Subparsers) -> None:
    p = sub.add_parser("image", help="the kit's files, digest and archive that images carry, the template directory "
                       "Packer gets, QEMU's accelerator, a qemu image's boot test, the images' build (scripts/images, "
                       "scripts/image-digest, scripts/image-boot-test)")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="digest [--files|--manifest] | kit-archive OUT.tar.gz "
                   "| templates DIR | accel KERNEL | boot-test IMAGE [USER_DATA] | build TARGET [ROLE]")
    p.set_defaults(handler=_cmd_image)


# ---- dev: the developer and CI commands behind scripts/ --------------------------------

#: ``pfslab dev <tool>``: the module of pfslab/dev/ running it (scripts/<tool> calls it).
DEV_TOOLS = {
    "check-terraform": "check_terraform", "checkov": "checkov", "cloud-emulator": "cloud_emulator",
    "deps": "deps", "dry-run": "dry_run", "lint": "lint", "lock-python": "lock_python",
    "render-user-data": "render_user_data", "test-lab": "test_lab",
}


def _cmd_dev(args: argparse.Namespace) -> int:
    import importlib

    module = importlib.import_module(f"pfslab.dev.{DEV_TOOLS[args.tool]}")
    code: int = module.TOOL.main(module.body, args.args)
    return code


def _add_dev(sub: Subparsers) -> None:
    p = sub.add_parser("dev", help="the kit's developer and CI commands (scripts/<tool> runs them: make deps, lint, "
                       "test-terraform, checkov, lock, test-lab, dry-run, user-data, the cloud tests' emulator)")
    p.add_argument("tool", choices=sorted(DEV_TOOLS))
    p.add_argument("args", nargs=argparse.REMAINDER, help="the tool's arguments (see scripts/<tool>)")
    p.set_defaults(handler=_cmd_dev)


# ---- entry point ---------------------------------------------------------------------

REGISTRARS: tuple[Callable[[Subparsers], None], ...] = (
    _add_parse, _add_lab, _add_record, _add_verdict, _add_report, _add_compare, _add_baseline, _add_overhead,
    _add_calibrate, _add_registry, _add_run_dir, _add_fabric_probe,
    _add_smoke, _add_accounting, _add_junit_error, _add_bench, _add_lifecycle, _add_labctl, _add_login,
    _add_baseline_runs, _add_drop_caches, _add_hosts, _add_image, _add_dev,
)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """pfslab's parser. The targets' commands come from the registry, whose files are
    validated when read (tens of ms): they are added only when ``argv`` does not start
    with one of pfslab's own commands (a target's command, --help, a typo, no ``argv``)."""
    parser = argparse.ArgumentParser(prog="pfslab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTRARS:
        register(sub)
    if not argv or argv[0] not in sub.choices:
        _add_targets(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
    except KitError as err:
        print(f"pfslab: {err}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except KitError as err:
        print(f"pfslab {args.command}: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (e.g. `| head`) left: not an error of ours, and no traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
