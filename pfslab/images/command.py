"""``pfslab image ...``: the image tooling's commands, for scripts/images,
scripts/image-digest and the functions of scripts/lib/images.sh that other scripts call.

Refusals read as the calling script's own (``[TAG] error: ...``, exit 2), TAG being its
PFSLAB_LOG_TAG (``pfslab`` when it has none)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pfslab.images import ImageError, boot_test, build, kit, kit_root, qemu, templates

_DIGEST_USAGE = "usage: image-digest [--files|--manifest]"

USAGE = ("pfslab image digest [--files|--manifest] | pfslab image kit-archive OUT.tar.gz | "
         "pfslab image templates DIR | pfslab image accel KERNEL | pfslab image boot-test IMAGE [USER_DATA] | "
         "pfslab image build TARGET [ROLE]")


def _digest(args: Sequence[str]) -> None:
    if len(args) > 1:
        raise ImageError(_DIGEST_USAGE)
    option = args[0] if args else ""
    root = kit_root()
    if option == "":
        print(kit.image_digest(root))
    elif option == "--files":
        sys.stdout.write("".join(f"{f}\n" for f in kit.image_files(root)))
    elif option == "--manifest":
        sys.stdout.write(kit.image_manifest(root))
    else:
        raise ImageError(f"unknown option '{option}' ({_DIGEST_USAGE})")


def run(args: Sequence[str]) -> None:
    """One image command; an :class:`ImageError` for bad input."""
    if args and args[0] == "digest":
        _digest(args[1:])
    elif len(args) == 2 and args[0] == "kit-archive":
        kit.kit_archive(kit_root(), Path(args[1]))
    elif len(args) == 2 and args[0] == "templates":
        templates.packer_templates(kit_root(), Path(args[1]))
    elif len(args) == 2 and args[0] == "accel":
        print(qemu.accelerator(Path(args[1])))
    else:
        said = f"'{' '.join(args)}' is not an image command" if args else "no image command given"
        raise ImageError(f"{said}: {USAGE}")


def main(args: Sequence[str]) -> int:
    if args and args[0] == "boot-test":
        return boot_test.main(args[1:])
    if args and args[0] == "build":
        return build.main(args[1:])
    try:
        run(args)
    except ImageError as err:
        print(f"[{os.environ.get('PFSLAB_LOG_TAG') or 'pfslab'}] error: {err}", file=sys.stderr, flush=True)
        return 2
    return 0
