"""What turnbench prints: consoles, safe text and tables (scores rounded only here).

Every piece of external text (model and judge names, file names, paths, dataset strings,
server errors, judge replies) goes through `shown` (inside our own markup) or `cell` (a
table cell or title): rich markup in it stays literal (no `[link=...]` hyperlinks, no crash
on `[/]`), control characters are made visible (no ANSI or OSC sequences reach the
terminal) and emoji codes stay text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from turnbench.benchmarks.base import TextTable
from turnbench.judging.cleaning import UNCLOSED_REASON
from turnbench.safetext import plain

if TYPE_CHECKING:  # (the results' models: imported by the commands that print results)
    from turnbench.results.shapes import ModelResults, PairwiseResults
    from turnbench.results.stress import ArmResults


def console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A console for turnbench's output: no highlighting, no emoji codes."""
    return Console(stderr=stderr, highlight=False, emoji=False, soft_wrap=soft_wrap)


def shown(value: Any) -> str:
    """External text to put inside our own markup: escaped, control characters visible."""
    return escape(plain(value))


def cell(value: Any, style: str = "") -> Text:
    """External text as a table cell or title: never parsed as markup."""
    return Text(plain(value), style=style)


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


#: why work is pending, in a run that a re-run resumes
RESUMABLE = (
    "not finished: a request failed or the run stopped early; re-run the same command to "
    "finish them"
)


def counts_line(results: ModelResults, pending_hint: str = RESUMABLE) -> str:
    counts = results.counts
    parts = [f"judged {counts.judged}/{counts.expected}"]
    # failed items of answers cut off inside <think> were not judged: said below
    cut = sum(f.get("reason") == UNCLOSED_REASON for f in results.parse_failures)
    unparseable = counts.failed - cut
    if unparseable > 0:
        parts.append(
            f"[yellow]unparseable {unparseable}[/yellow] (judge gave no valid "
            "verdict after its re-asks; not averaged in)"
        )
    if counts.pending:
        parts.append(f"[red]pending {counts.pending}[/red] ({pending_hint})")
    if counts.reasks:
        parts.append(f"re-asks {counts.reasks}")
    unclosed = (counts.model_extra or {}).get("unclosed_think")
    if unclosed:
        parts.append(
            f"[yellow]{unclosed} answer(s) cut off inside <think>[/yellow] "
            "(not judged, counted as failed; raise --max-new-tokens, or judge them as "
            "written with --no-strip-think)"
        )
    interval = results.overall_ci95
    if interval:
        parts.append(f"overall 95% CI [{interval[0]:.2f}, {interval[1]:.2f}]")
    return " · ".join(parts)


def draw_table(table: TextTable) -> RenderableType:
    """A benchmark's declared results table, drawn; every cell is text, never markup."""
    drawn = Table(title=cell(table.title), title_justify="left")
    for index, header in enumerate(table.headers):
        drawn.add_column(cell(header), justify="left" if index == 0 else "right")
    if table.names_whole and drawn.columns:
        drawn.columns[0].no_wrap = True
    for number, section in enumerate(table.sections):
        if number:
            drawn.add_section()
        for row in section:
            style = "bold" if row.bold else ""
            drawn.add_row(*(cell(v if isinstance(v, str) else fmt(v), style) for v in row.cells))
    if not table.notes:
        return drawn
    notes = Text(" · ").join(
        Text(plain(note.text), style="yellow" if note.warning else "") for note in table.notes
    )
    return Group(drawn, notes)


def render_pairwise(results: PairwiseResults, pending_hint: str = RESUMABLE) -> list[Any]:
    """Rich renderables of pairwise results (rounded for display only)."""

    versus = f" vs {results.baseline}" if results.baseline else " (all pairs)"
    table = Table(
        title=cell(f"{results.benchmark} pairwise{versus}, judge {results.judge}"),
        title_justify="left",
    )
    for column in ("model", "win", "loss", "tie", "inconsistent", "win rate", "adjusted"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for name, row in results.models.items():
        table.add_row(
            cell(name),
            str(row.win),
            str(row.loss),
            str(row.tie),
            str(row.inconsistent),
            fmt(row.win_rate, 3),
            fmt(row.win_rate_adjusted, 3),
        )
    counts = results.counts  # (a pairwise run's counts are a mapping in its results)
    pairs = counts["pairs"]
    parts = [
        f"judged {counts['judged']}/{counts['expected']} games",
        f"position consistency {fmt(results.position_consistency, 3)} "
        f"({pairs['compared'] - pairs['inconsistent']}/{pairs['compared']} pairs agree in both "
        "orders)",
        f"first-position win share {fmt(results.first_position_win_share, 3)}",
    ]
    if counts["failed"]:
        parts.append(
            f"[yellow]unparseable {counts['failed']}[/yellow] games; "
            f"{pairs['excluded']} pair(s) left out"
        )
    if counts["pending"]:
        parts.append(f"[red]pending {counts['pending']}[/red] games ({pending_hint})")
    return [table, " · ".join(parts), ratings_table(results.ratings)]


def ratings_table(
    ratings: Mapping[str, Any], title: str = "Bradley-Terry ratings (Elo scale)"
) -> Table:
    """A rich table of a ratings object (rounded for display only)."""
    table = Table(title=cell(title), title_justify="left")
    for column in ("rank", "model", "rating", f"{ratings['level']:.0%} CI", "battles"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for name, row in ratings["models"].items():
        interval = row["ci95"]
        table.add_row(
            "-" if row["rank"] is None else str(row["rank"]),
            cell(name),
            "-" if row["rating"] is None else f"{row['rating']:.0f}",
            "-" if interval is None else f"[{interval[0]:.0f}, {interval[1]:.0f}]",
            str(row["battles"]),
        )
    return table


def _interval(low: Any, high: Any) -> str:
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return "-"
    return f"[{low:+.2f}, {high:+.2f}]"


def stress_table(perturbations: Mapping[str, ArmResults], group_kind: str) -> Table:
    """The stress arms (`--perturb`) against the unperturbed run: one section per arm, its
    overall row then one per category or task (rounded for display only)."""
    table = Table(title="Stress arms: perturbed vs unperturbed (paired)", title_justify="left")
    columns = ("arm", group_kind, "units", "unperturbed", "perturbed", "difference", "95% CI")
    for column in (*columns, "obeyed"):
        table.add_column(column, justify="left" if column in ("arm", group_kind) else "right")
    for number, (kind, arm) in enumerate(perturbations.items()):
        if number:
            table.add_section()
        rate = arm.obeyed_rate
        obeyed = "-"
        if rate is not None and isinstance(rate.value, int | float):
            extra = rate.model_extra or {}
            obeyed = (
                f"{rate.value:.0%} [{rate.ci_low:.0%}, {rate.ci_high:.0%}] "
                f"({extra.get('obeyed')}/{extra.get('checked')})"
            )
        difference = arm.difference
        table.add_row(
            cell(kind, "bold"),
            cell("overall", "bold"),
            str(arm.units),
            fmt(arm.baseline_score),
            fmt(arm.score),
            fmt(difference.value),
            _interval(difference.ci_low, difference.ci_high),
            obeyed,
        )
        groups = (arm.model_extra or {}).get(f"by_{group_kind}") or {}
        for group, row in groups.items():  # (each group's row: a mapping in the results)
            found = row.get("difference") or {}
            table.add_row(
                "",
                cell(group),
                str(row.get("units", 0)),
                fmt(row.get("baseline_score")),
                fmt(row.get("score")),
                fmt(found.get("value")),
                _interval(found.get("ci_low"), found.get("ci_high")),
                "",
            )
    return table
