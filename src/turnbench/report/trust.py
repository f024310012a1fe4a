"""The report's "Judge trust" section: panels, repeats, length and flagged answers.

Everything comes from the typed results (`by_judge`, `judge_agreement`, `repeats`,
`length` and `flagged_answers` of a model or a pairwise run); runs without them add
nothing (`trust.html`).
"""

from __future__ import annotations

from markupsafe import Markup

from turnbench.report.cells import Bold
from turnbench.report.markup import fmt
from turnbench.report.reading import model_results, pairwise_of, single
from turnbench.report.templating import render
from turnbench.store.rundir import Entry, Run
from turnbench.trust.models import FlaggedAnswer

MAX_FLAGGED = 200


def _panel(entries: list[Entry]) -> list[list[object]]:
    rows: list[list[object]] = []
    for entry in entries:
        results = model_results(entry)
        if results.by_judge is None:
            continue
        agreement = results.judge_agreement
        if agreement is not None and agreement.kind == "ratings":
            statistic = f"alpha {fmt(agreement.krippendorff_alpha, 3)}"
        else:
            kappa = agreement.fleiss_kappa if agreement is not None else None
            statistic = f"Fleiss kappa {fmt(kappa, 3)}"
        for judge, scores in results.by_judge.items():
            counts = scores.counts
            rows.append(
                [
                    entry.label,
                    judge,
                    fmt(scores.overall),
                    f"{counts.scored} / {counts.expected}",
                    statistic,
                ]
            )
        items = agreement.items if agreement is not None else "–"
        rows.append([entry.label, Bold("panel"), Bold(fmt(results.overall)), "", f"{items} items"])
    return rows


def _repeats(entries: list[Entry]) -> list[list[object]]:
    rows: list[list[object]] = []
    for entry in entries:
        spread = model_results(entry).repeats
        if spread is None:
            continue
        for judge, overall in spread.overall_by_repeat.items():
            rows.append(
                [
                    entry.label,
                    judge,
                    spread.k,
                    ", ".join(fmt(v) for v in overall),
                    fmt(spread.overall_range.get(judge), 3),
                    fmt(spread.mean_item_sd, 3),
                    f"{spread.items_varying} / {spread.items}",
                ]
            )
    return rows


def _length(entries: list[Entry]) -> list[list[object]]:
    rows: list[list[object]] = []
    for entry in entries:
        results = model_results(entry)
        length = results.length
        if length is None:
            continue
        rows.append(
            [
                entry.label,
                fmt(length.spearman, 3),
                fmt(length.median_chars, 0),
                fmt(results.overall),
                fmt(length.length_controlled_overall),
                fmt(length.difference),
                fmt(length.slope_per_doubling, 3),
                length.method,
            ]
        )
    return rows


def _flagged(entries: list[Entry], runs: list[Run]) -> tuple[list[list[object]], int, bool]:
    """The flagged answers' rows (at most MAX_FLAGGED), how many there are, and whether any
    run was checked by the detector at all."""
    found: list[tuple[str, FlaggedAnswer]] = []
    checked = False
    for entry in entries:
        flagged = model_results(entry).flagged_answers
        checked = checked or flagged is not None
        found.extend((entry.label, item) for item in flagged or [])
    for run in runs:
        results = pairwise_of(run)
        if results is not None:
            checked = checked or results.flagged_answers is not None
            found.extend(
                (f"{run.label}: {item.model or ''}", item) for item in results.flagged_answers or []
            )
    rows: list[list[object]] = []
    for label, item in found[:MAX_FLAGGED]:
        sample = item.model_extra or {}  # the benchmark's naming of the sample
        rows.append(
            [
                label,
                ", ".join(f"{k} {v}" for k, v in sample.items()),
                item.turn,
                "; ".join(f"{flag.label}: “{flag.excerpt}”" for flag in item.flags),
            ]
        )
    return rows, len(found), checked


def trust_section(entries: list[Entry], runs: list[Run]) -> Markup:
    """The section's body (empty when no run has anything to show in it)."""
    models = single(entries)
    flagged, total, checked = _flagged(models, runs)
    pairwise = [(run, results) for run in runs if (results := pairwise_of(run)) is not None]
    return render(
        "trust.html",
        panel=_panel(models),
        repeats=_repeats(models),
        length=_length(models),
        pairwise=pairwise,
        flagged=flagged,
        more=total - MAX_FLAGGED,
        checked=checked,
    )
