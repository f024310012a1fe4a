"""Tiny HTML builders. Every piece of text goes through `esc`; nothing else makes markup.

Functions taking `cells` or `body` expect markup that is already escaped (built here);
functions taking `text` escape it themselves.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

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


def esc(value: Any) -> str:
    """Text -> inert HTML (for element content and quoted attribute values alike)."""
    return html.escape("" if value is None else str(value), quote=True)


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


def breakable(text: Any) -> str:
    """Text -> inert HTML in which every unbroken run longer than RUN_STEP characters may
    break (<wbr>) every RUN_STEP characters and anywhere (class "long"), so no line of the
    page's layout has to shape one huge word again and again (see RUN_STEP)."""
    value = "" if text is None else str(text)
    parts, last = [], 0
    for match in _LONG_RUN.finditer(value):
        parts.append(esc(value[last : match.start()]))
        steps = "<wbr>".join(esc(step) for step in _steps(match.group()))
        parts.append(f'<span class="long">{steps}</span>')
        last = match.end()
    parts.append(esc(value[last:]))
    return "".join(parts)


def long_text(text: Any, css_class: str = "", tag: str = "div") -> str:
    """Untrusted text as an escaped `tag` block of `css_class` (breakable, see RUN_STEP).
    Text longer than FOLD_LIMIT characters shows its first FOLD_LIMIT and keeps the rest,
    complete, in a closed "show the rest" details below it: a closed details is not laid
    out, so a huge answer costs nothing until the reader asks for it."""
    value = "" if text is None else str(text)
    start = f'<{tag} class="{esc(css_class)}">' if css_class else f"<{tag}>"
    if len(value) <= FOLD_LIMIT:
        return f"{start}{breakable(value)}</{tag}>"
    cut = cut_at(value, FOLD_LIMIT)
    head, rest = value[:cut], value[cut:]
    return (
        f"{start}{breakable(head)}</{tag}>"
        f'<details class="more"><summary>show the rest ({len(rest):,} more characters, '
        f"{len(value):,} in all)</summary>{start}{breakable(rest)}</{tag}></details>"
    )


def fmt(value: Any, digits: int = 2) -> str:
    if isinstance(value, bool) or value is None:
        return "–" if value is None else ("yes" if value else "no")
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return esc(value)


def fmt_ci(interval: Any) -> str:
    if isinstance(interval, list | tuple) and len(interval) == 2 and None not in interval:
        return f"[{interval[0]:.2f}, {interval[1]:.2f}]"
    return "–"


def anchor(*parts: Any) -> str:
    """A safe element id from arbitrary parts (untrusted characters become '_')."""
    return "-".join(_ID_UNSAFE.sub("_", str(p)) for p in parts)


def badge(text: str, kind: str) -> str:
    return f'<span class="badge {esc(kind)}">{esc(text)}</span>'


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    text_columns: Iterable[int] = (0,),
    wrap_columns: Iterable[int] = (),
) -> str:
    """A table; `headers` are plain text, `rows` cells are markup.

    Text columns are left-aligned (numbers right-aligned); wrap columns may break lines.
    """
    texts, wraps = set(text_columns), set(wrap_columns)

    def classes(index: int) -> str:
        names = [n for n, on in (("text", index in texts), ("wrap", index in wraps)) if on]
        return f' class="{" ".join(names)}"' if names else ""

    head = "".join(f"<th{classes(i)}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td{classes(i)}>{c}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def figure(uri: str, alt: str) -> str:
    return f'<figure><img src="{esc(uri)}" alt="{esc(alt)}"></figure>'


def section(anchor_id: str, title: str, body: str, *, extra_class: str = "") -> str:
    classes = f' class="{esc(extra_class)}"' if extra_class else ""
    return f'<section id="{esc(anchor_id)}"{classes}><h2>{esc(title)}</h2>{body}</section>'
