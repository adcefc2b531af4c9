"""A lab's references file as a document: where it is, its top-level form, its error,
and what a source must name. Both the references and the shapes a file holds are read
through here, so neither of their modules imports the other's readers (references
validates the shapes of a file; shapes read no reference).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeGuard

import yaml

from pfslab import KIT_ROOT
from pfslab.errors import KitError

REFERENCES_DIR: Path = KIT_ROOT / "reframe" / "references"
POLICY_PATH: Path = REFERENCES_DIR / "policy.yaml"


class ReferenceError(KitError, ValueError):
    """A references file is malformed; the message names the file and entry."""


def path_for(lab: str) -> Path:
    """The lab's references file. PFSLAB_REFERENCES_DIR points elsewhere (a trial
    baseline, a site's own references) without touching the kit's files; the
    tolerance policy stays the kit's."""
    return Path(os.environ.get("PFSLAB_REFERENCES_DIR") or REFERENCES_DIR) / f"{lab}.yaml"


def document(lab: str, path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ReferenceError(f"{path.name}: must be a mapping with 'lab', 'references' and 'notes'")
    if data.get("lab") != lab:
        raise ReferenceError(f"{path.name}: 'lab' must be {lab!r}, not {data.get('lab')!r}")
    for key in ("references", "notes"):
        if data.get(key) is not None and not isinstance(data[key], list):
            raise ReferenceError(f"{path.name}: {key!r} must be a list")
    return data


def has_source(source: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(source, dict) and bool(source.get("document")) and bool(source.get("where") or source.get("quote"))
