"""ReFrame's configuration, built from the kit's state rather than written by hand.

Systems: the active lab (from its inventory; selected by default), one system per
lab that is provisioned elsewhere (cloud, bare metal), so ``--dry-run --system
<lab>`` writes its job scripts here, and ``nolab``, chosen when nothing is up.
Every run goes to its own ``build/runs/<lab>/<timestamp>/`` with its JSON report and
its JUnit report; ReFrame also stores every run in one results database per checkout
(:data:`RESULTS_DB`), where ``make compare`` reads it back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT, labs, state

NO_LAB = "nolab"
PARTITION = "clients"
#: ReFrame's results database (sqlite): every session of this checkout, across run
#: directories, so it is not inside any of them. ReFrame's RFM_SQLITE_DB_FILE overrides it.
RESULTS_DB: Path = state.BUILD_DIR / "reframe-results.db"


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


def build() -> dict[str, Any]:
    active = state.active_lab()
    inventory = state.inventory(active) if active else None
    runs = run_dir(active if active and inventory else NO_LAB)
    runs.mkdir(parents=True, exist_ok=True)
    systems: list[dict[str, Any]] = []
    if active and inventory:
        systems.append(
            _system(labs.system_name(active), inventory.get("title", active), [".*"],
                    _partition(f"clients of lab {active}", "local", "local"), runs)
        )
    for name in labs.lab_names():
        if name == active:
            continue
        lab = labs.load(name)
        if lab["target"] == "local":
            continue  # a local lab only exists once it is up
        system = labs.system_name(name)
        systems.append(
            _system(system, lab["title"], [f"^pfslab-never-matches-{system}$"],
                    _partition(f"clients of lab {name} (dry runs; run there for results)", "local", "local"), runs)
        )
    systems.append(
        _system(NO_LAB, "no lab is up", [".*"], _partition("no lab is up: run make lab-up", "local", "local"), runs)
    )
    return {
        "systems": systems,
        "environments": [{"name": "pfslab", "target_systems": ["*"]}],
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
                    {"type": "file", "name": str(runs / "reframe.log"), "level": "debug",
                     "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s", "append": False},
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


