"""Untrusted text made into markup, and the report's number formats (template filters).

The report's pages are templates (`templating.py`, autoescaped); the two filters here turn
a text into markup themselves because they must cut it: `breakable` (break opportunities in
huge words) and `long_text` (a block that folds what is past FOLD_LIMIT). Both escape every
piece of the text before anything is joined, and return `Markup` only of that.
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from typing import Any

from markupsafe import Markup, escape

from turnbench.safetext import fix_surrogates, plain

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

# Untrusted text can hold one huge word (a model stuck repeating, a blob). Chromium breaks
# such a word line by line and, in scripts whose characters join or carry marks (Arabic,
# combining accents), shapes the rest of the word again at every line: 3 MB froze the tab
# for a minute. A break opportunity (<wbr>) every RUN_STEP characters keeps each of those
# steps short, so layout stays linear; the text itself is unchanged (<wbr> adds no text).
RUN_STEP = 200
# a run ends only at a space a browser may break at (a no-break space does not end it);
# the look-behind lets a match start only where a run starts, so the search is linear
_LONG_RUN = re.compile(rf"(?<![^ \t\n\r\f])[^ \t\n\r\f]{{{RUN_STEP + 1},}}")
FOLD_LIMIT = 50_000  # characters shown before a "show the rest" control
_JOINS = {"\u200c", "\u200d"}  # zero-width (non-)joiners bind their neighbours
_LONG_START, _LONG_END, _BREAK = Markup('<span class="long">'), Markup("</span>"), Markup("<wbr>")
_BLOCKS = frozenset({"div", "pre"})  # the blocks a long text is shown in
_FOLDED = (
    '{}<details class="more"><summary>show the rest ({} more characters, {} in all)'
    "</summary>{}</details>"
)


def esc(value: Any) -> Markup:
    """Text -> inert HTML (for element content and quoted attribute values alike): what
    autoescape makes of it."""
    return escape("" if value is None else str(value))


def _binds(text: str, at: int) -> bool:
    """Whether a cut before `at` would part a character from its marks, modifiers (an
    emoji skin tone) or joiners."""
    char = text[at]
    return (
        unicodedata.category(char) in ("Mn", "Mc", "Me", "Sk")
        or char in _JOINS
        or text[at - 1] in _JOINS
    )


def cut_at(text: str, at: int) -> int:
    """`at` moved forward (at most 16 places) to where a cut keeps marks with their letter."""
    limit = min(len(text) - 1, at + 16)
    while 0 < at <= limit and _binds(text, at):
        at += 1
    return min(at, len(text))


def _steps(run: str) -> list[str]:
    pieces, start = [], 0
    while len(run) - start > RUN_STEP:
        end = cut_at(run, start + RUN_STEP)
        pieces.append(run[start:end])
        start = end
    if start < len(run):
        pieces.append(run[start:])
    return pieces


def breakable(text: Any) -> Markup:
    """Text -> inert HTML in which every unbroken run longer than RUN_STEP characters may
    break (<wbr>) every RUN_STEP characters and anywhere (class "long"), so no line of the
    page's layout has to shape one huge word again and again (see RUN_STEP)."""
    value = "" if text is None else str(text)
    if len(value) <= RUN_STEP or _LONG_RUN.search(value) is None:
        return escape(value)  # (most texts: no run to break)
    parts: list[Markup] = []
    last = 0
    for match in _LONG_RUN.finditer(value):
        parts.append(esc(value[last : match.start()]))
        parts.append(_LONG_START + _BREAK.join(_steps(match.group())) + _LONG_END)
        last = match.end()
    parts.append(esc(value[last:]))
    return Markup("").join(parts)


@functools.cache
def _block(tag: str, css_class: str) -> tuple[Markup, Markup]:
    """The start and end tags of a text block."""
    if tag not in _BLOCKS:
        raise ValueError(f"not a text block: {tag}")
    block = Markup(tag)  # (one of _BLOCKS: no text of the caller's)
    start = Markup('<{} class="{}">').format(block, css_class) if css_class else f"<{block}>"
    return Markup(start), Markup(f"</{block}>")


