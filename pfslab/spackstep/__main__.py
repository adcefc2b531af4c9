"""``python3 -m pfslab.spackstep toolchain|mirror|profile``: the steps behind
scripts/toolchain (make toolchain) and scripts/mirror (make mirror), and a toolchain
profile on its own (tests). A refusal or failed step: one ``[tag] error:`` line, exit 2."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pfslab.spackstep import mirror, profile, toolchain
from pfslab.spackstep.step import Log, Paths, StepError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m pfslab.spackstep", description=__doc__)
    steps = parser.add_subparsers(dest="step", required=True)
    steps.add_parser("toolchain", help="install the toolchain with Spack (environment: see scripts/toolchain)")
    steps.add_parser("mirror", help="write the air-gapped bundle (environment: see scripts/mirror)")
    scope = steps.add_parser("profile", help="write the toolchain profile of MACHINE clients on FILESYSTEM; prints DIR when it wrote one")
    scope.add_argument("dir", type=Path)
    scope.add_argument("machine", help="what uname -m says: " + ", ".join(profile.TARGETS))
    scope.add_argument("filesystem", nargs="?", default="", help="the lab's file system (empty: any)")
    scope.add_argument("versions", nargs="*", help="the installed versions of the family's toolchain.externals, in order")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    log = Log({"profile": "pfslab"}.get(args.step, args.step))
    try:
        if args.step == "toolchain":
            toolchain.run(os.environ, log)
        elif args.step == "mirror":
            mirror.run(os.environ, log)
        else:
            paths = Paths.from_environ(os.environ)
            if profile.write_profile_scope(paths.root, paths.spack_yaml, args.dir, args.machine, args.filesystem, args.versions):
                print(args.dir)
    except StepError as error:
        log.error(str(error))
        return 2
    except OSError as error:  # a file the step could not read or write: one line too
        log.error(f"{error.strerror}: {error.filename}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
