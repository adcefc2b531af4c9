"""A remote lab's cluster files (paths.cluster: keys, ceph.conf, monmap, BeeGFS's
connAuthFile, MUNGE's key) copied from the bootstrap node, the first node of the first
phase, to every other node (``pfslab lab cluster-copy LAB``; scripts/lib/remote.sh's
remote_copy_cluster).

Host to host through this machine (scp -3): the secrets pass through its memory, never
its disk, and are never printed; only the files' names are read. Each node gets only
what its roles use (:func:`pfslab.registry.cluster_files_for`: no mon. or admin key on a
client) into a directory of mode 700, modes kept. A copy is bounded by
``PFSLAB_COPY_TIMEOUT``. Nothing to do when the bootstrap node made no cluster files
(NFS, GPFS) and the lab has no Slurm."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from pfslab import registry
from pfslab.lifecycle import Refusal, health, phases, status
from pfslab.model import Inventory
from pfslab.transport import TIMED_OUT, Result
from pfslab.transport.ssh import SshTransport

COPY_VAR, COPY_DEFAULT = "PFSLAB_COPY_TIMEOUT", 600
#: Seconds a listing or a mkdir on a node may take.
CALL_TIMEOUT_S = 120


class CopyTransport(Protocol):
    """What the copy needs of the SSH transport (pfslab/transport/ssh.py)."""

    @property
    def remote_root(self) -> str: ...

    def run_shell(self, node: str, script: str, timeout: float) -> Result: ...

    def run_shell_shown(self, node: str, script: str, timeout: float) -> Result: ...

    def copy_between(self, source: str, paths: Sequence[str], node: str, directory: str,
                     timeout: float) -> Result: ...


def copy_cluster(lab: str, inventory: Inventory, ssh: CopyTransport, tag: str, env: Mapping[str, str],
                 clock: phases.Clock) -> None:
    table = health.phase_table(inventory)
    if not table or not table[0]:
        return
    boot = table[0][0].node
    path = inventory.cluster_path
    limit = phases.seconds_setting(env, COPY_VAR, COPY_DEFAULT)

    def log(message: str) -> None:
        print(f"[{tag}] {message}", file=sys.stderr, flush=True)

    nodes = inventory.nodes
    # A lab with Slurm: its MUNGE key is made once on the bootstrap node, with the other
    # cluster files, by the kit there (the key never leaves the lab's nodes).
    if any(r.startswith("slurm-") for n in nodes for r in n.roles):
        root = ssh.remote_root
        made = ssh.run_shell_shown(
            boot, f"bash -c 'set -e; source {root}/scripts/lib/common.sh; source {root}/scripts/lib/cluster-files.sh; "
                  f"mkdir -p {path}; chmod 700 {path}; umask 077; munge_key_make {path}/{registry.MUNGE_KEY}'", limit)
        if not made.ok:
            raise Refusal(f"cannot make the lab's munge key in {path} on {boot}")
    # Only the names: which files there are is no secret.
    listed = ssh.run_shell(boot, f"ls -A '{path}' 2>/dev/null", CALL_TIMEOUT_S)
    have = set(listed.output.split("\n")) - {""} if listed.ok else set()
    if not have:
        log(f"the bootstrap node {boot} has no cluster files in {path}; nothing to distribute")
        return
    for node in nodes:
        name = node.name
        if name == boot:
            continue
        files = [f for f in registry.cluster_files_for(node.roles) if f in have]
        if not files:
            continue
        if not ssh.run_shell(name, f"mkdir -p '{path}' && chmod 700 '{path}'", CALL_TIMEOUT_S).ok:
            raise Refusal(f"cannot create {path} on node {name} of lab {lab}")
        start = clock.monotonic()
        done = ssh.copy_between(boot, [f"{path}/{f}" for f in files], name, path, limit)
        if done.rc == TIMED_OUT and clock.monotonic() - start >= limit:
            raise phases.out_of_time(lab, name, f"copying the cluster files from {boot}", COPY_VAR, COPY_DEFAULT,
                                     limit)
        if not done.ok:
            raise Refusal(f"copying the cluster files from {boot} to {name} failed")
        log(f"copied to {name} what its roles use: {' '.join(files)}")


def main(lab: str) -> int:
    inventory, transport = status.lab_of(lab)
    if not isinstance(transport, SshTransport):
        raise Refusal(f"lab {lab} is not a remote lab: its nodes share this machine's files (scripts/local/cluster-files)")
    copy_cluster(lab, inventory, transport, os.environ.get("PFSLAB_LOG_TAG") or "pfslab", os.environ,
                 phases.RealClock())
    return 0
