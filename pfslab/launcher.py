"""How a remote lab launches its benchmarks (registry/launcher.json), for dry runs.

A provisioned lab's inventory carries its launcher (the lab plan fills it from the same
file); a dry run of a cloud or bare-metal lab has no inventory, so its job scripts get
the launcher here, and export what the real run on the login node would.
"""

from __future__ import annotations

import json
from typing import Any

from pfslab import registry
from pfslab.registry import REGISTRY_DIR

LAUNCHER_FILE = REGISTRY_DIR / "launcher.json"
#: Where the kit is on a remote lab's nodes (the lab plan's node_kit_root).
NODE_KIT_ROOT = "/opt/pfslab"


def _fill(value: str, subnet: str, kit: str) -> str:
    return value.replace("{kit}", kit).replace("{subnet}", subnet)


def remote(lab: dict[str, Any], kit: str = NODE_KIT_ROOT) -> dict[str, Any]:
    """The launcher of a remote lab: the lab file's, plus how its login node starts ranks."""
    spec: dict[str, Any] = json.loads(LAUNCHER_FILE.read_text())["remote"]
    subnet = str(lab["network"]["subnet"])
    own: dict[str, Any] = dict(lab.get("launcher", {}))
    env = dict(own.get("env", {}))
    env.update({k: _fill(str(v), subnet, kit) for k, v in spec["env"].items()})
    return {**own, "env": env, "rsh": _fill(str(spec["rsh"]), subnet, kit)}


def for_dry_run(lab: dict[str, Any]) -> dict[str, Any]:
    """The launcher a dry run's job scripts use: a remote lab's as above, else the lab file's."""
    if registry.target_of(lab).namespaces:
        return dict(lab.get("launcher", {}))
    return remote(lab)
