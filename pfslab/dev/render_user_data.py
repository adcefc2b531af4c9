"""Render a lab's cloud-init user-data for one target, without provisioning anything
(scripts/render-user-data LAB TARGET OUTDIR; make user-data).

Resolves the lab (``extends`` applied, validated) into OUTDIR/lab.json, applies the
provider-free root terraform/envs/render (locals and outputs only, no resources) with its
state in a temporary directory, and writes per node OUTDIR/<node>.yaml (its #cloud-config
user-data) and OUTDIR/<node>.sh (the same first boot as a script, what existing hosts run),
plus OUTDIR/plan.json (boot steps, machines, tags, problems). Prints the nodes written;
problems of the plan go to stderr and make the exit status 1.
``cloud-init schema --config-file OUTDIR/<node>.yaml`` checks one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT
from pfslab.dev.common import Refusal, Tool, pfslab_cli, require_cmd, use_tf_cli_config

TOOL = Tool("render")
ROOT = KIT_ROOT / "terraform" / "envs" / "render"
PLAN_FIELDS = ("boot_steps", "machines", "tags", "problems")


def known_targets() -> list[str]:
    """Every target's name, in folder order (targets/<target>/target.json)."""
    return [p.parent.name for p in sorted((KIT_ROOT / "targets").glob("*/target.json"))]


def plan(outputs: dict[str, Any]) -> dict[str, Any]:
    """plan.json: the render root's outputs that describe the plan, their values."""
    return {name: outputs[name]["value"] for name in PLAN_FIELDS}


def node_files(outputs: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Per node (sorted), its user-data and its first boot as a script."""
    user_data, scripts = outputs["user_data"]["value"], outputs["boot_scripts"]["value"]
    return {node: (user_data[node], scripts[node]) for node in sorted(user_data)}


def resolve(lab: str, target: str) -> str:
    """The lab as resolved for the target (``pfslab lab show --target``): checked before
    OUTDIR is made, so a bad name or file leaves no folder behind."""
    result = subprocess.run([str(pfslab_cli()), "lab", "show", "--target", target, lab], stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise Refusal(f"lab {lab} is not valid (see above)")
    return result.stdout


def terraform(tmp: Path, log: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TF_DATA_DIR": str(tmp / ".terraform")}
    with (tmp / log).open("w") as out:
        return subprocess.run(["terraform", f"-chdir={ROOT}", *args], stdout=out, stderr=subprocess.STDOUT, env=env, text=True)


def tail(path: Path, lines: int) -> str:
    return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])


def render(lab: str, target: str, out: Path, tmp: Path) -> dict[str, Any]:
    """Apply the render root for the lab and target; its outputs."""
    if terraform(tmp, "init.log", "init", "-backend=false", "-input=false").returncode != 0:
        sys.stderr.write((tmp / "init.log").read_text(errors="replace"))
        raise Refusal("terraform init failed in terraform/envs/render")
    state = tmp / "render.tfstate"
    if terraform(tmp, "apply.log", "apply", "-auto-approve", "-input=false", "-no-color", f"-state={state}",
                 "-var", f"lab_file={out}/lab.json", "-var", f"target={target}").returncode != 0:
        sys.stderr.write(tail(tmp / "apply.log", 20))
        raise Refusal(f"rendering lab {lab} for {target} failed")
    result = subprocess.run(["terraform", f"-chdir={ROOT}", "output", f"-state={state}", "-json"], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "TF_DATA_DIR": str(tmp / ".terraform")})
    if result.returncode != 0:
        raise Refusal(f"terraform output of the render of lab {lab} for {target} failed (above)")
    outputs: dict[str, Any] = json.loads(result.stdout)
    return outputs


def body(argv: list[str]) -> int:
    if len(argv) != 3:
        raise Refusal("usage: scripts/render-user-data LAB TARGET OUTDIR")
    lab, target, outdir = argv
    require_cmd("terraform", "jq")
    os.environ["TF_IN_AUTOMATION"] = "1"
    use_tf_cli_config()
    target_file = KIT_ROOT / "targets" / target / "target.json"
    if not (target_file.is_file() and target_file.stat().st_size > 0):
        raise Refusal(f"target '{target}' is not one of {', '.join(known_targets())} (targets/<target>/target.json)")
    if not os.access(KIT_ROOT / ".venv" / "bin" / "pfslab", os.X_OK):
        raise Refusal("the kit's Python environment is missing; run 'make deps' first")
    resolved = resolve(lab, target)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    (out / "lab.json").write_text(resolved.rstrip("\n") + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        outputs = render(lab, target, out, Path(tmp))
    (out / "plan.json").write_text(json.dumps(plan(outputs), indent=2, ensure_ascii=False) + "\n")
    for node, (user_data, script) in node_files(outputs).items():
        (out / f"{node}.yaml").write_text(user_data + "\n")
        (out / f"{node}.sh").write_text(script + "\n")
        print(node, flush=True)
    problems: list[str] = outputs["problems"]["value"]
    for problem in problems:
        print(f"[render] lab {lab} on {target}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(TOOL.main(body))
