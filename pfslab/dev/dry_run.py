"""``make dry-run`` (scripts/dry-run [LAB...]; default: every lab whose target is not local):
write the job scripts of labs that run elsewhere, without running anything.

Each lab gets a run directory build/runs/<lab>/<timestamp>-dry/ with ReFrame's report and
JUnit report (junit.xml; one error in it when the dry run failed), the lab as resolved and
its references, so ``make report RUN=...`` draws the lab's published curves. Prints the
job scripts' location and the time taken.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.dev.common import Refusal, Tool, pfslab_cli
from pfslab.errors import KitError

TOOL = Tool("dry-run")


def runs_here(lab: str) -> bool:
    """Whether the lab's nodes are namespaces of this host (its target's ``namespaces``)."""
    from pfslab import labs, registry

    return registry.target_of(labs.load(lab)).namespaces


def remote_labs() -> list[str]:
    from pfslab import labs

    return [name for name in labs.lab_names() if not runs_here(name)]


def check(lab: str) -> None:
    """The lab file is valid; its problem is the refusal (``pfslab lab check``'s line)."""
    from pfslab import labs

    try:
        labs.load(lab)
    except KitError as err:
        raise Refusal(str(err)) from None


def count_job_scripts(run_dir: Path) -> int:
    """The job scripts ReFrame wrote (no stage directory at all when it found no case)."""
    stage = run_dir / "stage"
    return sum(1 for _ in stage.rglob("rfm_job.sh")) if stage.is_dir() else 0


def new_run_dir(lab: str) -> Path:
    """The dry run's directory, build/runs/<lab>/<timestamp>-dry (a lab of this host refused)."""
    from pfslab import state

    if runs_here(lab):
        raise Refusal(f"lab {lab} runs on this host; use 'make lab-up LAB={lab}' and 'make bench' "
                      "(dry runs are for labs elsewhere)")
    return state.new_run_dir(lab, "-dry")


def dry_run(lab: str, run_dir: Path) -> None:
    """ReFrame's dry run of the lab into ``run_dir``, its provenance recorded first."""
    from pfslab import labs

    if subprocess.run([str(pfslab_cli()), "record", str(run_dir), lab], stdout=subprocess.DEVNULL).returncode != 0:
        raise Refusal(f"recording the provenance of {lab}'s dry run in {run_dir} failed (above)")
    env = {**os.environ, "PFSLAB_RUN_DIR": str(run_dir), "RFM_CONFIG_FILES": str(KIT_ROOT / "reframe" / "config" / "settings.py")}
    with (run_dir / "reframe.out").open("w") as out:
        rc = subprocess.run([str(KIT_ROOT / ".venv" / "bin" / "reframe"), "-c", f"{KIT_ROOT}/reframe/", "--dry-run",
                             "--system", labs.system_name(lab), "--exec-policy=serial", "--nocolor"],
                            stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    if rc != 0:
        raise Refusal(f"the dry run of {lab} failed; see {run_dir}/reframe.out")
    count = count_job_scripts(run_dir)
    if count == 0:
        raise Refusal(f"the dry run of {lab} wrote no job script; see {run_dir}/reframe.out")
    print(f"{lab}: {count} job scripts under {run_dir}/stage", flush=True)


def body(argv: list[str]) -> int:
    start = time.monotonic()
    if not os.access(KIT_ROOT / ".venv" / "bin" / "pfslab", os.X_OK):
        raise Refusal("the kit's Python environment is missing; run 'make deps' first")
    chosen = argv or remote_labs()
    if not chosen:
        raise Refusal("no lab runs elsewhere (every lab's target is local)")
    run_dir: Path | None = None
    rc = 0
    try:
        for lab in chosen:
            check(lab)
            run_dir = new_run_dir(lab)
            dry_run(lab, run_dir)
        print(f"dry runs of {len(chosen)} lab(s) took {int(time.monotonic() - start)} s")
    except BaseException as err:
        rc = 2 if isinstance(err, KitError) else 1
        raise
    finally:
        # A dry run that fails still leaves a junit.xml in its run directory (see scripts/bench).
        if run_dir is not None and run_dir.is_dir():
            from pfslab import junit

            junit.write_error(run_dir, f"the dry run ended with exit status {rc} before ReFrame wrote its JUnit report; "
                              "see reframe.out")
    return 0


if __name__ == "__main__":
    sys.exit(TOOL.main(body))
