"""ReFrame's configuration, built from the kit's state rather than written by hand.

Systems: the active lab (from its inventory; selected by default), one system per
lab that is provisioned elsewhere (cloud, bare metal), so ``--dry-run --system
<lab>`` writes its job scripts here, and ``nolab``, chosen when nothing is up.
Every run goes to its own ``build/runs/<lab>/<timestamp>/`` with its JSON report and
its JUnit report; an invocation that runs no test (``-l``, ``--describe`` ...) makes no
directory. ReFrame also stores every run in one results database per checkout
(:data:`RESULTS_DB`), where ``make compare`` reads it back. ``--mode quick|full``
picks the sweep the tests expand (as PFSLAB_MODE does; the command line wins).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, labs, registry, scheduler, state, workloads

NO_LAB = "nolab"
PARTITION = "clients"
#: ReFrame's results database (sqlite): every session of this checkout, across run
#: directories, so it is not inside any of them. ReFrame's RFM_SQLITE_DB_FILE overrides it.
RESULTS_DB: Path = state.BUILD_DIR / "reframe-results.db"


#: ReFrame's actions that run no test: ReFrame acts on them and exits before running
#: anything, also when -r is given too (reframe/frontend/cli.py, 4.10).
NO_RUN_OPTIONS = frozenset({
    "--list", "--list-detailed", "--list-tags", "--describe", "--show-config", "--ci-generate",
    "--detect-host-topology", "--list-stored-sessions", "--list-stored-testcases",
    "--describe-stored-sessions", "--describe-stored-testcases", "--delete-stored-sessions",
    "--performance-compare",
})


def runs_tests(argv: Sequence[str]) -> bool:
    """Whether ReFrame's command line (without the program) may run tests, so needs a run directory.

    Errs towards a directory: an option ReFrame would take for an abbreviation of a
    listing (``--list-t``) still gets one, as every invocation did before.
    """
    for token in argv:
        if token.split("=", 1)[0] in NO_RUN_OPTIONS:
            return False
        # -l and -L take an optional C or T (``-lC``); no other short option starts so.
        if len(token) >= 2 and token[0] == "-" and token[1] in "lL":
            return False
    return True


def mode_of(argv: Sequence[str]) -> str | None:
    """The ``--mode`` ReFrame's command line names, if it names one of the kit's modes."""
    for n, token in enumerate(argv):
        if token == "--mode" and n + 1 < len(argv):
            value = argv[n + 1]
        elif token.startswith("--mode="):
            value = token.split("=", 1)[1]
        else:
            continue
        return value if value in workloads.MODES else None
    return None


def _modes() -> list[dict[str, Any]]:
    """quick and full as ReFrame modes. A mode is a different sweep (other thread counts,
    other sizes), that is other parameter values, and ReFrame applies a mode's options
    only after the test files defined their parameters; so :func:`build` reads
    ``--mode`` itself, as PFSLAB_MODE, and the mode adds no option of its own."""
    return [{"name": mode, "options": []} for mode in workloads.MODES]


def run_dir(lab: str) -> Path:
    """This invocation's run directory: PFSLAB_RUN_DIR (``make bench``) or a new timestamped one."""
    explicit = os.environ.get("PFSLAB_RUN_DIR")
    if explicit:
        return Path(explicit)
    return state.RUNS_DIR / lab / state.run_name(f"-{os.getpid()}")


def _partition(descr: str, scheduler: str, launcher: str, max_jobs: int = 1) -> dict[str, Any]:
    # max_jobs 1: storage benchmarks must never share the file system with each other.
    return {
        "name": PARTITION,
        "descr": descr,
        "scheduler": scheduler,
        "launcher": launcher,
        "environs": ["pfslab"],
        "max_jobs": max_jobs,
    }


def _lab_partition(lab: dict[str, Any], descr: str) -> dict[str, Any]:
    """The partition of a lab: its scheduler's (one batch job per test, asking for the
    lab's access options), or this machine's when it has none."""
    partition = _partition(descr, scheduler.reframe_scheduler(lab), scheduler.reframe_launcher(lab))
    if scheduler.kind(lab) is not None:
        partition["access"] = scheduler.access(lab)
    return partition


def _system(name: str, descr: str, hostnames: list[str], partition: dict[str, Any], runs: Path) -> dict[str, Any]:
    return {
        "name": name,
        "descr": descr,
        "hostnames": hostnames,
        "modules_system": "nomod",
        "outputdir": str(runs / "output"),
        "stagedir": str(runs / "stage"),
        "partitions": [partition],
    }


def build(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The configuration for ReFrame's command line ``argv`` (default: this process's)."""
    argv = sys.argv[1:] if argv is None else argv
    mode = mode_of(argv)
    if mode is not None:
        # Read by workloads.lab_mode as the test files expand their cases, after this.
        os.environ["PFSLAB_MODE"] = mode
    active = state.active_lab()
    inventory = state.inventory(active) if active else None
    runs = run_dir(active if active and inventory else NO_LAB)
    running = runs_tests(argv)
    if running:
        runs.mkdir(parents=True, exist_ok=True)
    systems: list[dict[str, Any]] = []
    if active and inventory:
        systems.append(
            _system(labs.system_name(active), inventory.get("title", active), [".*"],
                    _lab_partition(state.lab(active), f"clients of lab {active}"), runs)
        )
    for name in labs.lab_names():
        if name == active:
            continue
        lab = labs.load(name)
        if registry.target_of(lab).namespaces and scheduler.kind(lab) is None:
            # A local lab only exists once it is up; one with a scheduler has a dry-run
            # system, so its batch job scripts can be read before it is.
            continue
        system = labs.system_name(name)
        systems.append(
            _system(system, lab["title"], [f"^pfslab-never-matches-{system}$"],
                    _lab_partition(lab, f"clients of lab {name} (dry runs; run there for results)"), runs)
        )
    systems.append(
        _system(NO_LAB, "no lab is up", [".*"], _partition("no lab is up: run make lab-up", "local", "local"), runs)
    )
    return {
        "systems": systems,
        "environments": [{"name": "pfslab", "target_systems": ["*"]}],
        "modes": _modes(),
        "general": [
            {
                "check_search_path": [str(KIT_ROOT / "reframe")],
                "report_file": str(runs / "report.json"),
                "report_junit": str(runs / "junit.xml"),
                "purge_environment": False,
            }
        ],
        "storage": [{"enable": True, "backend": "sqlite", "sqlite_db_file": str(RESULTS_DB)}],
        "logging": [
            {
                "level": "debug",
                "handlers": [
                    {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
                    # ReFrame opens the log file as it starts: a listing would leave a directory behind.
                    *([{"type": "file", "name": str(runs / "reframe.log"), "level": "debug",
                        "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s", "append": False}]
                      if running else []),
                ],
                "handlers_perflog": [
                    {
                        "type": "filelog",
                        "prefix": str(runs / "perflogs") + "/%(check_system)s/%(check_partition)s",
                        "level": "info",
                        "format": "%(check_job_completion_time)s|%(check_info)s|%(check_perfvalues)s",
                        "format_perfvars": "%(check_perf_var)s=%(check_perf_value)s %(check_perf_unit)s|",
                        "append": True,
                    }
                ],
            }
        ],
    }


