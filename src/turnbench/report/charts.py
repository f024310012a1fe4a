"""Charts for the HTML report, drawn with matplotlib's non-interactive canvas.

matplotlib is imported here only (never at CLI start-up). Each chart is a standalone SVG
returned as a `data:` URI for an <img> element: an image cannot run script or reach into
the page, so labels made from model names stay inert, and the report needs no network.
No pyplot (global state): every chart is a `Figure` of its own.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from typing import Any

from turnbench.safetext import plain

Series = list[tuple[str, list[float | None]]]  # (label, one value per category)
SCORE_MAX = 10.0
LABEL_LIMIT = 48
VERDICT_COLORS = {
    "better": "#2e7d32",
    "worse": "#c62828",
    "no_change": "#757575",
    "insufficient_data": "#b08800",
}


def label(text: str) -> str:
    """A name as matplotlib draws it: control characters visible, on one line, shortened,
    with '$' not starting math mode."""
    text = plain(text, keep_newlines=False)
    short = text if len(text) <= LABEL_LIMIT else text[: LABEL_LIMIT - 1] + "…"
    return short.replace("$", r"\$")


def _figure(width: float, height: float, **kwargs: Any):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, **kwargs)
    FigureCanvasAgg(figure)
    return figure


def _data_uri(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return "data:image/svg+xml;base64," + encoded


def _colors(count: int) -> list:
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    return [palette(i % 10) for i in range(count)]


def _nan(values: Sequence[float | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


def radar(categories: list[str], series: Series, title: str) -> str:
    """Scores 0-10 around a circle, one closed line per series."""
    import numpy as np

    figure = _figure(6.4, 5.6, layout="constrained")
    axes = figure.add_subplot(projection="polar")
    axes.set_theta_offset(np.pi / 2)  # first category at the top, then clockwise
    axes.set_theta_direction(-1)
    angles = np.linspace(0, 2 * np.pi, len(categories), endpoint=False).tolist()
    for (name, values), color in zip(series, _colors(len(series)), strict=True):
        points = _nan(values)
        axes.plot(
            [*angles, angles[0]], [*points, points[0]], color=color, linewidth=2, label=label(name)
        )
        axes.fill([*angles, angles[0]], [*points, points[0]], color=color, alpha=0.08)
    axes.set_xticks(angles)
    axes.set_xticklabels([label(c) for c in categories], fontsize=9)
    axes.set_ylim(0, SCORE_MAX)
    axes.set_yticks([2, 4, 6, 8, 10])
    axes.tick_params(axis="y", labelsize=7)
    axes.set_title(label(title), fontsize=11, pad=18)
    axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    return _data_uri(figure)


def bars(
    categories: list[str],
    series: Series,
    title: str,
    *,
    ylabel: str = "score",
    ylim: tuple[float, float] = (0.0, SCORE_MAX),
    horizontal: bool = False,
) -> str:
    """Grouped bars: one group per category, one bar per series."""
    import numpy as np

    count = max(1, len(series))
    size = len(categories)
    if horizontal:
        figure = _figure(7.5, 0.45 * size * max(1.0, count * 0.6) + 1.2, layout="constrained")
    else:
        figure = _figure(
            max(6.0, 0.55 * size * max(1.0, count * 0.5) + 2), 3.8, layout="constrained"
        )
    axes = figure.add_subplot()
    positions = np.arange(size)
    width = 0.8 / count
    for index, ((name, values), color) in enumerate(zip(series, _colors(len(series)), strict=True)):
        offsets = positions - 0.4 + width * (index + 0.5)
        draw = axes.barh if horizontal else axes.bar
        draw(offsets, _nan(values), width, color=color, label=label(name))
    if horizontal:
        axes.set_yticks(positions, [label(c) for c in categories], fontsize=9)
        axes.invert_yaxis()
        axes.set_xlim(*ylim)
        axes.set_xlabel(ylabel)
        axes.grid(axis="x", alpha=0.3)
    else:
        axes.set_xticks(
            positions,
            [label(c) for c in categories],
            fontsize=9,
            rotation=30 if size > 6 else 0,
            ha="right" if size > 6 else "center",
        )
        axes.set_ylim(*ylim)
        axes.set_ylabel(ylabel)
        axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)
    axes.set_title(label(title), fontsize=11)
    if len(series) > 1 or horizontal:
        axes.legend(fontsize=8, frameon=False, loc="best")
    return _data_uri(figure)


def turn_panels(
    categories: list[str],
    panels: list[tuple[str, Series]],
    title: str,
) -> str:
    """One panel per model: per category, a bar per turn (how scores change in turn 2)."""
    import numpy as np

    columns = min(2, len(panels))
    rows = math.ceil(len(panels) / columns)
    figure = _figure(6.2 * columns, 3.4 * rows, layout="constrained")
    positions = np.arange(len(categories))
    for index, (name, series) in enumerate(panels):
        axes = figure.add_subplot(rows, columns, index + 1)
        width = 0.8 / max(1, len(series))
        for offset, ((turn, values), color) in enumerate(
            zip(series, _colors(len(series)), strict=True)
        ):
            axes.bar(
                positions - 0.4 + width * (offset + 0.5),
                _nan(values),
                width,
                color=color,
                label=label(turn),
            )
        axes.set_xticks(
            positions, [label(c) for c in categories], fontsize=8, rotation=30, ha="right"
        )
        axes.set_ylim(0, SCORE_MAX)
        axes.grid(axis="y", alpha=0.3)
        axes.set_axisbelow(True)
        axes.set_title(label(name), fontsize=10)
        axes.legend(fontsize=8, frameon=False, loc="upper right", ncols=len(series))
    figure.suptitle(label(title), fontsize=11)
    return _data_uri(figure)


def line_panels(
    panels: list[tuple[str, list[str], Series]],
    title: str,
    *,
    xlabel: str = "turn",
) -> str:
    """Small multiples: one panel per task, x = turn, one line per model."""
    columns = min(5, max(1, len(panels)))
    rows = math.ceil(len(panels) / columns)
    figure = _figure(3.0 * columns, 2.4 * rows + 0.6, layout="constrained")
    names: list[str] = []
    handles = []
    for index, (panel_title, xs, series) in enumerate(panels):
        axes = figure.add_subplot(rows, columns, index + 1)
        for (name, values), color in zip(series, _colors(len(series)), strict=True):
            (line,) = axes.plot(
                xs, _nan(values), marker="o", markersize=3, color=color, linewidth=1.5
            )
            if name not in names:
                names.append(name)
                handles.append(line)
        axes.set_ylim(0, SCORE_MAX + 0.5)
        axes.set_title(label(panel_title), fontsize=9)
        axes.tick_params(labelsize=7)
        axes.grid(alpha=0.3)
        if index % columns == 0:
            axes.set_ylabel("score", fontsize=8)
        if index >= len(panels) - columns:
            axes.set_xlabel(xlabel, fontsize=8)
    figure.legend(
        handles,
        [label(n) for n in names],
        loc="outside lower center",
        ncols=min(4, max(1, len(names))),
        fontsize=8,
        frameon=False,
    )
    figure.suptitle(label(title), fontsize=11)
    return _data_uri(figure)


def deltas(
    rows: list[tuple[str, float, float | None, float | None, str]],
    title: str,
) -> str:
    """Paired differences with their intervals: (name, delta, low, high, verdict) per row.

    Drawn as SVG by hand rather than with matplotlib: a report comparing several models has
    one such chart per comparison, and a dot with a line per row needs no layout engine
    (matplotlib took a quarter of a second per chart). Every label is XML-escaped."""
    from html import escape

    names = [_short(name) for name, *_ in rows]
    values = [v for _, delta, low, high, _ in rows for v in (delta, low, high) if v is not None]
    reach = max([abs(v) for v in values if math.isfinite(v)] or [1.0]) or 1.0
    step = _tick_step(reach)
    limit = step * math.ceil(reach * 1.05 / step)
    left = min(280, 16 + 7 * max((len(n) for n in names), default=4))
    width, right, top, row_height = 700, 24, 40, 26
    plot = width - left - right
    height = top + row_height * len(rows) + 50

    def x(value: float) -> float:
        return left + (value + limit) / (2 * limit) * plot

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{width / 2:.1f}" y="22" font-size="14" text-anchor="middle">'
        f"{escape(_short(plain(title, keep_newlines=False), 90))}</text>",
    ]
    bottom = top + row_height * len(rows)
    tick = -limit
    while tick <= limit + step / 2:
        position = x(tick)
        parts.append(
            f'<line x1="{position:.1f}" y1="{top - 6}" x2="{position:.1f}" y2="{bottom}" '
            'stroke="#dddddd" stroke-width="1"/>'
            f'<text x="{position:.1f}" y="{bottom + 16}" font-size="11" text-anchor="middle">'
            f"{_tick_label(tick, step)}</text>"
        )
        tick += step
    parts.append(
        f'<line x1="{x(0):.1f}" y1="{top - 6}" x2="{x(0):.1f}" y2="{bottom}" '
        'stroke="#333333" stroke-width="1"/>'
    )
    for index, (name, (_, delta, low, high, verdict)) in enumerate(zip(names, rows, strict=True)):
        middle = top + row_height * index + row_height / 2
        color = VERDICT_COLORS.get(verdict, "#757575")
        parts.append(
            f'<text x="{left - 8}" y="{middle + 4:.1f}" font-size="12" text-anchor="end">'
            f"{escape(_short(plain(name, keep_newlines=False)))}</text>"
        )
        if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
            parts.append(
                f'<line x1="{x(low):.1f}" y1="{middle:.1f}" x2="{x(high):.1f}" '
                f'y2="{middle:.1f}" stroke="{color}" stroke-width="2.5"/>'
            )
        if math.isfinite(delta):
            parts.append(f'<circle cx="{x(delta):.1f}" cy="{middle:.1f}" r="4.5" fill="{color}"/>')
    parts.append(
        f'<text x="{left + plot / 2:.1f}" y="{height - 10}" font-size="12" '
        'text-anchor="middle">new - base (95% interval of the paired sign-flip test)</text></svg>'
    )
    encoded = base64.b64encode("".join(parts).encode("utf-8")).decode("ascii")
    return "data:image/svg+xml;base64," + encoded


def _short(text: str, limit: int = LABEL_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tick_step(reach: float) -> float:
    """A round step giving about three ticks on each side of zero."""
    raw = reach / 3
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def _tick_label(value: float, step: float) -> str:
    digits = max(
        0,
        -math.floor(math.log10(step))
        + (1 if step / 10 ** math.floor(math.log10(step)) == 2.5 else 0),
    )
    shown = f"{value:.{digits}f}"
    return "0" if float(shown) == 0 else shown


def outcomes(models: list[str], counts: list[tuple[int, int, int]], title: str) -> str:
    """Pairwise outcomes per model: stacked win / tie / loss shares."""
    import numpy as np

    figure = _figure(7.0, 0.45 * len(models) + 1.4, layout="constrained")
    axes = figure.add_subplot()
    positions = np.arange(len(models))
    totals = np.array([max(1, sum(c)) for c in counts], dtype=float)
    left = np.zeros(len(models))
    for index, (name, color) in enumerate(
        (("win", "#2e7d32"), ("tie", "#9e9e9e"), ("loss", "#c62828"))
    ):
        share = np.array([c[index] for c in counts], dtype=float) / totals
        axes.barh(positions, share, left=left, color=color, label=name)
        left += share
    axes.set_yticks(positions, [label(m) for m in models], fontsize=9)
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.set_xlabel("share of compared pairs")
    axes.set_title(label(title), fontsize=11)
    figure.legend(fontsize=8, frameon=False, ncols=3, loc="outside lower center")
    return _data_uri(figure)
