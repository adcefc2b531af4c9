"""The image tooling of the kit's machine: the kit's files and digest, the kit archive
Packer copies into images (:mod:`pfslab.images.kit`), and the template directory Packer
reads (:mod:`pfslab.images.templates`). ``pfslab image ...`` runs them; scripts/images,
scripts/image-digest and scripts/lib/images.sh call that command and stay thin."""

from __future__ import annotations

import os
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.errors import KitError


class ImageError(KitError):
    """Bad input or a kit that cannot make an image: one line, exit 2 (the shell's die)."""


def kit_root() -> Path:
    """The kit the images carry: PFSLAB_ROOT as the calling script exported it (a test
    may point it at a copy), else this checkout."""
    return Path(os.environ.get("PFSLAB_ROOT") or KIT_ROOT)


def images_dir() -> Path:
    return Path(os.environ.get("PFSLAB_IMAGES_DIR") or kit_root() / "build" / "images")


def relative(path: Path) -> str:
    """PATH less the kit's root, as the log lines name files."""
    prefix = f"{kit_root()}/"
    text = str(path)
    return text[len(prefix):] if text.startswith(prefix) else text
