"""Charts for the HTML report, drawn as SVG by hand (primitives in `svg.py`).

Each chart is a standalone SVG returned as a `data:` URI for an <img> element: an image
cannot run script or reach into the page, so labels made from model names stay inert, and
the report needs no network. No plotting library: the charts are a few dozen lines and
rectangles each, and laying them out by hand takes milliseconds where matplotlib took
seconds of CPU (plus its import) for an 8-model MT-Bench-101 report.

Conventions shared by all charts: series take the palette's colours in order (cycling
after ten); a value that is None, NaN or infinite is not drawn (a bar is absent, a line
breaks, a radar polygon leaves out the vertex); values outside the axis range are drawn at
its edge; every label is shortened to `LABEL_LIMIT` characters (less where space is short).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from turnbench.report import svg
from turnbench.report.svg import LABEL_LIMIT, MUTED

__all__ = ["LABEL_LIMIT", "bars", "deltas", "line_panels", "outcomes", "radar", "turn_panels"]

Series = list[tuple[str, list[float | None]]]  # (label, one value per category)
SCORE_MAX = 10.0
VERDICT_COLORS = {
    "better": "#2e7d32",
    "worse": "#c62828",
    "no_change": "#757575",
    "insufficient_data": "#b08800",
}
OUTCOME_COLORS = (("win", "#2e7d32"), ("tie", "#9e9e9e"), ("loss", "#c62828"))
TITLE_TOP = 40  # below the title line
TICK_SIZE, LABEL_SIZE = 10, 11
SLANT = 30  # degrees by which long category labels are turned


# -- scales and axes -----------------------------------------------------------------------
def _tick_step(reach: float, count: int = 3) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) giving about `count` ticks over
    `reach`: three on each side of zero for the deltas, five over 0-10 for scores."""
    if not (reach > 0 and math.isfinite(reach)):
        return 1.0
    raw = reach / count
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


def _ticks(
    low: float, high: float, count: int = 5, step: float | None = None
) -> list[tuple[float, str]]:
    """Round ticks from `low` to `high` with their labels (multiples of the step, computed
    as index * step so they do not drift the way repeated addition does)."""
    step = step or _tick_step(high - low, count)
    index = math.ceil(low / step - 1e-9)
    ticks = []
    while index * step <= high + step * 1e-9:
        ticks.append((index * step, _tick_label(index * step, step)))
        index += 1
    return ticks


@dataclass(frozen=True)
class _Scale:
    """Data values in [low, high] to pixels from `start` to `end` (for a y axis `end` is
    above `start`, since SVG's y grows downwards). Values outside are clamped to the edge."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = (self.high - self.low) or 1.0
        value = min(max(value, self.low), self.high)
        return self.start + (value - self.low) / span * (self.end - self.start)


def _y_grid(scale: _Scale, left: float, right: float, ticks: list[tuple[float, str]]) -> str:
    """Horizontal grid lines across the plot, their labels left of it."""
    parts = []
    for value, shown in ticks:
        y = scale(value)
        parts.append(svg.line(left, y, right, y))
        parts.append(svg.text(left - 5, y + 3.5, shown, size=TICK_SIZE, anchor="end", fill=MUTED))
    return svg.group("grid", parts)


def _x_grid(scale: _Scale, top: float, bottom: float, ticks: list[tuple[float, str]]) -> str:
    """Vertical grid lines across the plot, their labels below it."""
    parts = []
    for value, shown in ticks:
        x = scale(value)
        parts.append(svg.line(x, top, x, bottom))
        parts.append(svg.text(x, bottom + 14, shown, size=TICK_SIZE, anchor="middle", fill=MUTED))
    return svg.group("grid", parts)


def _title(raw: str, width: float, y: float = 24, size: float = 14) -> str:
    """A chart's title, centred, shortened to what fits its width (90 characters at most)."""
    limit = max(12, min(90, int((width - 16) / (0.62 * size))))
    return svg.text(width / 2, y, raw, size=size, anchor="middle", limit=limit)


