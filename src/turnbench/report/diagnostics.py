"""The report's judge diagnostics: judgments, unparseable ones, re-asks and failing requests
per model, pairwise judging per run, and every failed judgment (`diagnostics.html`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from markupsafe import Markup

from turnbench.report.cells import Link, sample_link
from turnbench.report.markup import fmt
from turnbench.report.reading import model_results, pairwise_of, single
from turnbench.report.templating import render
from turnbench.store.rundir import Entry

MAX_FAILURES = 500  # failed judgments listed


def _judges_rows(entries: list[Entry]) -> list[list[object]]:
    rows: list[list[object]] = []
    for entry in entries:
        counts = model_results(entry).counts
        judged = list(entry.judgments.values())
        spread = Counter(r.reasks for r in judged)
        prov = entry.run.typed.provenance
        rows.append(
            [
                entry.label,
                len(judged),
                counts.failed,
                counts.reasks,
                ", ".join(f"{n}: {spread[n]}" for n in sorted(spread)) or "–",
                len(entry.open_failures),
                ", ".join(map(str, prov.judge_reported)) or "–",
                prov.max_reasks,
            ]
        )
    return rows


def _failure_rows(
    entries: list[Entry], sample_href: Callable[[Entry, str], str] | None
) -> list[list[object]]:
    rows: list[list[object]] = []
    for entry in entries:
        for (sample, turn), record in sorted(entry.judgments.items()):
            if record.status != "scored":
                link = (
                    sample_link(entry.run.benchmark, sample)
                    if sample_href is None
                    else Link(sample_href(entry, sample), f"#{sample}")
                )
                reason = record.parse_error or "unparseable"
                rows.append([entry.label, link, turn, reason, record.reasks])
        for (sample, turn), failure in sorted(entry.open_failures.items()):
            rows.append([entry.label, f"#{sample}", turn, f"request: {failure.error}", "–"])
    return rows


def _pairwise_rows(entries: list[Entry]) -> list[list[object]]:
    rows: list[list[object]] = []
    for run in {id(e.run): e.run for e in entries}.values():
        results = pairwise_of(run)
        if results is None:
            continue
        counts = results.counts  # (the pairwise counts are a mapping in the results)
        pairs = counts.get("pairs") if isinstance(counts.get("pairs"), dict) else {}
        rows.append(
            [
                run.label,
                f"{counts.get('judged', '–')} / {counts.get('expected', '–')}",
                counts.get("failed", "–"),
                counts.get("reasks", "–"),
                f"{pairs.get('compared', '–')} / {pairs.get('expected', '–')}",
                pairs.get("inconsistent", "–"),
                fmt(results.position_consistency, 3),
                fmt(results.first_position_win_share, 3),
                ", ".join(f"{k} {v}" for k, v in results.verdicts.items()) or "–",
            ]
        )
    return rows


def diagnostics_section(
    entries: list[Entry], sample_href: Callable[[Entry, str], str] | None = None
) -> Markup:
    """The body of the judge diagnostics section (`sample_href`: where a failed judgment
    links; None: its sample in this report's dialogue browser)."""
    models = single(entries)
    return render(
        "diagnostics.html",
        judges=_judges_rows(models),
        pairwise=_pairwise_rows(entries),
        failures=_failure_rows(models, sample_href)[:MAX_FAILURES],
    )
