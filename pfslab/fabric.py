"""Which transport MPI actually uses between two nodes, and whether it is the lab's fabric.

registry/fabrics.json maps a lab's ``network.fabric`` to the transport Open MPI must
select (ucx, ofi with a libfabric provider, or tcp). The probe runs on a remote lab's
login node (scripts/preflight calls ``pfslab fabric-probe LAB A B`` there over ssh): two
ranks, one on each node, started with the lab's own launcher (its mpirun line and
environment, as the benchmarks are), run ``ior -a DUMMY`` (MPI_Init, collectives, no
I/O) with Open MPI's selection printed:

- ``pml_base_verbose 10``: ``select: component <pml> selected`` per rank;
- ``btl_base_verbose 10``: ``select: init of component <btl> returned success``;
- ``opal_common_ofi_verbose 1``: ``mtl:ofi:prov: <provider>`` (4.1) /
  ``mtl:ofi:provider: <provider>`` (5.0);
- ``UCX_LOG_LEVEL=info``: UCX's ``ep_cfg[..]: tag(<tl>/<device> ...)`` lines.

Every line carries its rank's ``[host:pid]`` prefix, so each node's choice is read apart.
On a fabric where TCP is a fallback (InfiniBand, RoCE, EFA, Omni-Path), anything but
the fabric's transport fails, in one line naming the node pair and what was selected.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pfslab.errors import KitError
from pfslab.registry import REGISTRY_DIR
from pfslab.rfm_paths import tool_search_path

FABRICS_FILE = REGISTRY_DIR / "fabrics.json"

#: What the probe adds to the lab's launcher environment to see Open MPI's choice.
VERBOSE_ENV = {
    "OMPI_MCA_pml_base_verbose": "10",
    "OMPI_MCA_btl_base_verbose": "10",
    "OMPI_MCA_opal_common_ofi_verbose": "1",
    "UCX_LOG_LEVEL": "info",
}
#: BTLs that reach another node (self, sm/vader and smcuda are on-node only).
REMOTE_BTLS = {"tcp", "openib", "uct", "ofi", "usnic", "portals4", "ugni"}
#: UCX transports that run on an InfiniBand/RoCE HCA.
IB_TLS = re.compile(r"^(rc|dc|ud)(_verbs|_mlx5|_x)?$|^(rc|dc|ud)$")

#: "[host:pid] text" (Open MPI), "[time] [host:pid:thread] text" (UCX).
_PREFIX = re.compile(r"^(?:\[[\d.]+\]\s*)?\[([^\]:\s]+):\d+(?::\d+)?\]\s*(.*)$")
_PML = re.compile(r"select: component (\S+) selected")
_BTL = re.compile(r"select: init of component (\S+) returned success")
_OFI = re.compile(r"mtl:ofi:prov(?:ider)?: (\S+)")
_EP_CFG = re.compile(r"ep_cfg\[\d+\]: (.*)")
_TL = re.compile(r"([a-z0-9_]+)/([A-Za-z0-9_.:-]+)")


class FabricError(KitError):
    """The probe could not run (no launcher, unknown node); the message is one line."""


class ProbeUnavailable(FabricError):
    """The node has no MPI or no ior to probe with: nothing MPI runs there either (the
    MPI workloads are skipped with the same reason), so there is no transport to judge."""


def fabrics() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads(FABRICS_FILE.read_text())["fabrics"]
    return data


def fabric(name: str) -> dict[str, Any]:
    table = fabrics()
    if name not in table:
        raise FabricError(f"network.fabric {name!r} is not in registry/fabrics.json (known: {', '.join(sorted(table))})")
    return table[name]


@dataclass
class Selection:
    """What Open MPI chose in one rank."""

    pml: str | None = None
    btls: list[str] = field(default_factory=list)
    provider: str | None = None
    ucx: list[str] = field(default_factory=list)  # "tl/device" of UCX endpoints

    def describe(self) -> str:
        if self.pml is None:
            return "no pml selected (Open MPI printed no selection)"
        out = f"pml {self.pml}"
        if self.pml == "cm":
            out += f" with mtl ofi provider {self.provider}" if self.provider else " (no libfabric provider printed)"
        elif self.pml == "ob1":
            remote = [b for b in self.btls if b in REMOTE_BTLS]
            out += f" with btl {','.join(remote) or 'none that reaches another node'}"
        elif self.pml == "ucx" and self.ucx:
            out += f" over {','.join(dict.fromkeys(self.ucx))}"
        return out


def parse(output: str) -> dict[str, Selection]:
    """Each host's selection, from the verbose output of a two-rank run."""
    out: dict[str, Selection] = {}
    for raw in output.splitlines():
        match = _PREFIX.match(raw.strip())
        if not match:
            continue
        host, text = match.groups()
        sel = out.setdefault(host, Selection())
        if m := _PML.search(text):
            sel.pml = m.group(1)
        elif m := _BTL.search(text):
            sel.btls.append(m.group(1))
        elif m := _OFI.search(text):
            sel.provider = m.group(1)
        elif m := _EP_CFG.search(text):
            sel.ucx.extend(f"{tl}/{dev}" for tl, dev in _TL.findall(m.group(1)) if tl not in ("self",))
    return out


