"""Terminal tables built from results objects (scores rounded only here, for display)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def score_table(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    totals: Sequence[Any] | None = None,
) -> Table:
    table = Table(title=title, title_justify="left")
    for index, header in enumerate(headers):
        table.add_column(header, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(str(row[0]), *(fmt(v) if not isinstance(v, str) else v for v in row[1:]))
    if totals is not None:
        table.add_section()
        table.add_row(
            f"[bold]{totals[0]}[/bold]",
            *(f"[bold]{fmt(v) if not isinstance(v, str) else v}[/bold]" for v in totals[1:]),
        )
    return table


def counts_line(results: dict[str, Any]) -> str:
    counts = results["counts"]
    parts = [f"judged {counts['judged']}/{counts['expected']}"]
    if counts.get("failed"):
        parts.append(
            f"[yellow]unparseable {counts['failed']}[/yellow] (judge gave no valid "
            "rating after its re-asks; not averaged in)"
        )
    if counts.get("pending"):
        parts.append(
            f"[red]pending {counts['pending']}[/red] (not finished: a request failed or "
            "the run stopped early; re-run the same command to finish them)"
        )
    if counts.get("reasks"):
        parts.append(f"re-asks {counts['reasks']}")
    interval = results.get("overall_ci95")
    if interval:
        parts.append(f"overall 95% CI [{interval[0]:.2f}, {interval[1]:.2f}]")
    return " · ".join(parts)
