"""The template directory Packer gets: Packer reads one directory, the kit keeps the
shared templates in packer/ and each target's source in targets/<target>/image.pkr.hcl.

packer/*.pkr.hcl but plugins.pkr.hcl (Debian's Packer 1.6.6 rejects its required_plugins
block) are linked in, every targets/<target>/image.pkr.hcl as target-<target>.pkr.hcl;
builds.pkr.hcl is written with its ``sources = []`` filled with those files' sources, and
targets.pkr.hcl with local.target (builder type -> the folder it is in: the node config's
target) and local.image (builder type -> that file's local.target_<target>: fabric,
toolchain_auto). A target with an image is its one file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pfslab.images import ImageError

_SOURCE = re.compile(r'^source "[^"]+" "[^"]+" \{', re.MULTILINE)
_EMPTY_SOURCES = "  sources = []"


def _link(target: Path, link: Path) -> None:
    """``ln -sf TARGET LINK``."""
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _source_of(target: str, text: str) -> tuple[str, str]:
    """The builder type and name of a target's one source block."""
    lines = [line for line in text.splitlines() if _SOURCE.match(line)]
    if len(lines) != 1:
        raise ImageError(f'targets/{target}/image.pkr.hcl must hold exactly one source block (source "TYPE" "NAME" {{)')
    fields = lines[0].split('"')
    return fields[1], fields[3]


def packer_templates(root: Path, out: Path) -> None:
    """Assemble the directory Packer gets from the kit at ``root`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted((root / "packer").glob("*.pkr.hcl"), key=lambda p: os.fsencode(p.name)):
        if f.name not in ("plugins.pkr.hcl", "builds.pkr.hcl"):
            _link(f, out / f.name)
    sources: list[str] = []
    targets: list[str] = []
    images: list[str] = []
    seen: set[str] = set()
    for f in sorted((root / "targets").glob("*/image.pkr.hcl"), key=lambda p: os.fsencode(p.parent.name)):
        if not f.exists():
            continue
        target = f.parent.name
        text = f.read_text()
        kind, name = _source_of(target, text)
        if kind in seen:
            raise ImageError(f"targets/{target}/image.pkr.hcl: builder {kind} is already another target's "
                             "(local.target is keyed by builder type)")
        seen.add(kind)
        if not re.search(rf"^  target_{re.escape(target)} = {{", text, re.MULTILINE):
            raise ImageError(f"targets/{target}/image.pkr.hcl has no 'locals {{ target_{target} = {{ fabric = ..., "
                             "toolchain_auto = ... } }' (what the shared build steps take from it)")
        sources.append(f'"source.{kind}.{name}"')
        targets.append(f'    "{kind}" = "{target}"')
        images.append(f'    "{kind}" = local.target_{target}')
        _link(f, out / f"target-{target}.pkr.hcl")
    if not sources:
        raise ImageError("no targets/*/image.pkr.hcl: no image source to build")
    builds = (root / "packer" / "builds.pkr.hcl").read_text()
    if _EMPTY_SOURCES not in builds.split("\n"):
        raise ImageError("packer/builds.pkr.hcl has no '  sources = []' line for the targets' sources")
    filled = f"  sources = [{', '.join(sources)}]"
    (out / "builds.pkr.hcl").write_text("\n".join(filled if line == _EMPTY_SOURCES else line
                                                  for line in builds.split("\n")))
    (out / "targets.pkr.hcl").write_text(
        "# Written by scripts/images (packer_templates): per builder type, the folder of\n"
        "# its image.pkr.hcl and the facts that file gives the shared steps.\n"
        "locals {\n  target = {\n" + "\n".join(targets) + "\n  }\n  image = {\n" + "\n".join(images)
        + "\n  }\n}\n")