def long_text(text: Any, css_class: str = "", tag: str = "div") -> Markup:
    """Untrusted text as an escaped `tag` block of `css_class` (breakable, see RUN_STEP).
    Text longer than FOLD_LIMIT characters shows its first FOLD_LIMIT and keeps the rest,
    complete, in a closed "show the rest" details below it: a closed details is not laid
    out, so a huge answer costs nothing until the reader asks for it."""
    value = "" if text is None else str(text)
    start, end = _block(tag, css_class)
    if len(value) <= FOLD_LIMIT:  # (joined as text: every part is markup already)
        return Markup("".join((start, breakable(value), end)))
    cut = cut_at(value, FOLD_LIMIT)
    head, rest = value[:cut], value[cut:]
    return Markup(_FOLDED).format(
        start + breakable(head) + end,
        f"{len(rest):,}",
        f"{len(value):,}",
        start + breakable(rest) + end,
    )


MAX_VALUE_CHARS = 2_000  # a value shown compactly (an outcome's field) is cut beyond this


def cut(text: str, limit: int, more: str = "more characters") -> str:
    """Text cut at `limit` characters, saying how many `more` there were; a lone surrogate
    (from an old or hostile run directory) shown as U+FFFD: no page can be encoded with one."""
    if len(text) > limit:
        text = text[:limit] + f" … ({len(text) - limit:,} {more})"
    return fix_surrogates(text)


def shown_value(value: Any) -> str:
    """A JSON value as compact text, cut at MAX_VALUE_CHARS (the `value` filter): machine
    text (an outcome's field, a tool's arguments or output), so a control or bidi control in
    it is shown, never obeyed (`plain`: NUL as ^@, U+202E as \\u202e). A value no JSON holds
    (NaN, an infinity) is written as Python writes it, never as null."""
    if isinstance(value, str):
        return plain(cut(value, MAX_VALUE_CHARS))
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True, default=repr)
    except (ValueError, RecursionError):
        text = repr(value)
    return plain(cut(text, MAX_VALUE_CHARS))


def finite_number(value: Any) -> float | None:
    """A finite number (from a results file or a record), else None: a file may hold NaN,
    `true`, or an integer of hundreds of digits (no float holds it, math.isfinite raises
    OverflowError on it, and a browser's JSON.parse reads it as Infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return value if math.isfinite(value) else None
    except OverflowError:
        return None


def fmt(value: Any, digits: int = 2) -> str:
    """A number as every page shows it (`digits` decimals), "–" for none (or a number no
    float holds: NaN, an infinity, an integer of hundreds of digits), yes/no for a truth
    value; any other value as its text (the template escapes it)."""
    if isinstance(value, bool) or value is None:
        return "–" if value is None else ("yes" if value else "no")
    if isinstance(value, int | float):
        number = finite_number(value)
        return "–" if number is None else f"{number:.{digits}f}"
    return str(value)


def num(value: Any, digits: int = 2) -> str:
    """The pages' `num` filter: a finite number to `digits` places, else "–" (a template
    shows a number field this way whatever a hostile file put there: text, a boolean,
    NaN, an integer no float holds)."""
    number = finite_number(value)
    return "–" if number is None else f"{number:.{digits}f}"


def fmt_ci(interval: Any) -> str:
    """An interval as "[low, high]"; "–" unless it is two finite numbers."""
    if isinstance(interval, list | tuple) and len(interval) == 2:
        low, high = (finite_number(end) for end in interval)
        if low is not None and high is not None:
            return f"[{low:.2f}, {high:.2f}]"
    return "–"


def anchor(*parts: Any) -> str:
    """A safe element id from arbitrary parts (untrusted characters become '_')."""
    return "-".join(_ID_UNSAFE.sub("_", str(p)) for p in parts)


def sample_anchor(benchmark: str, sample: str) -> str:
    """The id of a sample's block in the dialogue browser."""
    return anchor("s", benchmark, sample)
