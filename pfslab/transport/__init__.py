"""How a command reaches a lab's node: one interface, two ways today.

- :class:`~pfslab.transport.local.LocalTransport`: the node is a network namespace of
  this machine (target local); commands run through ``scripts/local/node-exec``, which
  enters the namespace and hands the role its node config.
- :class:`~pfslab.transport.ssh.SshTransport`: the node is a machine reached over SSH
  with the lab's one SSH config (``build/<lab>/ssh/config``, written by
  ``scripts/lib/remote.sh``), through the login node where the config says so.

:func:`for_lab` chooses one from the target's registry entry (its ``namespaces`` flag),
never from the target's name.
"""

from __future__ import annotations

from pathlib import Path
from pfslab.model import Inventory
from pfslab.transport.base import TIMED_OUT, Result, Transport, bounded, bounded_shown, stream_lines
from pfslab.transport.local import LocalTransport
from pfslab.transport.ssh import SshTransport

__all__ = ["TIMED_OUT", "LocalTransport", "Result", "SshTransport", "Transport", "bounded", "bounded_shown", "for_lab", "stream_lines"]


def for_lab(lab: str, inventory: Inventory, kit_root: Path, build: Path, remote_root: str,
            remote_config: str) -> Transport:
    """The lab's transport, from its target's registry entry: namespaces of this host,
    else SSH with the lab's SSH config (build/<lab>/ssh/config)."""
    target = inventory.registry_target()
    if target.namespaces:
        return LocalTransport.of_inventory(inventory, kit_root)
    return SshTransport(build / lab / "ssh" / "config", remote_root, remote_config)
