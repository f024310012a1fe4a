"""A pairwise run's section (win, loss and tie per model, the judge's position bias, the
outcome chart) and Bradley-Terry ratings, which judge-only runs of several models show too
(`pairwise.html`, `ratings` in `macros.html`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from turnbench.report import charts
from turnbench.report.markup import fmt
from turnbench.report.templating import render
from turnbench.results.shapes import PairwiseResults
from turnbench.store.rundir import Run


@dataclass
class RatingsView:
    method: Any
    scale: Any
    rows: list[list[object]]


def _interval(interval: Any) -> str:
    if isinstance(interval, list) and len(interval) == 2 and None not in interval:
        return f"[{interval[0]:.0f}, {interval[1]:.0f}]"
    return "–"


def ratings_view(ratings: Any) -> RatingsView | None:
    """Bradley-Terry ratings (Elo scale) with their intervals, when the results have them
    (`stats.ratings` made them: a mapping the results' shapes keep as it is)."""
    if not isinstance(ratings, dict) or not isinstance(ratings.get("models"), dict):
        return None
    rows: list[list[object]] = [
        [
            name,
            row.get("rank", "–"),
            fmt(row.get("rating"), 0),
            _interval(row.get("ci95")),
            row.get("battles", "–"),
        ]
        for name, row in ratings["models"].items()
        if isinstance(row, dict)
    ]
    if not rows:
        return None
    return RatingsView(ratings.get("method", ""), ratings.get("scale", ""), rows)


def pairwise_section(run: Run, results: PairwiseResults) -> Markup:
    """The body of a pairwise run's section."""
    names = list(results.models)
    rows: list[list[object]] = [
        [
            name,
            row.win,
            row.loss,
            row.tie,
            row.inconsistent,
            fmt(row.win_rate, 3),
            fmt(row.win_rate_adjusted, 3),
        ]
        for name, row in results.models.items()
    ]
    picture = None
    if names:
        counts = [(row.win, row.tie, row.loss) for row in results.models.values()]
        mode = results.provenance.judging
        picture = charts.outcomes(names, counts, f"Pairwise outcomes ({mode})")
    return render(
        "pairwise.html",
        picture=picture,
        rows=rows,
        results=results,
        ratings=ratings_view(results.ratings),
    )
