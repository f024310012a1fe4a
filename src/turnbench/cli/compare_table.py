"""The terminal view of `turnbench compare` (numbers rounded here, for display only)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from turnbench.cli.terminal import cell
from turnbench.report.compare import Comparison, Row

VERDICT_STYLE = {
    "better": "green",
    "worse": "red",
    "no_change": "dim",
    "insufficient_data": "yellow",
}


def _interval(row: Row) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "-"
    return f"[{row.ci_low:+.2f}, {row.ci_high:+.2f}]"


def _verdict(row: Row) -> str:
    text = row.verdict.replace("_", " ")
    return f"[{VERDICT_STYLE[row.verdict]}]{text}[/{VERDICT_STYLE[row.verdict]}]"


def print_comparison(console: Console, comparison: Comparison, top: int) -> None:
    kind = comparison.group_kind
    table = Table(
        title=cell(
            f"{comparison.benchmark}: {comparison.new.label} vs {comparison.base.label} (base)"
        ),
        title_justify="left",
    )
    for column in (kind, "n", "base", "new", "delta", "95% CI", "verdict"):
        table.add_column(cell(column), justify="left" if column in (kind, "verdict") else "right")
    for row in comparison.rows:
        table.add_row(
            cell(row.name),
            str(row.n),
            f"{row.base:.2f}",
            f"{row.new:.2f}",
            f"{row.delta:+.2f}",
            _interval(row),
            _verdict(row),
        )
    overall = comparison.overall
    table.add_section()
    table.add_row(
        "[bold]overall[/bold]",
        str(overall.n),
        f"[bold]{overall.base:.2f}[/bold]",
        f"[bold]{overall.new:.2f}[/bold]",
        f"[bold]{overall.delta:+.2f}[/bold]",
        _interval(overall),
        _verdict(overall),
    )
    console.print(table)
    movers = comparison.movers(top)
    if movers:
        moved = Table(title="Samples that moved most", title_justify="left")
        for column in ("sample", kind, "base", "new", "delta"):
            moved.add_column(
                cell(column), justify="left" if column in ("sample", kind) else "right"
            )
        for pair in movers:
            moved.add_row(
                cell(pair.sample_id),
                cell(pair.group),
                f"{pair.base:.2f}",
                f"{pair.new:.2f}",
                f"{pair.delta:+.2f}",
            )
        console.print(moved)
    settings = comparison.settings
    console.print(
        f"Sign-flip test over the paired samples ({settings['resamples']} patterns, seed "
        f"{settings['seed']}), {len(comparison.pairs)} paired samples; verdict better/worse "
        f"when the {settings['level']:.0%} interval excludes 0; insufficient data below "
        f"{settings['min_pairs']} paired samples."
    )
