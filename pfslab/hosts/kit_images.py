"""What the hosts' images take from the kit's image tooling: the kit's digest and the kit
archive Packer copies into images (pfslab.images.kit), and the Debian base's recipe, which
stays in scripts/lib/images.sh beside the bash that builds the base (its digest hashes that
bash: moving it would rebuild every cached base); only this module knows that part is shell."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pfslab import KIT_ROOT
from pfslab.hosts import HostsRefusal
from pfslab.images import kit

_SOURCE = 'source "$PFSLAB_ROOT/scripts/lib/common.sh"; source "$PFSLAB_ROOT/scripts/lib/images.sh"; '


def _bash(script: str, *args: str, root: Path = KIT_ROOT) -> str:
    done = subprocess.run(["bash", "-c", _SOURCE + script, "_", *args], capture_output=True, text=True,
                          env=_env(root), check=False)
    if done.returncode != 0:
        raise HostsRefusal(f"scripts/lib/images.sh: {script.split()[0]} failed: "
                           f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return done.stdout


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PFSLAB_ROOT": str(root)}


def image_digest(root: Path = KIT_ROOT) -> str:
    """The digest of the kit files an image carries."""
    return kit.image_digest(root)


def kit_archive(out: Path, root: Path = KIT_ROOT) -> None:
    """A gzip'd tar of the files the digest covers."""
    kit.kit_archive(root, out)


@dataclass(frozen=True)
class BaseRecipe:
    suite: str
    mirror: str
    security: str
    #: The qemu base's packages, in images.sh's order.
    packages: tuple[str, ...]


def base_recipe(root: Path = KIT_ROOT) -> BaseRecipe:
    """The Debian base of the qemu images (images.sh BASE_SUITE, BASE_MIRROR, BASE_SECURITY,
    BASE_PACKAGES)."""
    lines = _bash('printf "%s\\n" "$BASE_SUITE" "$BASE_MIRROR" "$BASE_SECURITY" "${BASE_PACKAGES[@]}"',
                  root=root).splitlines()
    return BaseRecipe(lines[0], lines[1], lines[2], tuple(lines[3:]))
