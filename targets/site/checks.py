"""A site lab (target ``site``): storage, nodes and scheduler that are already there.

Its lab-up provisions, installs, formats, mounts and starts nothing, and runs as the
invoking user. It sends one probe to every node through the lab's scheduler (``srun
-N<n> --ntasks-per-node=1`` with the lab's access options, or this machine with
scheduler none) and judges what comes back: the mount is visible, the scratch
directory (or the nearest part of it that exists) is writable with the room the lab
states, and the workloads' tools are found (their versions recorded). Only then does
it make the scratch directory and mark it as the kit's (:data:`MARKER`); lab-down
removes a scratch directory only when that marker names this lab instance.

The probe's lines are ``pfslab-site<TAB>node<TAB>key<TAB>value...``; parsing and judging
are pure functions of that text, so they are tested with fabricated outputs.

These are the commands ``pfslab site up|check|down|health`` that the adapter
(``targets/site/adapter.sh``) runs: target.json names this file (``"python":
"checks.py"``), ``pfslab.registry.target_module`` imports it from here and ``pfslab``
gives it its subcommand. ``health`` is the scheduler's judgement the run's watchdog
also reads (:mod:`pfslab.site_health`, shared by every target that provisions nothing).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pfslab import provenance, rfm_paths, site_health
from pfslab.errors import KitError
# The nodes a lab whose storage is the site's names, as the run's watchdog reads them too.
from pfslab.site_health import node_count, node_names, scheduler, settings
from pfslab.tools import executable

#: The file that proves a scratch directory is the kit's (JSON: lab, instance, created).
MARKER = ".pfslab-scratch"
TAG = "pfslab-site"
GIB = 1 << 30


class SiteError(KitError):
    """A check that failed, or a setting lab-up cannot use; one line naming the node or value."""


@dataclass
class NodeReport:
    node: str
    mount: str | None = None
    fstype: str | None = None
    mount_why: str = ""
    checked_dir: str | None = None
    writable: bool | None = None
    write_why: str = ""
    free_kb: int | None = None
    tools: dict[str, dict[str, str | None]] = field(default_factory=dict)
    env_why: str = ""


def scratch_dir(lab: dict[str, Any]) -> str:
    return f"{lab['filesystem']['mount']}/{lab['benchmark']['scratch']}"


def executables(lab: dict[str, Any]) -> list[str]:
    """The commands the lab's workloads run, each once, in workload order."""
    seen: list[str] = []
    for workload in lab.get("workloads", []):
        exe = executable(workload["tool"])
        if exe not in seen:
            seen.append(exe)
    return seen


def tool_env_lines(lab: dict[str, Any]) -> list[str]:
    """Shell lines that put the lab's tools on PATH: its module lines, view and path, or,
    when it names none, the kit's own search order (rfm_paths: the toolchain view,
    then `make tools`' view of that name, then PATH)."""
    tools = settings(lab).get("tools") or {}
    lines = [f"module load {m}" for m in tools.get("modules", [])]
    front = ([f"{tools['view']}/bin"] if "view" in tools else []) + list(tools.get("path", []))
    if not tools:
        view = rfm_paths.view_dir(lab)
        front = [f"{view}/bin", f"{rfm_paths.BUILT_TOOLS / Path(view).name}/bin"]
    if front:
        lines.append(f"PATH={shlex.quote(':'.join(front))}:$PATH; export PATH")
    return lines


