"""Hosts on this machine standing in for a site's existing machines (``pfslab hosts``,
scripts/hosts): system containers with their own network, mount, UTS and PID
namespaces, root file systems built from the kit's image recipe, an sshd each.

:mod:`pfslab.hosts.plan` reads what the lab says of them (names, addresses, disks, the
login link), :mod:`pfslab.hosts.machine` makes and removes them on this machine,
:mod:`pfslab.hosts.images` builds their root file systems, :mod:`pfslab.hosts.command`
is the command line."""

from __future__ import annotations

from pfslab.errors import KitError

#: The log tag of every line (scripts/hosts's).
TAG = "hosts"


class HostsRefusal(KitError):
    """Bad input or a precondition not met: ``[hosts] error: ...``, exit 2."""


class CommandFailed(KitError):
    """A command the hosts ran failed: its own output said why; exit with its status."""

    def __init__(self, argv: list[str], status: int) -> None:
        super().__init__(f"{' '.join(argv)} exited with status {status}")
        self.status = status