def uses_fabric(fabric_name: str, sel: Selection) -> bool:
    """Whether one rank's selection runs over the fabric (or TCP is the fabric)."""
    spec = fabric(fabric_name)
    if not spec["tcp_is_fallback"]:
        return sel.pml is not None
    if spec["transport"] == "ucx":
        if sel.pml != "ucx":
            return False
        # pml ucx only selects itself on an HCA (opal_common_ucx_tls); the endpoint
        # lines, where UCX printed them, must name an InfiniBand transport.
        tls = [t.split("/", 1)[0] for t in sel.ucx if not t.startswith(("sysv/", "posix/", "cma/", "knem/", "xpmem/"))]
        return not tls or any(IB_TLS.match(t) for t in tls)
    if spec["transport"] == "ofi":
        return sel.pml == "cm" and sel.provider == spec.get("provider")
    return True


def judge(fabric_name: str, pair: tuple[str, str], selections: dict[str, Selection]) -> tuple[bool, str]:
    """(passed, one line) for the pair's two ranks; ``selections`` keyed by host as printed."""
    spec = fabric(fabric_name)
    want = {"ucx": "pml ucx on the HCA", "ofi": f"pml cm with mtl ofi provider {spec.get('provider')}",
            "tcp": "any transport (TCP is this fabric)"}[spec["transport"]]
    a, b = pair
    seen = []
    ok = True
    for node in pair:
        sel = selections.get(node)
        if sel is None:
            ok = False
            seen.append(f"{node}: no output from its rank")
            continue
        ok = ok and uses_fabric(fabric_name, sel)
        seen.append(f"{node}: {sel.describe()}")
    verdict = "uses" if ok else "does NOT use"
    line = f"MPI between {a} and {b} {verdict} the {fabric_name} fabric: " + "; ".join(seen)
    if not ok:
        line += f" (wanted {want})"
    return ok, line


# ---- running the probe on a login node --------------------------------------------------

def _hosts(inventory: dict[str, Any]) -> dict[str, str]:
    """Node name -> address, and the address -> itself (ranks print either)."""
    return {n["name"]: n["address"] for n in inventory["nodes"]}


def probe_command(launcher: dict[str, Any], hostfile: str, ior: str) -> list[str]:
    line = str(launcher.get("mpirun") or "")
    if not line:
        raise FabricError("the lab has no launcher.mpirun line: nothing starts the two ranks")
    rendered = line.replace("{np}", "2").replace("{hostfile}", hostfile)
    return [*shlex.split(rendered), ior, "-a", "DUMMY", "-w", "-r", "-t", "1k", "-b", "1k", "-i", "1"]


def run_probe(lab: dict[str, Any], inventory: dict[str, Any], a: str, b: str, timeout: int = 300) -> tuple[bool, str]:
    """Start one rank on node a and one on node b with the lab's launcher; judge the result."""
    hosts = _hosts(inventory)
    for node in (a, b):
        if node not in hosts:
            raise FabricError(f"node {node!r} is not in the lab's inventory (nodes: {', '.join(sorted(hosts))})")
    fabric_name = str(lab["network"].get("fabric") or "ethernet")
    fabric(fabric_name)
    launcher = dict(inventory.get("launcher") or lab.get("launcher") or {})
    ior = shutil.which("ior", path=tool_search_path(lab))
    if ior is None:
        raise ProbeUnavailable("ior is not installed (the toolchain view, PFSLAB_TOOL_PATH or PATH): "
                               "the probe runs ior -a DUMMY; 'make toolchain' installs it")
    with tempfile.TemporaryDirectory(prefix="pfslab-fabric-") as tmp:
        hostfile = Path(tmp, "hosts")
        hostfile.write_text(f"{hosts[a]} slots=1\n{hosts[b]} slots=1\n")
        env = {**os.environ, **{k: str(v) for k, v in launcher.get("env", {}).items()}, **VERBOSE_ENV}
        env["PATH"] = tool_search_path(lab)
        command = probe_command(launcher, str(hostfile), ior)
        if shutil.which(command[0], path=env["PATH"]) is None:
            raise ProbeUnavailable(f"{command[0]} is not installed (the toolchain view, PFSLAB_TOOL_PATH or PATH); "
                                   "'make toolchain' installs Open MPI")
        try:
            proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return False, f"MPI between {a} and {b}: the two-rank probe did not finish in {timeout} s"
    output = proc.stdout + proc.stderr
    by_host = parse(output)
    # Ranks print their host name (or address); map both to the node names.
    by_node = {}
    for node in (a, b):
        for key in (node, hosts[node], hosts[node].split(".")[0]):
            if key in by_host:
                by_node[node] = by_host[key]
                break
    ok, line = judge(fabric_name, (a, b), by_node)
    if proc.returncode != 0:
        last = next((x for x in reversed(output.strip().splitlines()) if x.strip()), "")
        return False, f"MPI between {a} and {b}: the two-rank probe failed (exit {proc.returncode}): {last.strip()}"
    return ok, line