def probe_script(lab: dict[str, Any]) -> str:
    """The shell script every node runs; it only reads, and writes one probe file that it
    removes at once."""
    q = shlex.quote
    version_args = {cmd[0]: " ".join(q(a) for a in cmd[1:]) for cmd in provenance.version_commands().values()}
    tool_lines = []
    for exe in executables(lab):
        args = version_args.get(exe)
        version = f'"$p" {args} 2>&1 | head -n 20 | tr "\\n\\t" "  " | cut -c1-400' if args else "echo"
        tool_lines.append(f'if p=$(command -v {q(exe)}); then say tool {q(exe)} "$p" "$({version})"; '
                          f"else say tool-missing {q(exe)}; fi")
    env = "\n".join(f"{line} || say tools-env-failed {q(line)}" for line in tool_env_lines(lab))
    return f"""set -u
node=${{SLURMD_NODENAME:-$(hostname -s)}}
say() {{ printf '{TAG}\\t%s' "$node"; for a in "$@"; do printf '\\t%s' "$a"; done; printf '\\n'; }}
mount={q(lab['filesystem']['mount'])}
scratch={q(scratch_dir(lab))}
t=$(findmnt -rn -o TARGET,FSTYPE -T "$mount" 2>/dev/null | head -n 1)
if [ -d "$mount" ] && [ "${{t%% *}}" = "$mount" ]; then
  say mount "${{t%% *}}" "${{t#* }}"
elif [ -d "$mount" ]; then
  say mount-missing "not a mount point (the directory is on the file system mounted at ${{t%% *}})"
else
  say mount-missing "no such directory"
fi
dir=$scratch
while [ ! -d "$dir" ] && [ "$dir" != "$mount" ] && [ "$dir" != / ]; do dir=$(dirname "$dir"); done
probe="$dir/.pfslab-probe.$node.$$"
if [ -d "$dir" ] && err=$( (: >"$probe") 2>&1 ); then
  rm -f "$probe"
  say writable "$dir"
else
  say not-writable "$dir" "${{err:-no such directory}}"
fi
say free-kb "$(df -Pk "$dir" 2>/dev/null | awk 'NR == 2 {{print $4}}')"
{env}
{chr(10).join(tool_lines)}
"""


def launch_command(lab: dict[str, Any], script: str) -> list[str]:
    """How the probe reaches every node: srun with the lab's access options, or bash here."""
    if scheduler(lab) == "none":
        return ["bash", "-c", script]
    sched = lab.get("scheduler") or {}
    cmd = ["srun", f"-N{node_count(lab)}", "--ntasks-per-node=1", "--job-name=pfslab-site-check"]
    names = node_names(lab)
    if names:
        cmd.append(f"--nodelist={','.join(names)}")
    for key, option in (("partition", "--partition"), ("account", "--account"), ("qos", "--qos"),
                        ("constraint", "--constraint")):
        if sched.get(key):
            cmd.append(f"{option}={sched[key]}")
    return [*cmd, "bash", "-c", script]


def parse(output: str) -> dict[str, NodeReport]:
    """The probe's lines, per node, in the order the nodes first spoke; other lines
    (the scheduler's, a module system's) are ignored."""
    reports: dict[str, NodeReport] = {}
    for line in output.splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or parts[0] != TAG:
            continue
        node, key, values = parts[1], parts[2], parts[3:] + ["", "", ""]
        r = reports.setdefault(node, NodeReport(node))
        if key == "mount":
            r.mount, r.fstype = values[0], values[1]
        elif key == "mount-missing":
            r.mount_why = values[0]
        elif key == "writable":
            r.checked_dir, r.writable = values[0], True
        elif key == "not-writable":
            r.checked_dir, r.writable, r.write_why = values[0], False, values[1]
        elif key == "free-kb":
            r.free_kb = int(values[0]) if values[0].isdigit() else None
        elif key == "tool":
            r.tools[values[0]] = {"path": values[1], "version": provenance._first_version(values[2], values[0])}
        elif key == "tool-missing":
            r.tools[values[0]] = {"path": None, "version": None}
        elif key == "tools-env-failed":
            r.env_why = values[0]
    return reports


def in_lab_order(lab: dict[str, Any], reports: dict[str, NodeReport]) -> dict[str, NodeReport]:
    """The reports in the order the lab names its nodes (else by name): srun's tasks
    print in whatever order they end."""
    names = node_names(lab) or []
    rank = {n: i for i, n in enumerate(names)}
    return dict(sorted(reports.items(), key=lambda item: (rank.get(item[0], len(names)), item[0])))


