"""The comparison sections of the report: each later model against the first, paired by
sample (`report.compare`), drawn by `comparison.html` (`turnbench view`'s compare page
shows one of them too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from markupsafe import Markup

from turnbench.errors import UserError
from turnbench.report import charts
from turnbench.report.cells import Badge, Bold, Link, sample_link
from turnbench.report.compare import Comparison, compare_entries
from turnbench.report.markup import fmt, fmt_ci
from turnbench.report.templating import macro, render
from turnbench.store.rundir import Entry

MAX_COMPARISONS = 8
TOP_MOVERS = 10

SampleHref = Callable[[Entry, str], str]


@dataclass
class ComparisonView:
    """One comparison as `comparison.html` draws it."""

    comparison: Comparison
    kind: str
    rows: list[list[object]]
    movers: list[list[object]]
    chart: str
    notes: list[str]


def _view(comparison: Comparison, sample_href: SampleHref | None) -> ComparisonView:
    def link(sample: str) -> Link:
        if sample_href is None:
            return sample_link(comparison.benchmark, sample)
        return Link(sample_href(comparison.new, sample), sample)

    lines = [comparison.overall, *comparison.rows]
    rows: list[list[object]] = [
        [
            Bold(row.name),
            row.n,
            fmt(row.base),
            fmt(row.new),
            Bold(f"{row.delta:+.2f}"),
            fmt_ci([row.ci_low, row.ci_high]),
            Badge.verdict(row.verdict),
        ]
        for row in lines
    ]
    chart = charts.deltas(
        [(r.name, r.delta, r.ci_low, r.ci_high, r.verdict) for r in lines],
        f"{comparison.new.label} minus {comparison.base.label}",
    )
    movers: list[list[object]] = [
        [link(p.sample_id), p.group, fmt(p.base), fmt(p.new), f"{p.delta:+.2f}"]
        for p in comparison.movers(TOP_MOVERS)
    ]
    return ComparisonView(
        comparison, comparison.group_kind, rows, movers, chart, comparison.warnings()
    )


def comparison_markup(comparison: Comparison, sample_href: SampleHref | None = None) -> Markup:
    """The section of one pair of runs (`sample_href`: where a mover links; None: its place
    in this report's dialogue browser)."""
    return macro("comparison.html", "comparison")(_view(comparison, sample_href))


def comparisons_section(
    benchmark: str,
    entries: list[Entry],
    *,
    resamples: int,
    seed: int,
    sample_href: SampleHref | None = None,
) -> Markup:
    """Every later entry against the first (at most MAX_COMPARISONS of them)."""
    base = entries[0]
    items: list[dict[str, object]] = []
    for new in entries[1 : 1 + MAX_COMPARISONS]:
        try:
            result = compare_entries(base, new, resamples=resamples, seed=seed)
        except UserError as error:
            items.append({"view": None, "new": new, "error": error.message})
            continue
        items.append({"view": _view(result, sample_href), "new": new, "error": None})
    return render(
        "comparisons.html",
        benchmark=benchmark,
        base=base,
        items=items,
        more=len(entries) > 1 + MAX_COMPARISONS,
        limit=MAX_COMPARISONS,
        resamples=resamples,
        seed=seed,
    )
