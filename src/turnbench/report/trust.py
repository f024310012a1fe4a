"""The report's "Judge trust" section: panels, repeats, length and flagged answers.

Everything comes from results.json (the keys `by_judge`, `judge_agreement`, `repeats`,
`length`, `length_control` and `flagged_answers`); runs without them add nothing.
"""

from __future__ import annotations

from typing import Any

from turnbench.report.markup import esc, fmt, table
from turnbench.store.rundir import Entry, Run

MAX_FLAGGED = 200


def _panel(entries: list[Entry]) -> str:
    rows = []
    for entry in entries:
        by_judge = entry.results.get("by_judge")
        if not isinstance(by_judge, dict):
            continue
        agreement = entry.results.get("judge_agreement") or {}
        statistic = (
            f"alpha {fmt(agreement.get('krippendorff_alpha'), 3)}"
            if agreement.get("kind") == "ratings"
            else f"Fleiss kappa {fmt(agreement.get('fleiss_kappa'), 3)}"
        )
        for judge, scores in by_judge.items():
            counts = scores.get("counts") or {}
            rows.append(
                [
                    esc(entry.label),
                    esc(judge),
                    fmt(scores.get("overall")),
                    esc(f"{counts.get('scored', '–')} / {counts.get('expected', '–')}"),
                    esc(statistic),
                ]
            )
        rows.append(
            [
                esc(entry.label),
                "<b>panel</b>",
                f"<b>{fmt(entry.results.get('overall'))}</b>",
                "",
                esc(f"{agreement.get('items', '–')} items"),
            ]
        )
    if not rows:
        return ""
    return "<h3>Judge panel</h3>" + table(
        ["model", "judge", "overall", "judgments scored / planned", "inter-judge agreement"],
        rows,
        text_columns=(0, 1, 4),
    )


def _repeats(entries: list[Entry]) -> str:
    rows = []
    for entry in entries:
        spread = entry.results.get("repeats")
        if not isinstance(spread, dict):
            continue
        for judge, overall in (spread.get("overall_by_repeat") or {}).items():
            rows.append(
                [
                    esc(entry.label),
                    esc(judge),
                    esc(spread.get("k")),
                    esc(", ".join(fmt(v) for v in overall)),
                    fmt((spread.get("overall_range") or {}).get(judge), 3),
                    fmt(spread.get("mean_item_sd"), 3),
                    esc(f"{spread.get('items_varying')} / {spread.get('items')}"),
                ]
            )
    if not rows:
        return ""
    return "<h3>Repeated judgments</h3>" + table(
        [
            "model",
            "judge",
            "repeats",
            "overall of each repeat",
            "overall range",
            "mean item sd",
            "items whose repeats differ",
        ],
        rows,
        text_columns=(0, 1, 3),
    )


def _length(entries: list[Entry]) -> str:
    rows = []
    for entry in entries:
        length = entry.results.get("length")
        if not isinstance(length, dict):
            continue
        rows.append(
            [
                esc(entry.label),
                fmt(length.get("spearman"), 3),
                fmt(length.get("median_chars"), 0),
                fmt(entry.results.get("overall")),
                fmt(length.get("length_controlled_overall")),
                fmt(length.get("difference")),
                fmt(length.get("slope_per_doubling"), 3),
                esc(length.get("method")),
            ]
        )
    if not rows:
        return ""
    return (
        "<h3>Answer length</h3>"
        + table(
            [
                "model",
                "rank correlation length~score",
                "median answer chars",
                "overall",
                "length-controlled overall",
                "difference",
                "score per doubling of length",
                "fit",
            ],
            rows,
            text_columns=(0, 7),
        )
        + '<p class="small muted">Length-controlled: every score moved to the run\'s mean log '
        "answer length along one slope fitted within model (and within question when several "
        "models answered it), then aggregated as the benchmark aggregates scores.</p>"
    )


def _flagged(entries: list[Entry], runs: list[Run]) -> str:
    rows = []
    for entry in entries:
        for item in entry.results.get("flagged_answers") or []:
            rows.append((entry.label, item))
    for run in runs:
        if run.pairwise:
            for item in run.results.get("flagged_answers") or []:
                rows.append((f"{run.label}: {item.get('model', '')}", item))
    if not rows:
        checked = any("flagged_answers" in e.results for e in entries) or any(
            "flagged_answers" in r.results for r in runs
        )
        return (
            '<p class="muted">No answer was flagged by the injection detector.</p>'
            if checked
            else ""
        )
    cells = []
    for label, item in rows[:MAX_FLAGGED]:
        sample = {k: v for k, v in item.items() if k not in ("turn", "flags", "model")}
        cells.append(
            [
                esc(label),
                esc(", ".join(f"{k} {v}" for k, v in sample.items())),
                esc(item.get("turn")),
                esc("; ".join(f"{f.get('label')}: “{f.get('excerpt')}”" for f in item["flags"])),
            ]
        )
    more = (
        f'<p class="muted small">{len(rows) - MAX_FLAGGED} more in results.json.</p>'
        if len(rows) > MAX_FLAGGED
        else ""
    )
    return (
        "<h3>Answers flagged by the injection detector</h3>"
        '<p class="small muted">Answers that address the judge, carry score-like tokens or '
        "forge prompt markers. Scores are unchanged; read these answers (and consider "
        "--judge-guard).</p>"
        + table(
            ["model", "sample", "turn", "why"], cells, text_columns=(0, 1, 3), wrap_columns=(3,)
        )
        + more
    )


def trust_section(entries: list[Entry], runs: list[Run]) -> str:
    single = [e for e in entries if not e.run.pairwise]
    body = _panel(single) + _repeats(single) + _length(single)
    for run in runs:
        agreement: Any = run.results.get("judge_agreement")
        if run.pairwise and isinstance(agreement, dict):
            body += (
                f"<p>{esc(run.label)}: pairwise panel agreement, Fleiss' kappa "
                f"<b>{fmt(agreement.get('fleiss_kappa'), 3)}</b> over {esc(agreement.get('items'))}"
                " games.</p>"
            )
        spread = run.results.get("repeats")
        if run.pairwise and isinstance(spread, dict):
            body += (
                f"<p>{esc(run.label)}: {esc(spread.get('games_varying'))} of "
                f"{esc(spread.get('games'))} games got different verdicts from the same judge "
                f"across {esc(spread.get('k'))} repeats.</p>"
            )
        length = run.results.get("length")
        if run.pairwise and isinstance(length, dict):
            body += (
                f"<p>{esc(run.label)}: the longer answer won "
                f"<b>{fmt(length.get('longer_answer_win_share'), 3)}</b> of "
                f"{esc(length.get('decisive_pairs'))} decisive pairs (0.5 = length-blind).</p>"
            )
    return body + _flagged(single, runs)
