"""A local lab's node: a network namespace of this machine (target local).

Commands run through ``scripts/local/node-exec NETNS NODE_CONFIG COMMAND...``, the one
place that enters a node's namespace and gives the role its config (scripts/lab and the
role steps Terraform starts use it too). A file is copied by this machine: the
namespaces share its file system."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pfslab.model import Inventory
from pfslab.transport.base import Result, bounded, bounded_shown, stream_lines


@dataclass(frozen=True)
class LocalTransport:
    kit_root: Path
    #: Node name -> its network namespace.
    netns: dict[str, str]
    #: The lab instance's state root: node configs are <state_root>/nodes/<node>/node.json.
    state_root: Path

    @classmethod
    def of_inventory(cls, inventory: Inventory, kit_root: Path) -> LocalTransport:
        return cls(kit_root, dict(inventory.netns), Path(inventory.state_root or "/nonexistent"))

    def config(self, node: str) -> Path:
        return self.state_root / "nodes" / node / "node.json"

    def argv(self, node: str, command: Sequence[str]) -> list[str]:
        if node not in self.netns:
            raise KeyError(f"node {node!r} is not in the lab's namespaces ({', '.join(sorted(self.netns))})")
        return [str(self.kit_root / "scripts" / "local" / "node-exec"), self.netns[node], str(self.config(node)),
                *command]

    def role_command(self, family: str, *args: str) -> list[str]:
        # node-exec hands the role its node config; the role's script is where this
        # machine keeps it (a family's folder).
        from pfslab import registry

        return [str(registry.role_script(family, self.kit_root)), *args]

    def run(self, node: str, command: Sequence[str], timeout: float) -> Result:
        return bounded(self.argv(node, command), timeout)

    def run_shown(self, node: str, command: Sequence[str], timeout: float) -> Result:
        return bounded_shown(self.argv(node, command), timeout)

    def copy(self, node: str, source: Path, destination: str, timeout: float) -> Result:
        self.argv(node, [])  # the node must be the lab's
        try:
            shutil.copyfile(source, destination)
        except OSError as err:
            return Result(1, f"copy {source} to {destination} on {node}: {err.strerror}")
        return Result(0, "")

    def stream(self, node: str, command: Sequence[str]) -> Iterator[str]:
        return stream_lines(self.argv(node, command))
