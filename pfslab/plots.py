"""Scaling curves as the seeds draw them: threads against GB/s, IOPS or ops/s.

One figure per workload, one colour per figure (write, read, creates ...): the
measured curve solid with dots, the reference curve dashed in the same colour,
sweep-wide references (a plateau, a peak, a hardware limit) as horizontal lines.
Metadata rates span orders of magnitude, so their y axis is log10, as in the
PixStor paper ("the scale chosen was logarithmic with base 10").
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

#: Colour per figure, fixed so tests can find each curve's pixels in the PNG.
PALETTE: tuple[str, ...] = ("#1f5fbf", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285", "#c2255c", "#5c940d")


@dataclass
class Curve:
    figure: str
    unit: str
    measured: list[tuple[str, float]] = field(default_factory=list)  # (sweep point, value)
    reference: list[tuple[str, float]] = field(default_factory=list)  # published or baseline, per point
    lines: list[tuple[str, float]] = field(default_factory=list)  # (label, value) over the whole sweep
    floor: list[tuple[str, float]] = field(default_factory=list)  # per point: the bound the verdict used
    floor_is_ceiling: bool = False  # completion times: the figure had to stay under it


@dataclass
class Chart:
    title: str
    unit: str
    log_y: bool
    points: list[str]  # sweep points in order (x axis)
    curves: list[Curve]


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _x(points: list[str]) -> dict[str, float]:
    """Thread counts on a log2 axis when numeric, else evenly spaced categories."""
    if all(p.isdigit() for p in points):
        return {p: float(p) for p in points}
    return {p: float(i) for i, p in enumerate(points)}


def _draw_floor(ax: Any, curve: Curve, xs: dict[str, float], c: str) -> None:
    """The bound each point had to meet, and the zone it had to stay out of, shaded:
    below a floor, above a ceiling. One bound for the whole sweep (a calibrated floor)
    spans the plot; bounds that differ per point follow the points."""
    fy = [v for _, v in curve.floor]
    word = "ceiling" if curve.floor_is_ceiling else "floor"
    label = f"{curve.figure} {word} (verdict) {fy[0]:.4g}" if len(set(fy)) == 1 else f"{curve.figure} {word} (verdict)"
    style = (0, (4, 2, 1, 2))
    if len(set(fy)) == 1:
        ax.axhline(fy[0], color=c, linestyle=style, linewidth=1.3, alpha=0.95, label=label)
        if curve.floor_is_ceiling:
            ax.axhspan(fy[0], fy[0] * 50, color=c, alpha=0.07)
        else:
            ax.axhspan(0, fy[0], color=c, alpha=0.07)
        return
    fx = [xs[p] for p, _ in curve.floor]
    ax.plot(fx, fy, linestyle=style, marker="_", markersize=14, color=c, linewidth=1.3, alpha=0.95, label=label)
    edge = max(fy) * 50 if curve.floor_is_ceiling else 0.0
    ax.fill_between(fx, fy, [edge] * len(fy), color=c, alpha=0.07)


TITLE_WIDTH = 90  # characters per title line at the figure's width and font size


def wrap_title(title: str, width: int = TITLE_WIDTH) -> str:
    return "\n".join(line for part in title.splitlines() for line in textwrap.wrap(part, width) or [""])


def _fit_y(ax: Any, chart: Chart) -> None:
    """The y range of the curves and lines, so a shaded zone never stretches the axis."""
    values = [v for c in chart.curves for _, v in c.measured + c.reference + c.floor] + \
             [v for c in chart.curves for _, v in c.lines]
    values = [v for v in values if v > 0]
    if not values:
        return
    low, high = min(values), max(values)
    if chart.log_y:
        ax.set_ylim(low / 2, high * 2)
    else:
        ax.set_ylim(0, high * 1.12)


def draw(chart: Chart, path: Path) -> Path:
    fig = figure(chart)
    fig.savefig(path)
    plt.close(fig)
    return path


def figure(chart: Chart) -> Any:
    """The chart as a matplotlib figure, laid out (``draw`` saves it)."""
    lines = wrap_title(chart.title).count("\n") + 1
    fig, ax = plt.subplots(figsize=(8.0, 4.4 + 0.2 * lines), dpi=110)
    xs = _x(chart.points)
    numeric = all(p.isdigit() for p in chart.points)
    for index, curve in enumerate(chart.curves):
        c = colour(index)
        if curve.measured:
            ax.plot([xs[p] for p, _ in curve.measured], [v for _, v in curve.measured], "-o", color=c,
                    linewidth=2.2, markersize=5, label=f"{curve.figure} measured")
        if curve.reference:
            ax.plot([xs[p] for p, _ in curve.reference], [v for _, v in curve.reference], "--s", color=c,
                    linewidth=1.4, markersize=4, alpha=0.8, label=f"{curve.figure} reference")
        for style, (label, value) in zip((":", "-.", (0, (1, 3))), curve.lines):
            ax.axhline(value, color=c, linestyle=style, linewidth=1.4, alpha=0.9,
                       label=f"{curve.figure} {label} {value:.4g}")
        if curve.floor:
            _draw_floor(ax, curve, xs, c)
    if numeric:
        ax.set_xscale("log", base=2)
        ax.set_xticks([xs[p] for p in chart.points])
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v)}"))
        ax.set_xlabel("threads")
    else:
        ax.set_xticks([xs[p] for p in chart.points])
        ax.set_xticklabels(chart.points)
        ax.set_xlabel("nodes x processes per node")
    if chart.log_y:
        ax.set_yscale("log", base=10)
    _fit_y(ax, chart)
    ax.set_ylabel(chart.unit)
    # Titles are wrapped to the plot's width: a title cut at both ends says nothing.
    ax.set_title(wrap_title(chart.title), fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    if any(c.measured or c.reference or c.lines for c in chart.curves):
        ax.legend(fontsize=7, loc="best", ncol=2 if sum(len(c.lines) for c in chart.curves) > 3 else 1)
    fig.tight_layout()
    return fig