def _slanted_height(names: Sequence[str], size: float = TICK_SIZE) -> float:
    """How far below the axis slanted category labels reach."""
    longest = max((svg.width_of(n, size) for n in names), default=0)
    return longest * math.sin(math.radians(SLANT)) + size + 20


def _category_labels(centres: Sequence[float], y: float, names: Sequence[str], slant: bool) -> str:
    """Category names under an axis: centred, or turned so long names do not collide
    (each then ends under its category)."""
    parts = []
    for x, name in zip(centres, names, strict=True):
        if slant:
            parts.append(svg.text(x + 3, y + 14, name, size=TICK_SIZE, anchor="end", rotate=-SLANT))
        else:
            parts.append(svg.text(x, y + 14, name, size=TICK_SIZE, anchor="middle"))
    return svg.group("categories", parts)


def _category_labels_left(middles: Sequence[float], left: float, names: Sequence[str]) -> str:
    """Category names left of a plot, right-aligned, one per row."""
    return svg.group(
        "categories",
        [
            svg.text(left - 8, y + 3.5, name, size=TICK_SIZE, anchor="end")
            for y, name in zip(middles, names, strict=True)
        ],
    )


def _finite(value: float | None) -> float | None:
    """The value if it can be drawn, else None (missing, NaN, infinite)."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _names(groups: Sequence[Series]) -> list[str]:
    """Series names in order of first appearance: one legend entry and one colour each, so
    a model keeps its colour in every panel."""
    return list(dict.fromkeys(name for series in groups for name, _ in series))


# -- the charts ------------------------------------------------------------------------------
def radar(categories: list[str], series: Series, title: str, *, maximum: float = SCORE_MAX) -> str:
    """Scores from 0 to `maximum` (10, or 1 for shares) around a circle, one closed polygon
    per series (first category at the top, then clockwise; five rings, the outer one at
    `maximum`). A missing value leaves no vertex: the polygon's fill joins its neighbours,
    but its outline breaks there."""
    radius, gap, count = 170.0, 10.0, len(categories)
    angles = [2 * math.pi * i / count for i in range(count)]
    names = [svg.shown(c) for c in categories]
    # place the labels around the centre (0, 0), then size the canvas to hold them all
    labels, left, right, top, bottom = [], -radius, radius, -radius, radius
    for angle, name in zip(angles, names, strict=True):
        sin, cos = math.sin(angle), math.cos(angle)
        x, y = (radius + gap) * sin, -(radius + gap) * cos
        y += 4 - 4 * cos + 3 * max(0.0, -cos)  # above the top, below the bottom, centred
        anchor = "start" if sin > 0.15 else "end" if sin < -0.15 else "middle"
        extent = svg.width_of(name, LABEL_SIZE)
        shift = {"start": 0.0, "end": -extent, "middle": -extent / 2}[anchor]
        left, right = min(left, x + shift), max(right, x + shift + extent)
        top, bottom = min(top, y - LABEL_SIZE), max(bottom, y + 3)
        labels.append((x, y, name, anchor))
    centre_x, centre_y = 16 - left, TITLE_TOP + 8 - top
    entries = [(name, svg.color(i)) for i, (name, _) in enumerate(series)]
    legend_x = centre_x + right + 28
    legend_width, legend_height = svg.legend_size([n for n, _ in entries], 1)
    width = legend_x + legend_width + 12
    height = max(centre_y + bottom + 16, TITLE_TOP + legend_height + 16)

    def at(index: int, value: float) -> tuple[float, float]:
        """The point of `value` on the index-th spoke."""
        reach = radius * min(max(value, 0.0), maximum) / maximum
        angle = angles[index]
        return centre_x + reach * math.sin(angle), centre_y - reach * math.cos(angle)

    grid = [svg.line(centre_x, centre_y, *at(i, maximum)) for i in range(count)]
    step = maximum / 5
    for number in range(1, 6):
        ring, outer = step * number, number == 5
        grid.append(
            svg.circle(
                centre_x,
                centre_y,
                radius * ring / maximum,
                "none",
                f'stroke="{svg.FRAME if outer else svg.GRID}" stroke-width="1"',
            )
        )
        # on the ring halfway between the first two spokes, clear of the first label
        reach, middle = radius * ring / maximum, math.pi / max(2, count)
        x, y = centre_x + reach * math.sin(middle), centre_y - reach * math.cos(middle)
        grid.append(svg.text(x + 2, y - 2, _tick_label(ring, step), size=9, fill=MUTED))
    parts = [_title(title, width), svg.group("grid", grid)]
    parts.append(
        svg.group(
            "categories",
            [
                svg.text(centre_x + x, centre_y + y, name, size=LABEL_SIZE, anchor=anchor)
                for x, y, name, anchor in labels
            ],
        )
    )
    for (_, values), (_, colour) in zip(series, entries, strict=True):
        present = [(i, v) for i, v in enumerate(map(_finite, values[:count])) if v is not None]
        vertices = [at(i, v) for i, v in present]
        complete = len(present) == count
        body = []
        if vertices:
            body.append(svg.polygon(vertices, colour, outline=complete))
        if vertices and not complete:
            body.append(svg.path(_cyclic_runs(present, count, at), colour, 2))
        body.extend(svg.circle(x, y, 2.5, colour) for x, y in vertices)
        parts.append(svg.group("series", body))
    parts.append(svg.legend(entries, legend_x, TITLE_TOP, marker="line"))
    return svg.document(width, height, parts)


def _cyclic_runs(present, count, at) -> list[list[tuple[float, float]]]:
    """The outline of an incomplete radar polygon: runs of neighbouring categories that
    both have a value, joined across the last-to-first edge when both ends are present."""
    runs: list[list[tuple[float, float]]] = []
    previous = None
    for index, value in present:
        if previous is None or index != previous + 1:
            runs.append([])
        runs[-1].append(at(index, value))
        previous = index
    if len(runs) > 1 and present[0][0] == 0 and present[-1][0] == count - 1:
        runs[0] = runs.pop() + runs[0]
    return runs


def bars(
    categories: list[str],
    series: Series,
    title: str,
    *,
    ylabel: str = "score",
    ylim: tuple[float, float] = (0.0, SCORE_MAX),
    horizontal: bool = False,
) -> str:
    """Grouped bars: one group per category, one bar per series (vertical, or horizontal
    with the categories top to bottom). Bars start at 0 (or the nearer end of `ylim`)."""
    count, size = max(1, len(series)), len(categories)
    names = [svg.shown(c) for c in categories]
    entries = [(name, svg.color(i)) for i, (name, _) in enumerate(series)]
    with_legend = len(series) > 1 or horizontal
    legend_width, legend_height = (
        svg.legend_size([n for n, _ in entries], 1) if with_legend else (0.0, 0.0)
    )
    ticks, (low, high) = _ticks(*ylim), ylim
    top = TITLE_TOP
    if horizontal:
        band = 45 * max(1.0, count * 0.6)  # the height per category the figure had
        left = max((svg.width_of(n, TICK_SIZE) for n in names), default=0) + 18
        plot_width, plot_height = 460.0, band * size
        tall = plot_height > 600  # then the ticks are written above the plot too
        top += 16 if tall else 0
        value = _Scale(low, high, left, left + plot_width)
        bottom = top + plot_height
        axes = [
            _x_grid(value, top, bottom, ticks),
            svg.text(left + plot_width / 2, bottom + 34, ylabel, anchor="middle"),
            _category_labels_left([top + band * (i + 0.5) for i in range(size)], left, names),
        ]
        if tall:
            axes.extend(
                svg.text(value(v), top - 5, shown, size=TICK_SIZE, anchor="middle", fill=MUTED)
                for v, shown in ticks
            )
        bottom += 44
    else:
        plot_width, plot_height = max(400.0, 55 * max(1.0, count * 0.5) * size), 260.0
        band = plot_width / max(1, size)
        slant = size > 6 or any(svg.width_of(n, TICK_SIZE) > band - 6 for n in names)
        # a slanted first label reaches left of the plot: make room for it
        overhang = max(
            [
                svg.width_of(n, TICK_SIZE) * math.cos(math.radians(SLANT)) - band * (i + 0.5)
                for i, n in enumerate(names)
            ]
            if slant
            else [0.0]
        )
        tick_width = max(svg.width_of(s, TICK_SIZE) for _, s in ticks)
        left = max(30 + tick_width, overhang + 12)
        value = _Scale(low, high, top + plot_height, top)
        centres = [left + band * (i + 0.5) for i in range(size)]
        axes = [
            _y_grid(value, left, left + plot_width, ticks),
            _category_labels(centres, top + plot_height, names, slant),
            svg.text(14, top + plot_height / 2, ylabel, anchor="middle", rotate=-90),
        ]
        bottom = top + plot_height + (_slanted_height(names) if slant else 24)
    base = value(min(max(0.0, low), high))
    thickness = band * 0.8 / count
    drawn = []
    for index, ((_, values), (_, colour)) in enumerate(zip(series, entries, strict=True)):
        rects = []
        for position, raw in enumerate(values[:size]):
            number = _finite(raw)
            if number is None:
                continue
            offset = band * (position + 0.1) + thickness * index
            start, end = sorted((base, value(number)))
            if horizontal:
                rects.append(svg.rect(start, top + offset, end - start, thickness, colour))
            else:
                rects.append(svg.rect(left + offset, start, thickness, end - start, colour))
        drawn.append(svg.group("series", rects))
    legend_x = left + plot_width + 24
    width = legend_x + legend_width + 12 if with_legend else left + plot_width + 20
    height = max(bottom + 8, top + legend_height + 12)
    parts = [_title(title, width), *axes, svg.group("bars", drawn)]
    parts.append(svg.frame(left, top, plot_width, plot_height))
    if with_legend:
        parts.append(svg.legend(entries, legend_x, top))
    return svg.document(width, height, parts)


def strips(
    categories: list[str],
    series: Sequence[tuple[str, Sequence[Sequence[float | None]]]],
    title: str,
    *,
    maximum: float = 1.0,
    xlabel: str = "score",
) -> str:
    """A strip plot: one row per category (a document, a scenario), one dot per score of
    it (its repeated conversations), one colour per series (a conversation type), so the
    spread between a sample's best and worst conversations shows."""
    names = [svg.shown(c) for c in categories]
    entries = [(name, svg.color(i)) for i, (name, _) in enumerate(series)]
    legend_width, legend_height = svg.legend_size([n for n, _ in entries], 1)
    band = 18.0 * max(1, len(series))
    left = max((svg.width_of(n, TICK_SIZE) for n in names), default=0) + 18
    top = TITLE_TOP
    plot_width, plot_height = 460.0, band * max(1, len(categories))
    ticks = _ticks(0.0, maximum)
    value = _Scale(0.0, maximum, left, left + plot_width)
    bottom = top + plot_height
    axes = [
        _x_grid(value, top, bottom, ticks),
        svg.text(left + plot_width / 2, bottom + 34, xlabel, anchor="middle"),
        _category_labels_left([top + band * (i + 0.5) for i in range(len(names))], left, names),
    ]
    drawn = []
    for index, ((_, rows), (_, colour)) in enumerate(zip(series, entries, strict=True)):
        dots = []
        for position, scores in enumerate(rows[: len(categories)]):
            y = top + band * position + 18.0 * index + 9.0
            for number in (_finite(score) for score in scores):
                if number is not None:
                    dots.append(svg.circle(value(min(max(number, 0.0), maximum)), y, 3.5, colour))
        drawn.append(svg.group("series", dots))
    legend_x = left + plot_width + 24
    width = legend_x + legend_width + 12
    height = max(bottom + 52, top + legend_height + 12)
    parts = [_title(title, width), *axes, svg.group("strips", drawn)]
    parts.append(svg.frame(left, top, plot_width, plot_height))
    parts.append(svg.legend(entries, legend_x, top))
    return svg.document(width, height, parts)


