"""A local lab's directories and the host's view of its file system, as Terraform's
apply and destroy of targets/local make and remove them (``scripts/local/prepare``,
``cleanup``, ``bind-mount``, ``unmount``).

- prepare: the lab's state (node configs, backing files, keys, logs), its runtime
  records (hosts/, read by nsrsh) and the common mount path; idempotent.
- cleanup: the last step of a destroy; removes them again, never descending into a
  mount left under the state.
- bind-mount: the host plays the login node by seeing the file system at the common
  mount path through the first client's mount; idempotent, so a repeated apply neither
  stacks a second bind nor fails.
- unmount: bounded in time whatever the state of the file system behind it (a hung FUSE
  mount is aborted, never waited on: :func:`pfslab.lifecycle.mounts.unmount_bounded`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from pfslab.lifecycle import Refusal, log, mounts

#: How long each step of an unmount may take, in seconds.
UNMOUNT_GRACE_S = 10


class StepFailed(Refusal):
    """A step that ran and failed (not bad input): one line, exit 1."""


def prepare(state: str, run: str, mount: str) -> None:
    for path in (Path(state, "nodes"), Path(run, "hosts"), Path(mount)):
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StepFailed(f"cannot make {path}: {err.strerror}") from None


def _remove_tree(path: str) -> None:
    try:
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)
    except OSError as err:
        raise StepFailed(f"cannot remove {path}: {err.strerror} ({err.filename})") from None


def _rmdir(path: str) -> bool:
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def cleanup(state: str, run: str, mount: str, tag: str = "cleanup") -> None:
    for directory in (state, run):
        if not directory.startswith("/") or directory == "/":
            raise Refusal(f"refusing to remove '{directory}': not an absolute path below /")
    # A mount left under the state (a client that failed to stop) would make the removal
    # descend into the file system; unmount it first, lazily if it is busy.
    for target in sorted(mounts.mounts_under(state), reverse=True):
        log(tag, f"unmounting leftover {target}")
        mounts.unmount_bounded(target, UNMOUNT_GRACE_S, tag)
    _remove_tree(state)
    _remove_tree(run)
    _rmdir(os.path.dirname(run))
    if os.path.isdir(mount) and mount not in mounts.mount_points():
        if not _rmdir(mount):
            log(tag, f"left {mount} in place: it is not empty")
        _rmdir(os.path.dirname(mount))


def bind_mount(source: str, target: str) -> None:
    if os.path.normpath(target) in mounts.mount_points():
        return
    sys.stdout.flush()
    rc = subprocess.run(["mount", "--bind", source, target], stdin=subprocess.DEVNULL, check=False).returncode
    if rc != 0:
        raise StepFailed(f"mount --bind {source} {target} failed with status {rc}")


def unmount(target: str, tag: str = "unmount") -> None:
    if not target.startswith("/"):
        raise Refusal(f"TARGET '{target}' is not an absolute path")
    if not mounts.unmount_bounded(target, UNMOUNT_GRACE_S, tag):
        raise StepFailed(f"{target} did not unmount, not even lazily")