def problems(lab: dict[str, Any], reports: dict[str, NodeReport]) -> list[str]:
    """What keeps the lab from running, one line each, naming the node and the value."""
    mount, out = lab["filesystem"]["mount"], []
    names = node_names(lab)
    if names is not None:
        out += [f"node {n}: no answer from the check job (is it up and in the partition?)" for n in names if n not in reports]
        out += [f"node {n}: answered but is not one of the lab's nodes ({', '.join(names)})" for n in reports if n not in names]
    elif len(reports) != node_count(lab):
        out.append(f"{node_count(lab)} node(s) expected, {len(reports)} answered ({', '.join(reports) or 'none'})")
    need_kb = int(float(settings(lab)["min_free_gb"]) * GIB) // 1024
    for r in reports.values():
        if r.mount is None:
            out.append(f"node {r.node}: mount {mount} is missing: {r.mount_why or 'not reported'}")
            continue
        if r.writable is not True:
            out.append(f"node {r.node}: scratch {scratch_dir(lab)} is not writable at {r.checked_dir}: {r.write_why or 'not reported'}")
        if r.free_kb is None or r.free_kb < need_kb:
            free = "unknown" if r.free_kb is None else f"{r.free_kb / (GIB // 1024):.1f} GiB"
            out.append(f"node {r.node}: {free} free under {mount}; the lab needs {settings(lab)['min_free_gb']} GiB "
                       "(targets.site.min_free_gb)")
        if r.env_why:
            out.append(f"node {r.node}: the tools' environment line failed: {r.env_why}")
        missing = [t for t, info in r.tools.items() if not info["path"]]
        unreported = [t for t in executables(lab) if t not in r.tools]
        if missing or unreported:
            out.append(f"node {r.node}: tool(s) not found: {', '.join(missing + unreported)} "
                       "(targets.site.tools: module lines, a view or PATH directories)")
    return out


