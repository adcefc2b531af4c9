"""Where the kit looks for benchmark tools (shared by ReFrame tests and provenance records)."""

from __future__ import annotations

import os
from typing import Any

#: The toolchain's default Spack view (spack/spack.yaml); images and `make toolchain` put it here.
DEFAULT_VIEW = "/opt/pfslab/view"


def view_dir(lab: dict[str, Any] | None = None) -> str:
    """The lab's toolchain view (benchmark.toolchain, pfslab/toolchain.py), or the default
    view without a lab. PFSLAB_VIEW, when set, names another directory for it (a view
    installed elsewhere; it must hold the lab's stack, whose versions the command lines
    are rendered for)."""
    if os.environ.get("PFSLAB_VIEW"):
        return os.environ["PFSLAB_VIEW"]
    if lab is None:
        return DEFAULT_VIEW
    from pfslab import toolchain

    return toolchain.root(toolchain.view_of(lab))


def tool_search_path(lab: dict[str, Any] | None = None) -> str:
    """PFSLAB_TOOL_PATH first, then the lab's toolchain view, then PATH."""
    parts = [p for p in os.environ.get("PFSLAB_TOOL_PATH", "").split(":") if p]
    parts.append(f"{view_dir(lab)}/bin")
    parts.extend(p for p in os.environ.get("PATH", "").split(":") if p)
    return ":".join(parts)
