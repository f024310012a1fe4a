"""SVG primitives for the report's charts (`charts.py`): text, shapes, legends, the document.

The charts are written as SVG text by hand because a layout engine (matplotlib) cost the
report seconds of CPU for a few dozen rectangles and lines. Building markup by hand is only
safe if no caller can forget escaping, so every string that reaches the output goes through
`text()`, which makes it plain (control characters shown, one line), short and XML-escaped;
the other helpers take numbers and colours from this module only. The result has no script,
no links and no external references: a `data:` URI for an <img>, deterministic byte for byte.
"""

from __future__ import annotations

import base64
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from html import escape

from turnbench.safetext import plain

LABEL_LIMIT = 48
FONT = "DejaVu Sans, Arial, sans-serif"
INK, MUTED, GRID, FRAME = "#222222", "#555555", "#e3e3e3", "#999999"
# matplotlib's "tab10", the palette the charts used before and that readers know
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
# plain() leaves these two noncharacters, which XML 1.0 forbids: one would make the whole
# image fail to parse, so they are replaced like a lone surrogate is
_NOT_XML = re.compile("[\ufffe\uffff]")


def color(index: int) -> str:
    """The palette's colour for the index-th series, cycling after ten."""
    return PALETTE[index % len(PALETTE)]


def num(value: float) -> str:
    """A coordinate as written: two decimals at most, no '-0'."""
    shown = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if shown in ("-0", "") else shown


def shown(raw: object, limit: int = LABEL_LIMIT) -> str:
    """The text a label shows (before escaping): control characters visible, one line,
    shortened to `limit` characters with an ellipsis."""
    text = _NOT_XML.sub("\ufffd", plain(raw, keep_newlines=False))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def width_of(text: str, size: float) -> float:
    """An estimate of the width of `text` at font size `size`, in px, for layout only.

    No font metrics are at hand (and the viewer picks the font), so this errs wide: a
    margin a little too large is harmless, a label cut off by the edge is not."""
    total = 0.0
    for char in text:
        if char in "mwMW@%" or unicodedata.east_asian_width(char) in ("W", "F"):
            total += 1.0
        elif char in "iljtfrI.,:;'|!()[] ":
            total += 0.4
        elif char.isupper() or char in "&#":
            total += 0.78
        else:
            total += 0.64
    return total * size


def text(
    x: float,
    y: float,
    raw: object,
    *,
    size: float = 11,
    anchor: str = "start",
    rotate: float | None = None,
    fill: str = INK,
    bold: bool = False,
    limit: int = LABEL_LIMIT,
) -> str:
    """A <text> element: the only way a string reaches a chart, always made `shown` and
    escaped (a model name such as '<script>' stays characters)."""
    attributes = f'x="{num(x)}" y="{num(y)}" font-size="{num(size)}"'
    if anchor != "start":
        attributes += f' text-anchor="{anchor}"'
    if fill != INK:
        attributes += f' fill="{fill}"'
    if bold:
        attributes += ' font-weight="bold"'
    if rotate is not None:
        attributes += f' transform="rotate({num(rotate)} {num(x)} {num(y)})"'
    return f"<text {attributes}>{escape(shown(raw, limit))}</text>"


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = GRID, width: float = 1) -> str:
    return (
        f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
        f'stroke="{stroke}" stroke-width="{num(width)}"/>'
    )


def rect(x: float, y: float, width: float, height: float, fill: str, extra: str = "") -> str:
    """A filled rectangle; `extra` is fixed attribute text from this package, never data."""
    extra = f" {extra}" if extra else ""
    return (
        f'<rect x="{num(x)}" y="{num(y)}" width="{num(width)}" height="{num(height)}" '
        f'fill="{fill}"{extra}/>'
    )


def frame(x: float, y: float, width: float, height: float) -> str:
    """The outline of a plot area."""
    return rect(x, y, width, height, "none", f'stroke="{FRAME}" stroke-width="1"')


