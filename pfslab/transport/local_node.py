"""A local lab's node files on this machine: its config and nsrsh record
(``scripts/local/node-config``) and its share of the cluster's files
(``scripts/local/cluster-files``).

The cluster's files (a node config's ``paths.cluster``): the bootstrap node (the first
node of the first start phase) makes them; every other node receives only the files its
roles use (:func:`pfslab.registry.cluster_files_for`), so a secret lives on no node that
does not need it. A local lab's nodes each have a directory of this machine; a remote
lab's get theirs over SSH (:mod:`pfslab.lifecycle.cluster_copy`). The families' files:

======================================  =============================================
ceph.conf                               every Ceph node (not secret, mode 644)
monmap                                  ceph-mon (not secret; only a new monitor reads it)
ceph.mon.keyring                        ceph-mon: the mon. key and every key created at
                                        bootstrap, which a new monitor's store needs
ceph.client.admin.keyring               ceph-mon (quorum, ``health cluster``/``service``),
                                        ceph-mds (the first MDS creates the pools and file
                                        system; ``health mds`` reads the MDS map)
ceph.client.bootstrap-mgr.keyring       ceph-mgr: may only create mgr.* keys
ceph.client.bootstrap-osd.keyring       ceph-osd: may only register OSDs (``osd new``)
ceph.client.pfslab.keyring              ceph-client: the file system, nothing else
beegfs.auth                             every BeeGFS node: connAuthFile's shared secret
munge.key                               every Slurm node: MUNGE's key (the slurm role's)
======================================  =============================================

Secrets are mode 600 (beegfs.auth 400), owned by root (munge.key 400, owned by munge:
its daemon reads a copy), in a directory of mode 700. A node's config reaches it here
through the environment, not as an argument: Terraform logs a provisioner's command."""

from __future__ import annotations

import filecmp
import json
import os
import pwd
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pfslab.errors import KitError


class NodeFileError(KitError):
    """A node's file that cannot be read or made: one line, exit 2."""


def write_node_files(config: Path, record: Path, env: Mapping[str, str]) -> None:
    """The node's config (JSON) from ``NODE_CONFIG`` into ``config`` and its nsrsh record
    ("ADDRESS NAME NETNS MOUNT_SOURCE MOUNT_PATH") from ``NODE_RECORD`` into ``record``,
    each rewritten whole: after a lab file changed, only the new contents are left."""
    if "NODE_CONFIG" not in env or "NODE_RECORD" not in env:
        raise NodeFileError("NODE_CONFIG and NODE_RECORD must be set (the node's config and record)")
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(env["NODE_CONFIG"] + "\n")
    # The record's directory (RUN_ROOT/hosts) is made by `prepare`, like the lab's.
    record.write_text(env["NODE_RECORD"] + "\n")


def _node_config(path: Path) -> tuple[list[str], Path]:
    """The roles and ``paths.cluster`` of a node config."""
    try:
        data: Any = json.loads(path.read_text()) if path.stat().st_size else None
    except (OSError, ValueError):
        data = None
    if data is None:
        raise NodeFileError(f"node config '{path}' does not exist")
    try:
        roles, cluster = data["node"]["roles"], data["paths"]["cluster"]
    except (KeyError, TypeError):
        raise NodeFileError(f"node config '{path}' has no .node.roles or .paths.cluster") from None
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles) or not isinstance(cluster, str):
        raise NodeFileError(f"node config '{path}': .node.roles is not a list of names or .paths.cluster not a path")
    return roles, Path(cluster)


def munge_key_make(key: Path) -> None:
    """MUNGE's key for a lab with Slurm, made once: 1 KiB of random bytes written inside
    the file (never an argument, never printed), mode 400, owned by munge where that user
    exists (munged reads a copy of its own). Linked into place, not moved: when two makers
    race, the first key stays and every node gets that one."""
    if key.is_file() and key.stat().st_size:
        return
    fd, tmp = tempfile.mkstemp(prefix=".munge.key.", dir=key.parent)
    try:
        os.write(fd, os.urandom(1024))
        os.close(fd)
        os.chmod(tmp, 0o400)
        try:
            user = pwd.getpwnam("munge")
        except KeyError:
            pass
        else:
            os.chown(tmp, user.pw_uid, user.pw_gid)
        try:
            os.link(tmp, key)
        except OSError:
            if not (key.is_file() and key.stat().st_size):
                raise NodeFileError(f"cannot make the munge key {key}") from None
    finally:
        os.unlink(tmp)


def cluster_files_copy(src: Path, dst: Path, files: Sequence[str]) -> None:
    """Copy, between two directories of this machine, ``files`` (those the source has: a
    file system's other files are not there). Each keeps its mode and owner; one already
    identical is left alone; each appears whole (written aside, then renamed)."""
    if src.exists() and dst.exists() and src.samefile(dst):
        return
    dst.mkdir(parents=True, exist_ok=True)
    dst.chmod(0o700)
    for name in files:
        source = src / name
        if not name or not source.exists():
            continue
        target = dst / name
        if target.exists() and filecmp.cmp(source, target, shallow=False):
            continue
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=dst)
        os.close(fd)
        try:
            shutil.copyfile(source, tmp)
            st = source.stat()
            os.chown(tmp, st.st_uid, st.st_gid)
            shutil.copystat(source, tmp)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def cluster_files(source: Path, config: Path) -> None:
    """Give a local-lab node (its config) its share of the bootstrap node's cluster files
    (``source``, that node's ``paths.cluster``), as a remote lab's nodes get theirs. Runs
    before each of the node's roles starts, so a key made by an earlier phase is there;
    for the bootstrap node itself it copies nothing."""
    from pfslab import registry

    roles, cluster = _node_config(config)
    old = os.umask(0o077)
    try:
        # The lab's MUNGE key is the kit's to make, once, with the bootstrap node's files:
        # the first Slurm node to start makes it there and every Slurm node takes that one.
        if any(r.startswith("slurm-") for r in roles):
            munge_key_make(source / registry.MUNGE_KEY)
        cluster_files_copy(source, cluster, registry.cluster_files_for(roles))
    finally:
        os.umask(old)
