"""Where the kit looks for benchmark tools (shared by ReFrame tests and provenance records)."""

from __future__ import annotations

import os
from pathlib import Path

from pfslab import KIT_ROOT

#: The toolchain's Spack view (spack/spack.yaml); images and `make toolchain` put it here.
DEFAULT_VIEW = "/opt/pfslab/view"

#: Where `make tools` installs IOR, mdtest and IO500 built without Spack (pfslab/tools.py),
#: with views named as the toolchain's: view (IOR 4.0.0, IO500), view-seed (IOR 3.3.0).
BUILT_TOOLS: Path = KIT_ROOT / "build" / "tools"


def tool_search_path() -> str:
    """PFSLAB_TOOL_PATH first, then the toolchain view, then `make tools`' view of the same name, then PATH.

    So PFSLAB_VIEW=/opt/pfslab/view-seed selects IOR 3.3.0 whether Spack or `make tools` built it.
    """
    parts = [p for p in os.environ.get("PFSLAB_TOOL_PATH", "").split(":") if p]
    view = os.environ.get("PFSLAB_VIEW", DEFAULT_VIEW)
    parts.append(f"{view}/bin")
    parts.append(f"{BUILT_TOOLS / Path(view).name}/bin")
    parts.extend(p for p in os.environ.get("PATH", "").split(":") if p)
    return ":".join(parts)
