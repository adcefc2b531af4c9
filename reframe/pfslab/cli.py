"""``scripts/pfslab``: subcommands for users and for the kit's own scripts.

Every failure is one line on stderr naming the bad value, and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pfslab.results import ParseError


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


Handler = Callable[[argparse.Namespace], int]


def _cmd_parse(args: argparse.Namespace) -> int:
    from pfslab import parsers

    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    result = parsers.parse_file(args.tool, path)
    json.dump(result.as_dict(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _add_parse(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "parse",
        help="print the figures of a benchmark output as JSON",
        description="Parse an output of a run made inside or outside the kit and print, per "
        "operation, max, min, mean, units, iterations and tasks as JSON.",
    )
    p.add_argument("tool", help="the tool that wrote FILE: ior, mdtest, iozone, fio, lammps or ioshell")
    p.add_argument("file", help="the tool's output (stdout as saved)")
    p.set_defaults(handler=_cmd_parse)


#: Subcommand registrars; each module of the kit adds its own here.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_add_parse]  # type: ignore[type-arg]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pfslab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTRARS:
        register(sub)
    return parser


def _cmd_verdict(args: argparse.Namespace) -> int:
    from pfslab import runs, verdict

    from pfslab.labs import LabError
    from pfslab.references import ReferenceError

    try:
        rows = runs.resolve(args.run_dir).rows()
    except (runs.RunError, LabError, ReferenceError) as err:
        raise UsageError(str(err)) from None
    if args.json:
        json.dump({"rows": [r.as_dict() for r in rows], "summary": verdict.summary(rows)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(verdict.table(rows))
    return 1 if verdict.summary(rows)["overall"] == "fail" else 0


def _add_verdict(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "verdict",
        help="the pass/fail/skip table of a run",
        description="One row per figure of a run directory's ReFrame report: measured, reference, "
        "verdict. Exit status 1 when any figure failed.",
    )
    p.add_argument("run_dir", help="build/runs/<lab>/<timestamp>")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(handler=_cmd_verdict)


REGISTRARS.append(_add_verdict)


def _cmd_record(args: argparse.Namespace) -> int:
    from pfslab import labs, provenance
    from pfslab.rfm_paths import tool_search_path

    try:
        labs.load(args.lab)
    except labs.LabError as err:
        raise UsageError(str(err)) from None
    data = provenance.record(Path(args.run_dir), args.lab, tool_search_path())
    print(json.dumps({k: data[k] for k in ("lab", "git", "mode")}))
    return 0


def _add_record(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("record", help="store a run's provenance (lab file, inventory, git, tool versions)")
    p.add_argument("run_dir")
    p.add_argument("lab")
    p.set_defaults(handler=_cmd_record)


REGISTRARS.append(_add_record)


def _cmd_baseline(args: argparse.Namespace) -> int:
    from pfslab import baseline, labs

    try:
        labs.load(args.lab)
        path, count = baseline.write(args.lab, [Path(d) for d in args.run_dirs])
    except (labs.LabError, baseline.BaselineError) as err:
        raise UsageError(str(err)) from None
    print(f"{path}: {count} baseline references from {len(args.run_dirs)} runs")
    return 0


def _add_baseline(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("baseline", help="write a lab's references from runs on a known-good lab")
    p.add_argument("lab")
    p.add_argument("run_dirs", nargs="+", help="build/runs/<lab>/<timestamp> of each run")
    p.set_defaults(handler=_cmd_baseline)


REGISTRARS.append(_add_baseline)


def _cmd_overhead(args: argparse.Namespace) -> int:
    from pfslab import overhead

    try:
        for line in overhead.measure(args.rounds, args.threads):
            print(line, flush=True)
    except overhead.OverheadError as err:
        raise UsageError(str(err)) from None
    return 0


def _add_overhead(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("overhead", help="kit/hand throughput ratio of one case on the running lab")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.set_defaults(handler=_cmd_overhead)


REGISTRARS.append(_add_overhead)


def _cmd_report(args: argparse.Namespace) -> int:
    from pfslab import report, runs, state
    from pfslab.labs import LabError
    from pfslab.references import ReferenceError

    try:
        run = runs.resolve(args.run, state.active_lab() if not args.run else None)
        page = report.build(run, Path(args.out) if args.out else None)
    except (runs.RunError, LabError, ReferenceError) as err:
        raise UsageError(str(err)) from None
    print(page)
    return 0


def _add_report(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("report", help="write a run's HTML report and PNG plots into <run>/report/")
    p.add_argument("run", nargs="?", help="run directory or <lab>/<timestamp> (default: the newest run)")
    p.add_argument("--out", help="write into this directory instead of <run>/report/")
    p.set_defaults(handler=_cmd_report)


REGISTRARS.append(_add_report)


def _cmd_compare(args: argparse.Namespace) -> int:
    from pfslab import compare, runs
    from pfslab.labs import LabError
    from pfslab.references import ReferenceError

    try:
        run_a, run_b = runs.resolve(args.a), runs.resolve(args.b)
        changes = compare.compare(run_a, run_b)
    except (runs.RunError, LabError, ReferenceError) as err:
        raise UsageError(str(err)) from None
    print(compare.table(changes, str(run_a.path), str(run_b.path)))
    return 1 if any(c.verdict == "worse" for c in changes) else 0


def _add_compare(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("compare", help="what changed from run A to run B, noise taken into account")
    p.add_argument("a", help="run directory or <lab>/<timestamp>")
    p.add_argument("b", help="run directory or <lab>/<timestamp>")
    p.set_defaults(handler=_cmd_compare)


REGISTRARS.append(_add_compare)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except (UsageError, ParseError) as err:
        print(f"pfslab {args.command}: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (e.g. `| head`) left: not an error of ours, and no traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _cmd_lab(args: argparse.Namespace) -> int:
    from pfslab import labs

    try:
        if args.lab_command == "list":
            for name in labs.lab_names():
                print(name)
            return 0
        lab = labs.load(args.lab)
    except labs.LabError as err:
        raise UsageError(str(err)) from None
    if args.lab_command == "check":
        print(f"lab {lab['name']}: valid ({lab['filesystem']['type']}, target {lab['target']})")
    elif args.lab_command == "show":
        json.dump(lab, sys.stdout, indent=2 if args.pretty else None)
        sys.stdout.write("\n")
    elif args.lab_command == "get":
        value: object = lab
        for key in args.field.split("."):
            if not isinstance(value, dict) or key not in value:
                raise UsageError(f"lab {lab['name']} has no field {args.field!r}")
            value = value[key]
        print(value if isinstance(value, str) else json.dumps(value))
    return 0


def _add_lab(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("lab", help="list, validate and read lab files", description="Lab files under labs/.")
    lab_sub = p.add_subparsers(dest="lab_command", required=True, metavar="ACTION")
    lab_sub.add_parser("list", help="names of the labs that exist")
    for action, text in (("check", "validate a lab file"), ("show", "print a validated lab as JSON")):
        q = lab_sub.add_parser(action, help=text)
        q.add_argument("lab", help="lab name or path to a lab file")
        if action == "show":
            q.add_argument("--pretty", action="store_true")
    g = lab_sub.add_parser("get", help="print one field (dotted path) of a validated lab")
    g.add_argument("lab")
    g.add_argument("field", help="e.g. target or filesystem.mount")
    p.set_defaults(handler=_cmd_lab)


REGISTRARS.append(_add_lab)
