"""Sizes on an IOzone command line, written the way IOzone reads them.

IOzone 3.4xx parses ``-s`` (file size), ``-r`` (record size), ``-y``/``-q`` (smallest and
largest record) and ``-n``/``-g`` (smallest and largest file) in main()'s ``case 's':``
and its siblings: the number, then a suffix of k, m or g in either case (KiB, MiB, GiB);
any other suffix is ignored and the number is taken as KiB. ``-s 8t`` is therefore 8
KiB, not 8 TiB (IOzone 3.489 prints "File size set to 8 kB"). The kit writes IOzone
sizes with k, m and g only, and every rendered IOzone line is checked for it.
"""

from __future__ import annotations

import re

from pfslab.units import format_size

#: The suffixes IOzone's size options read (as powers of 1024).
SIZE_SUFFIXES = "kmg"
#: IOzone's options that take a size.
SIZE_OPTIONS = frozenset({"-s", "-r", "-y", "-q", "-n", "-g"})
_SIZE = re.compile(rf"^[0-9]+[{SIZE_SUFFIXES}{SIZE_SUFFIXES.upper()}]?$")


def size(nbytes: int) -> str:
    """A byte count as IOzone reads it: the largest of g, m, k that divides it (8 TiB: 8192g)."""
    return format_size(nbytes, SIZE_SUFFIXES)


def check_args(args: list[str]) -> list[str]:
    """Problems with the size options of one IOzone run's arguments (after the program)."""
    problems = []
    for option, value in zip(args, args[1:]):
        if option in SIZE_OPTIONS and not _SIZE.match(value):
            problems.append(
                f"iozone {option} {value}: IOzone reads a size as a number with k, m or g "
                f"(anything else is taken as KiB)"
            )
    return problems
