"""Where the kit looks for benchmark tools (shared by ReFrame tests and provenance records)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pfslab import KIT_ROOT

#: The toolchain's default Spack view (spack/spack.yaml); images and `make toolchain` put it here.
DEFAULT_VIEW = "/opt/pfslab/view"

#: Where `make tools` installs IOR, mdtest and IO500 built without Spack (pfslab/toolbuild.py),
#: with views named as the toolchain's: view (IOR 4.0.0, IO500), view-seed (IOR 3.3.0).
BUILT_TOOLS: Path = KIT_ROOT / "build" / "tools"


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
    """PFSLAB_TOOL_PATH first, then the lab's toolchain view, then `make tools`' view of
    the same name (build/tools/view, build/tools/view-seed), then PATH: a lab that runs
    the seeds' view finds IOR 3.3.0 whether Spack or `make tools` built it."""
    parts = [p for p in os.environ.get("PFSLAB_TOOL_PATH", "").split(":") if p]
    view = view_dir(lab)
    parts.append(f"{view}/bin")
    parts.append(f"{BUILT_TOOLS / Path(view).name}/bin")
    parts.extend(p for p in os.environ.get("PATH", "").split(":") if p)
    return ":".join(parts)
