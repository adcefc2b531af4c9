"""Where the kit looks for benchmark tools (shared by ReFrame tests and provenance records)."""

from __future__ import annotations

import os

#: The toolchain's Spack view (spack/spack.yaml); images and `make toolchain` put it here.
DEFAULT_VIEW = "/opt/pfslab/view"


def tool_search_path() -> str:
    """PFSLAB_TOOL_PATH first, then the toolchain view, then PATH."""
    parts = [p for p in os.environ.get("PFSLAB_TOOL_PATH", "").split(":") if p]
    parts.append(f"{os.environ.get('PFSLAB_VIEW', DEFAULT_VIEW)}/bin")
    parts.extend(p for p in os.environ.get("PATH", "").split(":") if p)
    return ":".join(parts)
