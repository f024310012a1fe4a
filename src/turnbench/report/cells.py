"""What a table cell of the report shows beyond plain text: data, drawn by `macros.html`.

A section's Python code says *what* a cell is (a bold number, a badge, a link to a sample,
lines, a label with a note); the `cell` macro says how it looks. Plain values (text,
numbers already formatted) are cells too, escaped as they are shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from turnbench.report.markup import sample_anchor


@dataclass(frozen=True)
class Bold:
    shape: ClassVar[str] = "bold"
    text: Any


@dataclass(frozen=True)
class Badge:
    shape: ClassVar[str] = "badge"
    text: str
    kind: str  # its style: ok, fail, better, worse, no_change, insufficient_data, simulated

    @classmethod
    def verdict(cls, verdict: str) -> Badge:
        """A comparison's verdict ("no_change" shown as "no change")."""
        return cls(verdict.replace("_", " "), verdict)


@dataclass(frozen=True)
class Link:
    shape: ClassVar[str] = "link"
    href: str
    text: str
    css_class: str | None = None


@dataclass(frozen=True)
class Lines:
    """Several lines in one cell (the first may be a cell of its own kind)."""

    shape: ClassVar[str] = "lines"

    lines: Sequence[Any]


@dataclass(frozen=True)
class Noted:
    """A label with a muted note after it (a row's "(tier 1)")."""

    shape: ClassVar[str] = "noted"

    text: str
    note: str | None


CELL_TYPES = (Bold, Badge, Link, Lines, Noted)


def sample_link(benchmark: str, sample: str) -> Link:
    """A link to a sample's block in this report's dialogue browser (opened when followed)."""
    return Link(f"#{sample_anchor(benchmark, sample)}", f"#{sample}", "to-sample")
