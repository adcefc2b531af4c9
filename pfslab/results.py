"""The shape every parser returns: figures per operation, with their units.

One document for every tool, so ReFrame tests, reports and ``pfslab parse`` never
care which tool printed a number.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pfslab.errors import KitError


class ParseError(KitError, ValueError):
    """The output is not a complete, successful run of the tool; the message says why."""


@dataclass(frozen=True)
class Operation:
    """Figures for one operation (``write``, ``read``, ``file_create``, ``randread`` ...)."""

    name: str
    unit: str
    max: float
    min: float
    mean: float
    iterations: int
    tasks: int | None = None
    stddev: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ParseResult:
    """Everything a parser learnt from one output."""

    tool: str
    version: str | None
    command: str | None
    operations: dict[str, Operation] = field(default_factory=dict)
    #: Tool-specific facts worth keeping (test parameters, API, file system size ...).
    details: dict[str, Any] = field(default_factory=dict)

    def operation(self, name: str) -> Operation:
        try:
            return self.operations[name]
        except KeyError:
            have = ", ".join(sorted(self.operations)) or "none"
            raise ParseError(f"{self.tool} output has no {name!r} figures (it has: {have})") from None

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "version": self.version,
            "command": self.command,
            "operations": {k: v.as_dict() for k, v in self.operations.items()},
            "details": self.details,
        }


def operation_from_values(
    name: str, unit: str, values: list[float], tasks: int | None = None
) -> Operation:
    """Summarise figures the tool printed once per iteration (or per row) as one Operation.

    Used where a tool prints no max/min/mean of its own (IOR's CSV rows, IOzone's
    table rows, per-state times). The standard deviation is the population one
    (divide by N), the same as IOR's own summary, so figures stay comparable.
    """
    if not values:
        raise ParseError(f"no figures for {name!r}")
    mean = sum(values) / len(values)
    stddev = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return Operation(
        name=name,
        unit=unit,
        max=max(values),
        min=min(values),
        mean=mean,
        iterations=len(values),
        tasks=tasks,
        stddev=stddev,
    )