def turn_panels(
    categories: list[str],
    panels: list[tuple[str, Series]],
    title: str,
    *,
    maximum: float = SCORE_MAX,
) -> str:
    """One panel per model (two columns at most): per category, a bar per turn (how scores
    change in turn 2), with one legend of the turns above the panels. `maximum`: the score
    axis' top (10 for ratings, 1 for shares met)."""
    columns = max(1, min(2, len(panels)))
    rows = math.ceil(len(panels) / columns)
    turns = _names([s for _, s in panels])
    colours = {name: svg.color(i) for i, name in enumerate(turns)}
    count, size = max(1, max((len(s) for _, s in panels), default=1)), max(1, len(categories))
    names = [svg.shown(c) for c in categories]
    plot_width = max(480.0, size * (16.0 * count + 10))
    plot_height, margin, header = 210.0, 44.0, 26.0
    panel_width = margin + plot_width + 20
    panel_height = header + plot_height + _slanted_height(names) + 8
    width = 12 + columns * panel_width
    legend_columns = max(1, min(len(turns), int((width - 24) // svg.legend_cell(turns))))
    legend_width, legend_height = svg.legend_size(turns, legend_columns)
    top = TITLE_TOP + legend_height + 6
    height = top + rows * panel_height + 8
    parts = [_title(title, width)]
    parts.append(
        svg.legend(
            [(t, colours[t]) for t in turns],
            (width - legend_width) / 2,
            32,
            columns=legend_columns,
        )
    )
    ticks, band = _ticks(0, maximum), plot_width / size
    limit = min(LABEL_LIMIT, int(panel_width / (0.62 * 12)))
    for index, (name, series) in enumerate(panels):
        x0 = 12 + (index % columns) * panel_width + margin
        y0 = top + (index // columns) * panel_height + header
        value = _Scale(0, maximum, y0 + plot_height, y0)
        body = [
            svg.text(x0 + plot_width / 2, y0 - 9, name, size=12, anchor="middle", limit=limit),
            _y_grid(value, x0, x0 + plot_width, ticks),
        ]
        thickness = band * 0.8 / max(1, len(series))
        for offset, (turn, values) in enumerate(series):
            rects = []
            for position, raw in enumerate(values[:size]):
                number = _finite(raw)
                if number is None:
                    continue
                top_y, bottom_y = sorted((value(0), value(number)))
                x = x0 + band * (position + 0.1) + thickness * offset
                rects.append(svg.rect(x, top_y, thickness, bottom_y - top_y, colours[turn]))
            body.append(svg.group("series", rects))
        centres = [x0 + band * (i + 0.5) for i in range(len(names))]
        body.append(_category_labels(centres, y0 + plot_height, names, True))
        body.append(svg.frame(x0, y0, plot_width, plot_height))
        parts.append(svg.group("panel", body))
    return svg.document(width, height, parts)


def line_panels(
    panels: list[tuple[str, list[str], Series]],
    title: str,
    *,
    xlabel: str = "turn",
    maximum: float = SCORE_MAX,
) -> str:
    """Small multiples: one panel per task (five columns at most), x = turn (evenly spaced,
    as labels), one line with markers per model, one legend for all panels below them.
    `maximum`: the score axis' top (10 for ratings, 1 for shares met)."""
    columns = min(5, max(1, len(panels)))
    rows = math.ceil(len(panels) / columns)
    panel_width, panel_height = 300.0, 232.0
    margin, header, footer = 46.0, 24.0, 40.0
    plot_width = panel_width - margin - 12
    plot_height = panel_height - header - footer
    width = 24 + columns * panel_width
    models = _names([s for _, _, s in panels])
    colours = {name: svg.color(i) for i, name in enumerate(models)}
    legend_columns = max(1, min(4, len(models), int((width - 24) // svg.legend_cell(models))))
    legend_width, legend_height = svg.legend_size(models, legend_columns)
    height = TITLE_TOP + rows * panel_height + 10 + legend_height + 10
    parts = [_title(title, width)]
    ticks, limit = _ticks(0, maximum), min(LABEL_LIMIT, int((panel_width - 16) / (0.62 * 11)))
    for index, (name, xs, series) in enumerate(panels):
        x0 = 12 + (index % columns) * panel_width + margin
        y0 = TITLE_TOP + (index // columns) * panel_height + header
        value = _Scale(0, maximum + maximum / 20, y0 + plot_height, y0)
        pad = plot_width * 0.06
        spots = [
            x0 + plot_width / 2
            if len(xs) == 1
            else x0 + pad + (plot_width - 2 * pad) * j / max(1, len(xs) - 1)
            for j in range(len(xs))
        ]
        every = max(1, math.ceil(len(xs) / (plot_width / 30)))
        body = [
            svg.text(
                x0 + plot_width / 2, y0 - 8, name, size=LABEL_SIZE, anchor="middle", limit=limit
            ),
            _y_grid(value, x0, x0 + plot_width, ticks),
        ]
        for j, (x, label) in enumerate(zip(spots, xs, strict=True)):
            body.append(svg.line(x, y0, x, y0 + plot_height))
            if j % every == 0:
                body.append(
                    svg.text(x, y0 + plot_height + 13, label, size=9, anchor="middle", limit=8)
                )
        if index % columns == 0:
            body.append(
                svg.text(
                    x0 - 32, y0 + plot_height / 2, "score", size=10, anchor="middle", rotate=-90
                )
            )
        if index >= len(panels) - columns:
            body.append(
                svg.text(
                    x0 + plot_width / 2, y0 + plot_height + 30, xlabel, size=10, anchor="middle"
                )
            )
        for model, values in series:
            runs: list[list[tuple[float, float]]] = [[]]
            marks = []
            for x, raw in zip(spots, values, strict=False):
                number = _finite(raw)
                if number is None:
                    if runs[-1]:
                        runs.append([])
                    continue
                runs[-1].append((x, value(number)))
                marks.append(svg.circle(x, value(number), 3, colours[model]))
            lines = [svg.path(runs, colours[model])] if marks else []
            body.append(svg.group("series", lines + marks))
        body.append(svg.frame(x0, y0, plot_width, plot_height))
        parts.append(svg.group("panel", body))
    parts.append(
        svg.legend(
            [(m, colours[m]) for m in models],
            (width - legend_width) / 2,
            TITLE_TOP + rows * panel_height + 10,
            columns=legend_columns,
            marker="line",
        )
    )
    return svg.document(width, height, parts)


def deltas(
    rows: list[tuple[str, float, float | None, float | None, str]],
    title: str,
) -> str:
    """Paired differences with their intervals: (name, delta, low, high, verdict) per row.

    A report comparing several models has one such chart per comparison, and a dot with a
    line per row needs no layout engine. Every label is XML-escaped (by `svg.text`)."""
    names = [svg.shown(name) for name, *_ in rows]
    values = [v for _, delta, low, high, _ in rows for v in (delta, low, high) if v is not None]
    reach = max([abs(v) for v in values if math.isfinite(v)] or [1.0]) or 1.0
    step = _tick_step(reach)
    limit = step * math.ceil(reach * 1.05 / step)
    left = min(280, 16 + 7 * max((len(n) for n in names), default=4))
    width, right, top, row_height = 700, 24, 40, 26
    plot = width - left - right
    height = top + row_height * len(rows) + 50
    scale = _Scale(-limit, limit, left, left + plot)
    bottom = top + row_height * len(rows)
    parts = [svg.text(width / 2, 22, title, size=14, anchor="middle", limit=90)]
    for tick, shown in _ticks(-limit, limit, step=step):
        parts.append(svg.line(scale(tick), top - 6, scale(tick), bottom, "#dddddd"))
        parts.append(svg.text(scale(tick), bottom + 16, shown, anchor="middle"))
    parts.append(svg.line(scale(0), top - 6, scale(0), bottom, "#333333"))
    for index, (name, (_, delta, low, high, verdict)) in enumerate(zip(names, rows, strict=True)):
        middle = top + row_height * index + row_height / 2
        color = VERDICT_COLORS.get(verdict, "#757575")
        parts.append(svg.text(left - 8, middle + 4, name, size=12, anchor="end"))
        if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
            parts.append(svg.line(scale(low), middle, scale(high), middle, color, 2.5))
        if math.isfinite(delta):
            parts.append(svg.circle(scale(delta), middle, 4.5, color))
    parts.append(
        svg.text(
            left + plot / 2,
            height - 10,
            "new - base (95% interval of the paired sign-flip test)",
            size=12,
            anchor="middle",
            limit=90,
        )
    )
    return svg.document(width, height, parts)


def outcomes(models: list[str], counts: list[tuple[int, int, int]], title: str) -> str:
    """Pairwise outcomes per model: stacked win / tie / loss shares of its compared pairs,
    each share written on its segment when there is room."""
    names = [svg.shown(m) for m in models]
    left = max((svg.width_of(n, LABEL_SIZE) for n in names), default=0) + 20
    plot_width, band = 480.0, 45.0
    plot_height = band * len(models)
    width = left + plot_width + 24
    legend_names = [name for name, _ in OUTCOME_COLORS]
    legend_width, legend_height = svg.legend_size(legend_names, 3)
    bottom = TITLE_TOP + plot_height
    height = bottom + 52 + legend_height + 8
    share = _Scale(0, 1, left, left + plot_width)
    parts = [_title(title, width), _x_grid(share, TITLE_TOP, bottom, _ticks(0, 1))]
    rows = []
    for index, (name, row) in enumerate(zip(names, counts, strict=True)):
        total = max(1, sum(row))
        middle = TITLE_TOP + band * (index + 0.5)
        start = 0.0
        body = [svg.text(left - 8, middle + 4, name, size=LABEL_SIZE, anchor="end")]
        for (_, colour), number in zip(OUTCOME_COLORS, row, strict=True):
            if number <= 0:
                continue
            end = start + number / total
            x, extent = share(start), share(end) - share(start)
            body.append(svg.rect(x, middle - band * 0.4, extent, band * 0.8, colour))
            if extent >= 34:
                body.append(
                    svg.text(
                        x + extent / 2,
                        middle + 4,
                        f"{100 * number / total:.0f}%",
                        size=10,
                        anchor="middle",
                        fill="#ffffff",
                    )
                )
            start = end
        rows.append(svg.group("row", body))
    parts.append(svg.group("bars", rows))
    parts.append(svg.frame(left, TITLE_TOP, plot_width, plot_height))
    parts.append(
        svg.text(left + plot_width / 2, bottom + 34, "share of compared pairs", anchor="middle")
    )
    parts.append(
        svg.legend(
            [(n, c) for n, c in OUTCOME_COLORS],
            left + (plot_width - legend_width) / 2,
            bottom + 44,
            columns=3,
        )
    )
    return svg.document(width, height, parts)