def circle(x: float, y: float, radius: float, fill: str, extra: str = "") -> str:
    extra = f" {extra}" if extra else ""
    return f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(radius)}" fill="{fill}"{extra}/>'


def points(pairs: Iterable[tuple[float, float]]) -> str:
    """The `points` attribute of a polygon or polyline."""
    return " ".join(f"{num(x)},{num(y)}" for x, y in pairs)


def polygon(corners: Sequence[tuple[float, float]], colour: str, *, outline: bool) -> str:
    """A closed shape with a faint fill (so overlapping ones stay readable), outlined in
    its colour unless `outline` is off."""
    stroke = f'stroke="{colour}" stroke-width="2"' if outline else 'stroke="none"'
    return (
        f'<polygon points="{points(corners)}" fill="{colour}" fill-opacity="0.08" {stroke} '
        'stroke-linejoin="round"/>'
    )


def path(runs: Sequence[Sequence[tuple[float, float]]], stroke: str, width: float = 1.5) -> str:
    """One <path> for a series broken into runs: each run is a subpath of its own (a new
    'M'), so a missing value leaves a gap instead of a line across it."""
    commands = " ".join(
        "M" + " L".join(f"{num(x)},{num(y)}" for x, y in run) for run in runs if run
    )
    return (
        f'<path d="{commands}" fill="none" stroke="{stroke}" stroke-width="{num(width)}" '
        'stroke-linejoin="round"/>'
    )


def group(kind: str, parts: Iterable[str]) -> str:
    """A <g> named by one of the charts' fixed kinds ("bars", "series", "legend", ...), so
    a reader of the markup (and the tests) can tell the parts of a chart apart."""
    return f'<g class="{kind}">{"".join(parts)}</g>'


# -- legend ----------------------------------------------------------------------------------
LEGEND_ROW = 18
_SWATCH = 22


def legend_cell(names: Sequence[object], size: float = 11) -> float:
    """The width of one legend entry: swatch, gap and the longest name."""
    return _SWATCH + 6 + max((width_of(shown(n), size) for n in names), default=0) + 14


def legend_size(names: Sequence[object], columns: int, size: float = 11) -> tuple[float, float]:
    """Width and height of a legend of `names` in `columns` columns (filled row by row)."""
    columns = max(1, min(columns, len(names)))
    rows = math.ceil(len(names) / columns)
    return legend_cell(names, size) * columns, LEGEND_ROW * rows


def legend(
    entries: Sequence[tuple[object, str]],
    x: float,
    y: float,
    *,
    columns: int = 1,
    marker: str = "box",
    size: float = 11,
) -> str:
    """A legend with its top left corner at (x, y): per entry a colour swatch (a box for
    bars, a line with a dot for lines) and the escaped name, filled row by row."""
    names = [name for name, _ in entries]
    columns = max(1, min(columns, len(entries)))
    cell = legend_cell(names, size)
    parts = []
    for index, (name, colour) in enumerate(entries):
        left = x + cell * (index % columns)
        middle = y + LEGEND_ROW * (index // columns) + LEGEND_ROW / 2
        if marker == "line":
            parts.append(line(left, middle, left + _SWATCH, middle, colour, 2))
            parts.append(circle(left + _SWATCH / 2, middle, 3, colour))
        else:
            parts.append(rect(left + 4, middle - 6, _SWATCH - 8, 12, colour))
        parts.append(text(left + _SWATCH + 6, middle + size * 0.36, name, size=size))
    return group("legend", parts)


def document(width: float, height: float, parts: Iterable[str]) -> str:
    """The finished chart as a `data:image/svg+xml;base64,` URI, on a white background."""
    width, height = math.ceil(width), math.ceil(height)
    markup = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="{FONT}">'
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>' + "".join(parts) + "</svg>"
    )
    return "data:image/svg+xml;base64," + base64.b64encode(markup.encode("utf-8")).decode("ascii")
