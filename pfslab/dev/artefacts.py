"""Render a checkout's artefacts into a folder, and compare two such folders.

    python3 -m pfslab.dev.artefacts render --checkout PATH --out DIR [--jobs N] [--parts ...] [--labs ...]
    python3 -m pfslab.dev.artefacts compare OLD_DIR NEW_DIR

``render`` drives the checkout through its own command lines only (never this
package's code for it), so an older commit whose Python differs renders as it did:

- ``dry-run/<lab>/``: ``scripts/dry-run``'s stage tree of every lab it takes by default
  (every seed and cloud lab: those that do not run on this host), job scripts and the
  files beside them; the run directories it made in the checkout are removed again;
- ``user-data/<lab>/<target>/``: ``scripts/render-user-data LAB TARGET`` for every lab
  of labs/*.yaml and every target ``pfslab registry targets`` lists (lab.json, plan.json,
  each node's .yaml and .sh); a pair the kit refuses gets ``refused.txt``, its message;
- ``plans/<lab>/<target>/<module>/``: every output of the lab-plan module as the render
  root (the Terraform root scripts/render-user-data applies) evaluates it offline with
  ``terraform console``; the expiry is fixed (2000-01-01T00:00:00Z), as the plan's
  default expiry is the apply's time and unknown before it.

``compare`` is :mod:`pfslab.dev.artefact_compare`; it says which patterns it normalises.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfslab.dev import artefact_compare

PARTS = ("dry-run", "user-data", "plans")
#: The plan's expiry tag is `timestamp()` + the lab's hours unless given: unknown to
#: `terraform console`, which makes every output that holds it unknown.
PLAN_EXPIRY = "2000-01-01T00:00:00Z"
DRY_RUN_LINE = re.compile(r"^(?P<lab>\S+): \d+ job scripts under (?P<run>.+)/stage$")


class RenderError(Exception):
    """The checkout could not be rendered; the message is one line."""


@dataclass(frozen=True)
class Checkout:
    root: Path

    def env(self) -> dict[str, str]:
        """This shell's environment without what would point the checkout's scripts at
        another tree or lab (PFSLAB_ROOT, PFSLAB_LAB, ...); a Terraform provider mirror
        stays."""
        keep = {"PFSLAB_TF_PROVIDERS"}
        env = {k: v for k, v in os.environ.items()
               if not (k.startswith("PFSLAB_") and k not in keep) and k != "VIRTUAL_ENV"}
        env["TF_IN_AUTOMATION"] = "1"
        return env

    def run(self, argv: Sequence[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), cwd=self.root, env=kw.pop("env", None) or self.env(), text=True,
                              capture_output=True, timeout=timeout, check=False, **kw)

    def check(self) -> None:
        for rel in (".venv/bin/pfslab", "scripts/dry-run", "scripts/render-user-data", "labs"):
            if not (self.root / rel).exists():
                raise RenderError(f"{self.root} is not a pfslab checkout ready to render: {rel} is missing "
                                  "(a checkout with its .venv: run 'scripts/deps test' there)")

    def commit(self) -> str:
        done = self.run(["git", "rev-parse", "HEAD"], 30)
        dirty = self.run(["git", "status", "--porcelain", "--untracked-files=no"], 60).stdout.strip()
        return done.stdout.strip() + (" (with uncommitted changes)" if dirty else "")

    def labs(self) -> list[str]:
        return sorted(p.stem for p in (self.root / "labs").glob("*.yaml"))

    def targets(self) -> list[str]:
        done = self.run([str(self.root / ".venv/bin/pfslab"), "registry", "targets"], 120)
        if done.returncode != 0:
            raise RenderError(f"'pfslab registry targets' failed in {self.root}: {_last_line(done.stderr)}")
        return sorted(line.split()[0] for line in done.stdout.splitlines() if line.strip())

    def render_root(self) -> Path:
        """The Terraform root scripts/render-user-data applies (read from the script, so
        a checkout that moved it is followed)."""
        script = (self.root / "scripts/render-user-data").read_text()
        found = re.search(r'-chdir="\$PFSLAB_ROOT/([^"]+)"', script)
        root = self.root / (found.group(1) if found else "terraform/envs/render")
        if not root.is_dir():
            raise RenderError(f"the render root {root} of {self.root} is not a folder")
        return root


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def render_dry_runs(co: Checkout, out: Path, labs: list[str] | None) -> int:
    done = co.run([str(co.root / "scripts/dry-run"), *(labs or [])], 3600)
    runs = [(m["lab"], Path(m["run"])) for m in map(DRY_RUN_LINE.match, done.stdout.splitlines()) if m]
    try:
        if done.returncode != 0:
            raise RenderError(f"scripts/dry-run failed in {co.root}: {_last_line(done.stderr + done.stdout)}")
        for lab, run in runs:
            shutil.copytree(run / "stage", out / "dry-run" / lab, symlinks=True)
    finally:
        runs_dir = (co.root / "build" / "runs").resolve()
        for _, run in runs:  # only the run directories this dry run made and printed
            if run.resolve().is_relative_to(runs_dir):
                shutil.rmtree(run, ignore_errors=True)
    return len(runs)


def render_user_data(co: Checkout, out: Path, lab: str, target: str) -> bool:
    """True when the kit rendered the pair; otherwise refused.txt holds why."""
    folder = out / "user-data" / lab / target
    done = co.run([str(co.root / "scripts/render-user-data"), lab, target, str(folder)], 600)
    if done.returncode == 0:
        return True
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "refused.txt").write_text(f"exit status {done.returncode}\n{done.stderr}")
    return False


def _unquote_console(text: str) -> str:
    """A string as `terraform console` prints it: JSON's escapes, plus HCL's $${ and %%{."""
    value = json.loads(text.strip())
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value.replace("$${", "${").replace("%%{", "%{")


def _write_output(folder: Path, name: str, value: Any) -> None:
    """A map of texts (user-data, boot scripts, node configs) as one file per node, so a
    difference shows as lines; anything else as indented JSON."""
    if isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
        (folder / name).mkdir(parents=True)
        for key, text in value.items():
            try:
                (folder / name / f"{key}.json").write_text(json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n")
            except ValueError:
                (folder / name / f"{key}.txt").write_text(text)
        return
    (folder / f"{name}.json").write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")


@dataclass(frozen=True)
class PlanRoot:
    checkout: Checkout
    root: Path
    modules: tuple[str, ...]
    data_dir: Path

    @classmethod
    def init(cls, co: Checkout, scratch: Path) -> PlanRoot:
        root = co.render_root()
        modules = tuple(sorted({m for tf in root.glob("*.tf") for m in re.findall(r'^module "([\w-]+)"', tf.read_text(), re.M)}))
        if not modules:
            raise RenderError(f"the render root {root} calls no module")
        plan = cls(co, root, modules, scratch / ".terraform")
        done = co.run(["terraform", f"-chdir={root}", "init", "-backend=false", "-input=false", "-no-color"], 600,
                      env=plan.env())
        if done.returncode != 0:
            raise RenderError(f"terraform init failed in {root}: {_last_line(done.stderr + done.stdout)}")
        return plan

    def env(self) -> dict[str, str]:
        env = self.checkout.env()
        env["TF_DATA_DIR"] = str(self.data_dir)
        rc = self.checkout.root / "terraform" / "terraformrc"  # the kit's CLI config (use_tf_cli_config)
        if rc.is_file() and "PFSLAB_TF_PROVIDERS" not in env:
            env["TF_CLI_CONFIG_FILE"] = str(rc)
        return env

    def render(self, out: Path, lab: str, target: str) -> bool:
        lab_file = out / "user-data" / lab / target / "lab.json"
        folder = out / "plans" / lab / target
        folder.mkdir(parents=True)
        if not lab_file.is_file():
            (folder / "refused.txt").write_text("no resolved lab: the kit refused the lab for the target "
                                                f"(user-data/{lab}/{target}/refused.txt)\n")
            return False
        ok = True
        for module in self.modules:
            # A state file per pair: console locks its state even when there is none.
            done = self.checkout.run(
                ["terraform", f"-chdir={self.root}", "console", "-no-color", f"-state={self.data_dir}/{lab}@{target}.tfstate",
                 f"-var=lab_file={lab_file}", f"-var=target={target}", f"-var=expiry={PLAN_EXPIRY}"],
                600, env=self.env(), input=f"jsonencode(module.{module})\n")
            try:
                value = json.loads(_unquote_console(done.stdout)) if done.returncode == 0 else None
            except ValueError:
                value = None
            if not isinstance(value, dict):
                (folder / f"{module}.refused.txt").write_text(
                    f"exit status {done.returncode}\n{done.stdout.strip()[:2000]}\n{done.stderr}")
                ok = False
                continue
            (folder / module).mkdir()
            for name, output in sorted(value.items()):
                _write_output(folder / module, name, output)
        return ok


def _pool(jobs: int, work: Callable[[tuple[str, str]], bool], pairs: list[tuple[str, str]]) -> int:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return sum(pool.map(work, pairs))


def render(checkout: Path, out: Path, parts: Sequence[str], labs: list[str] | None, jobs: int,
           say: Callable[[str], None]) -> dict[str, Any]:
    co = Checkout(checkout)
    co.check()
    if out.exists() and any(out.iterdir()):
        raise RenderError(f"--out {out} is not empty; give a new folder")
    out.mkdir(parents=True, exist_ok=True)
    all_labs = co.labs()
    unknown = sorted(set(labs or []) - set(all_labs))
    if unknown:
        raise RenderError(f"lab(s) {', '.join(unknown)} not in {checkout}/labs (there: {', '.join(all_labs)})")
    manifest: dict[str, Any] = {"checkout": str(checkout), "checkout_resolved": str(checkout.resolve()),
                                "out": str(out), "out_resolved": str(out.resolve()), "commit": co.commit(),
                                "parts": list(parts), "seconds": {}}
    chosen = labs or all_labs
    targets = co.targets()
    pairs = [(lab, target) for lab in chosen for target in targets]
    manifest.update(labs=chosen, targets=targets)
    start = time.monotonic()
    if "dry-run" in parts:
        manifest["dry_run_labs"] = render_dry_runs(co, out, labs)
        manifest["seconds"]["dry-run"] = round(time.monotonic() - start)
        say(f"dry-run: {manifest['dry_run_labs']} labs in {manifest['seconds']['dry-run']} s")
    if "user-data" in parts or "plans" in parts:
        start = time.monotonic()
        rendered = _pool(jobs, lambda p: render_user_data(co, out, *p), pairs)
        manifest["user_data"] = {"pairs": len(pairs), "rendered": rendered, "refused": len(pairs) - rendered}
        manifest["seconds"]["user-data"] = round(time.monotonic() - start)
        say(f"user-data: {rendered} of {len(pairs)} lab x target pairs rendered in {manifest['seconds']['user-data']} s")
    if "plans" in parts:
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="pfslab-plans-") as scratch:
            root = PlanRoot.init(co, Path(scratch))
            planned = _pool(jobs, lambda p: root.render(out, *p), pairs)
        manifest["plans"] = {"pairs": len(pairs), "planned": planned, "modules": list(root.modules),
                             "render_root": str(root.root.relative_to(co.root))}
        manifest["seconds"]["plans"] = round(time.monotonic() - start)
        say(f"plans: {planned} of {len(pairs)} pairs planned in {manifest['seconds']['plans']} s")
        if "user-data" not in parts:
            shutil.rmtree(out / "user-data")  # made only for the resolved labs the plans read
    (out / artefact_compare.MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _csv(value: str) -> list[str]:
    return [v for v in value.split(",") if v]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m pfslab.dev.artefacts", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render", help="render a checkout's dry runs, user-data and lab plans into a new folder")
    r.add_argument("--checkout", type=Path, required=True, help="the checkout (with its .venv) to render")
    r.add_argument("--out", type=Path, required=True, help="a new or empty folder (build/ or /tmp, not committed)")
    r.add_argument("--parts", type=_csv, default=list(PARTS), help=f"comma-separated, of {', '.join(PARTS)} (default: all)")
    r.add_argument("--labs", type=_csv, default=None, help="comma-separated lab names (default: every lab)")
    r.add_argument("--jobs", type=int, default=2, help="user-data and plan renderings at once (default 2)")
    c = sub.add_parser("compare", help="compare two rendered folders after normalising (exit 1 on any difference)")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--max-lines", type=int, default=200, help="diff lines shown per differing file (default 200)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "render":
            bad = [part for part in args.parts if part not in PARTS]
            if bad or not args.parts:
                raise RenderError(f"--parts {','.join(args.parts)}: allowed are {', '.join(PARTS)}")
            if args.jobs < 1:
                raise RenderError(f"--jobs {args.jobs}: must be at least 1")
            start = time.monotonic()
            render(args.checkout.absolute(), args.out.absolute(), args.parts, args.labs, args.jobs,
                   lambda line: print(line, flush=True))
            print(f"rendered {args.checkout} into {args.out} in {round(time.monotonic() - start)} s")
            return 0
        result = artefact_compare.compare(args.old, args.new)
        sys.stdout.write(artefact_compare.report(result, args.max_lines))
        return 0 if result.clean else 1
    except (RenderError, ValueError, subprocess.TimeoutExpired) as error:
        print(f"artefacts: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
