"""Units of the figures benchmarks print, and conversions between them.

Seeds publish decimal units (GB/s); IOR, fio and IOzone print binary ones (MiB/s,
KiB/s: IOzone labels its KiB "kB"). Every comparison converts through here so
that a reference and a measurement are never compared in different units.
"""

from __future__ import annotations

from pfslab.errors import KitError

_BANDWIDTH: dict[str, float] = {
    "B/s": 1.0,
    "KiB/s": 2.0**10,
    "MiB/s": 2.0**20,
    "GiB/s": 2.0**30,
    "TiB/s": 2.0**40,
    "kB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
    "TB/s": 1e12,
}
_RATE: dict[str, float] = {
    "ops/s": 1.0,
    "IOPS": 1.0,
    "Kops/s": 1e3,
    "KIOPS": 1e3,
    "kIOPS": 1e3,  # IO500's spelling
    "Mops/s": 1e6,
    "MIOPS": 1e6,
}
_TIME: dict[str, float] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0}
#: IO500's total: the geometric mean of a bandwidth (GiB/s) and a rate (kIOPS), a kind of its own.
_SCORE: dict[str, float] = {"score": 1.0}

_KINDS: tuple[tuple[str, dict[str, float]], ...] = (
    ("bandwidth", _BANDWIDTH),
    ("rate", _RATE),
    ("time", _TIME),
    ("score", _SCORE),
)

KNOWN_UNITS: tuple[str, ...] = tuple(u for _, table in _KINDS for u in table)


class UnitError(KitError, ValueError):
    """A unit is unknown, or two units measure different things."""


def kind_of(unit: str) -> str:
    """Return 'bandwidth', 'rate', 'time' or 'score' for a known unit."""
    for kind, table in _KINDS:
        if unit in table:
            return kind
    raise UnitError(f"unknown unit {unit!r}; known units: {', '.join(KNOWN_UNITS)}")


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """Convert ``value`` from one unit to another of the same kind."""
    from_kind, to_kind = kind_of(from_unit), kind_of(to_unit)
    if from_kind != to_kind:
        raise UnitError(f"cannot convert {from_unit} ({from_kind}) to {to_unit} ({to_kind})")
    table = dict(_BANDWIDTH, **_RATE, **_TIME, **_SCORE)
    return value * table[from_unit] / table[to_unit]


def higher_is_better(unit: str) -> bool:
    """Bandwidth and rates improve upwards; completion times improve downwards."""
    return kind_of(unit) != "time"


_SIZE_SUFFIX: dict[str, int] = {
    "": 1,
    "k": 2**10,
    "m": 2**20,
    "g": 2**30,
    "t": 2**40,
    "p": 2**50,
}


def parse_size(text: str | int) -> int:
    """Parse a benchmark size such as ``8M``, ``128G``, ``4K``, ``1m`` or ``4096``.

    Benchmarks (IOR, IOzone, fio, mdtest) read these suffixes as powers of 1024,
    and so does the kit. An optional trailing ``B``/``iB`` is accepted.
    """
    if isinstance(text, int):
        return text
    raw = text.strip()
    lowered = raw.lower().removesuffix("ib").removesuffix("b")
    number, suffix = lowered, ""
    if lowered and lowered[-1] in _SIZE_SUFFIX and not lowered[-1].isdigit():
        number, suffix = lowered[:-1], lowered[-1]
    try:
        value = float(number)
    except ValueError:
        raise UnitError(f"bad size {text!r}; expected a number with an optional K, M, G, T or P suffix") from None
    if value < 0:
        raise UnitError(f"bad size {text!r}; sizes cannot be negative")
    return int(value * _SIZE_SUFFIX[suffix])


def format_size(nbytes: int, suffixes: str = "kmgtp") -> str:
    """Format a byte count the way benchmark command lines expect (``8m``, ``128g``, ``4k``),
    with the largest of ``suffixes`` that divides it (a tool may read fewer: IOzone's are kmg)."""
    for suffix in sorted(suffixes, key=lambda s: _SIZE_SUFFIX[s], reverse=True):
        unit = _SIZE_SUFFIX[suffix]
        if nbytes >= unit and nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)