def marker_owner(directory: Path) -> dict[str, Any] | None:
    """What the kit's marker in ``directory`` says, or None when there is none."""
    try:
        data: dict[str, Any] = json.loads((directory / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def claim_scratch(lab: dict[str, Any]) -> dict[str, Any]:
    """Make the scratch directory the kit's: made here when absent, or an empty one (or
    one this lab instance already marked) taken; anything else is refused."""
    directory = Path(scratch_dir(lab))
    mine = {"lab": lab["name"], "instance": lab["instance"]["id"], "checkout": lab["instance"]["root"]}
    marker = marker_owner(directory)
    if marker is not None:
        if marker.get("instance") != mine["instance"]:
            raise SiteError(f"scratch {directory} is marked as lab {marker.get('lab')}'s of checkout {marker.get('checkout')}; "
                            "take that lab down there, or give benchmark.scratch another directory")
        return marker
    created = not directory.exists()
    if not created and any(directory.iterdir()):
        raise SiteError(f"scratch {directory} exists and holds files the kit did not write (no {MARKER}); "
                        "allowed: a new or empty directory: give benchmark.scratch another one")
    directory.mkdir(parents=False, exist_ok=True)
    record = {**mine, "created": created, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (directory / MARKER).write_text(json.dumps(record) + "\n")
    return record


def release_scratch(lab: dict[str, Any]) -> str:
    """Remove what the kit put in its scratch directory (and the directory, if the kit
    made it). Nothing is removed without this instance's marker; the line says what."""
    directory = Path(scratch_dir(lab))
    marker = marker_owner(directory)
    if marker is None:
        return f"scratch {directory}: no {MARKER} of the kit there; nothing removed"
    if marker.get("instance") != lab["instance"]["id"]:
        return f"scratch {directory} is lab {marker.get('lab')}'s of checkout {marker.get('checkout')}; nothing removed"
    for entry in directory.iterdir():
        if entry.name == MARKER:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    (directory / MARKER).unlink()
    if marker.get("created"):
        directory.rmdir()
        return f"scratch {directory}: removed (the kit made it)"
    return f"scratch {directory}: emptied (it was there before the kit)"


def refuse_unsupported(lab: dict[str, Any]) -> None:
    submit = settings(lab).get("submit", "local")
    if submit != "local":
        raise SiteError(f"targets.site.submit: {submit!r} is not allowed; allowed: local (run the kit on the submit node "
                        "itself, reaching it with your own SSH: docs/acceptance.md)")
    if scheduler(lab) == "slurm" and shutil.which("srun") is None:
        raise SiteError("srun is not on this machine's PATH; run lab-up on the submit node, with the site's Slurm "
                        "environment (module load slurm, SLURM_CONF)")


def scheduler_version() -> str | None:
    if shutil.which("srun") is None:
        return None
    out = subprocess.run(["srun", "--version"], capture_output=True, text=True, timeout=30, check=False)
    return (out.stdout or out.stderr).strip() or None


def check(lab: dict[str, Any]) -> tuple[dict[str, NodeReport], str]:
    """Run the probe through the scheduler; the reports and the command's own text."""
    refuse_unsupported(lab)
    cmd = launch_command(lab, probe_script(lab))
    timeout = int(settings(lab).get("check_timeout_s", 300))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SiteError(f"the check job did not end within {timeout} s (targets.site.check_timeout_s); "
                        f"is partition {(lab.get('scheduler') or {}).get('partition', '(default)')} busy?") from None
    reports = in_lab_order(lab, parse(done.stdout))
    if done.returncode != 0 and not reports:
        why = next((ln for ln in done.stderr.splitlines() if ln.strip()), f"exit status {done.returncode}")
        raise SiteError(f"the check job failed: {cmd[0]}: {why}")
    return reports, done.stderr


def inventory(lab: dict[str, Any], reports: dict[str, NodeReport], scratch: dict[str, Any]) -> dict[str, Any]:
    """build/<lab>/inventory.json of a site lab: what the kit and ReFrame read of a
    running lab, and what the check found (tool versions per node)."""
    nodes = list(reports)
    return {
        "lab": lab["name"],
        "title": lab["title"],
        "target": lab["target"],
        "filesystem": {"type": lab["filesystem"]["type"], "mount": lab["filesystem"]["mount"]},
        "nodes": [{"name": n, "address": n} for n in nodes],
        "clients": nodes,
        "login": "local",
        # The run starts on this machine, the submit node (pfslab/lifecycle/bench_launch.py: the inside view).
        "inside": "local",
        "launcher": lab.get("launcher", {}),
        "scheduler": lab.get("scheduler") or {"type": "none"},
        "site": {
            "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "submit": settings(lab).get("submit", "local"),
            "scheduler_version": scheduler_version() if scheduler(lab) == "slurm" else None,
            "scratch": scratch_dir(lab),
            "scratch_marker": scratch,
            "tools_env": tool_env_lines(lab),
            "nodes": {n: {"mount": r.mount, "fstype": r.fstype, "free_gb": round((r.free_kb or 0) / (GIB // 1024), 2),
                          "tools": r.tools} for n, r in reports.items()},
        },
    }


def up(lab: dict[str, Any], state: Path) -> str:
    """lab-up of a site lab: check, then claim the scratch and write the inventory."""
    reports, _ = check(lab)
    found = problems(lab, reports)
    if found:
        more = f" (and {len(found) - 1} more: {'; '.join(found[1:])})" if len(found) > 1 else ""
        raise SiteError(f"lab {lab['name']} refused: {found[0]}{more}")
    scratch = claim_scratch(lab)
    state.mkdir(parents=True, exist_ok=True)
    path = state / "inventory.json"
    path.with_suffix(".json.new").write_text(json.dumps(inventory(lab, reports, scratch), indent=2) + "\n")
    path.with_suffix(".json.new").replace(path)
    tools = sorted({f"{t} {i['version'] or '(version in its output)'}" for r in reports.values() for t, i in r.tools.items()})
    return (f"lab {lab['name']}: {len(reports)} node(s) ({', '.join(reports)}) see {lab['filesystem']['mount']}, "
            f"scratch {scratch_dir(lab)} writable, tools: {', '.join(tools) or 'none needed'}")


# ---- pfslab site ----------------------------------------------------------------------

HELP = "a site lab's checks (target site): run as the invoking user, install nothing"


def add_commands(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="site_command", required=True, metavar="ACTION")
    up_ = actions.add_parser("up", help="check every node through the scheduler, claim the scratch, write the inventory")
    up_.add_argument("resolved", help="the resolved lab (pfslab lab show LAB --instance)")
    up_.add_argument("state", help="the lab's state directory (build/<lab>)")
    actions.add_parser("check", help="run the checks again; print what fails (exit 1)").add_argument("resolved")
    actions.add_parser("down", help="remove the kit's scratch directory (only with this lab instance's marker)"
                       ).add_argument("resolved")
    actions.add_parser("health", help="ask the scheduler whether the lab's nodes can run its jobs; print each "
                       "node that cannot (exit 1), for the run's watchdog").add_argument("resolved")


def run(args: argparse.Namespace) -> int:
    lab = json.loads(Path(args.resolved).read_text())
    if args.site_command == "up":
        print(up(lab, Path(args.state)))
    elif args.site_command == "down":
        print(release_scratch(lab))
    elif args.site_command == "health":
        found = site_health.problems(lab)
        if found:
            print("\n".join(found))
        return 1 if found else 0
    else:
        reports, _ = check(lab)
        found = problems(lab, reports)
        print("\n".join(found) if found else f"lab {lab['name']}: every check passed on {', '.join(reports)}")
        return 1 if found else 0
    return 0
