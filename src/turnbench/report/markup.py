"""Tiny HTML builders. Every piece of text goes through `esc`; nothing else makes markup.

Functions taking `cells` or `body` expect markup that is already escaped (built here);
functions taking `text` escape it themselves.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import Any

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def esc(value: Any) -> str:
    """Text -> inert HTML (for element content and quoted attribute values alike)."""
    return html.escape("" if value is None else str(value), quote=True)


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
