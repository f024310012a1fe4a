"""`turnbench report`: one self-contained HTML file from one or more run directories.

Sections: summary per model, the benchmark's charts, pairwise outcomes, the comparison of
runs (when several models or runs of one benchmark are given), judge diagnostics, and the
dialogue browser. Numbers come from results.json (rebuilt from the log by the run itself);
dialogues, answers and judge replies come from the log. The file needs no network: CSS,
script and charts (SVG data URIs) are inline.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnbench import __version__
from turnbench.benchmarks.base import Chart, ReportSpec, ScoreTable
from turnbench.errors import UserError
from turnbench.journal.logindex import UserTurnDone
from turnbench.report import charts
from turnbench.report.assets import page
from turnbench.report.browser import (
    INLINE_LIMIT,
    PAGE_LIMIT,
    Pages,
    dialogue_browser,
    sample_anchor,
)
from turnbench.report.compare import Comparison, compare_entries
from turnbench.report.markup import badge, esc, fmt, fmt_ci, section, table
from turnbench.report.markup import figure as chart
from turnbench.report.samples import (
    DialogueText,
    Texts,
    merge_texts,
    texts_from_data,
    user_turn_note,
)
from turnbench.report.stress import stress_section
from turnbench.report.trust import trust_section
from turnbench.store.parallel import forked
from turnbench.store.rundir import Entry, Run

MAX_COMPARISONS = 8
TOP_MOVERS = 10

Warn = Callable[[str], None]
# answers + judgments from which the dialogue pages are rendered in a second process
PARALLEL_ITEMS = 4000


@dataclass
class ReportOptions:
    title: str = "turnbench report"
    data_dir: Path | None = None
    seed: int = 0
    resamples: int = 2000
    generated_at: str | None = None  # fixed in tests; now (UTC) otherwise
    notes: list[str] = field(default_factory=list)
    out: Path | None = None  # the report file: a large run's dialogues go to pages beside it
    inline_limit: int = INLINE_LIMIT  # bytes of dialogues kept in the report file itself
    page_limit: int = PAGE_LIMIT  # bytes of dialogues per page file
    pages: Pages | None = None  # set by build_report when `out` is given
    # the dialogue browser section (`turnbench view` shows conversations on pages of their own)
    dialogues: bool = True
    # the href of a sample in the movers table (None: its place in the dialogue browser)
    sample_href: Callable[[Entry, str], str] | None = None
    # dialogues rendered in a second process: None = when the report is large (Linux)
    parallel: bool | None = None


def _keys(entries: list[Entry], field_name: str) -> list[str]:
    """Union of a results mapping's keys over entries, in first-seen order."""
    keys: list[str] = []
    for entry in entries:
        value = entry.results.get(field_name)
        if isinstance(value, dict):
            keys.extend(k for k in value if k not in keys)
    return keys


def _value(entry: Entry, *path: str) -> float | None:
    value: Any = entry.results
    for part in path:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _series(entries: list[Entry], field_name: str, keys: list[str]) -> charts.Series:
    return [(e.label, [_value(e, field_name, k) for k in keys]) for e in entries]


# -- summary --------------------------------------------------------------------------------
def _prompt_versions(run: Run) -> str:
    versions = run.provenance.get("prompt_versions")
    if not isinstance(versions, dict) or not versions:
        return "–"
    return "<br>".join(f"{esc(k)}: {esc(v)}" for k, v in versions.items())


def _listed(value: Any) -> str:
    """A summary field as a reader writes it: a list as "full, sharded", not its repr."""
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    return str(value)


def _summary(entries: list[Entry]) -> str:
    single = [e for e in entries if not e.run.pairwise]
    rows = []
    notes: dict[str, str] = {}
    for entry in single:
        counts = entry.results.get("counts") or {}
        report = _report_spec([entry])
        notes.setdefault(entry.run.benchmark, report.overall_note)
        extra = [
            f"{k}: {_listed(entry.results[k])}"
            for k in report.summary_fields
            if entry.results.get(k) is not None
        ]
        complete = entry.results.get("complete")
        rows.append(
            [
                esc(entry.run.label),
                esc(entry.model),
                esc(entry.run.benchmark) + "".join(f"<br>{esc(x)}" for x in extra),
                f"<b>{fmt(entry.results.get('overall'))}</b>",
                fmt_ci(entry.results.get("overall_ci95")),
                f"{esc(counts.get('judged', '–'))} / {esc(counts.get('expected', '–'))}",
                esc(counts.get("failed", "–")),
                esc(counts.get("pending", "–")),
                esc(counts.get("reasks", "–")),
                badge("complete", "ok") if complete else badge("incomplete", "fail"),
                esc(entry.run.judge),
            ]
        )
    if not rows:
        return ""
    return table(
        [
            "run",
            "model",
            "benchmark",
            "overall",
            "95% CI",
            "judged / expected",
            "unparseable",
            "pending",
            "re-asks",
            "state",
            "judge",
        ],
        rows,
        text_columns=(0, 1, 2, 10),
    ) + (
        '<p class="small muted">overall: '
        + esc("; ".join(notes.values()))
        + ". 95% CI: bootstrap interval over samples, from results.json. "
        "Unparseable judgments and pending requests are counted, never averaged in.</p>"
    )


def _sampling(value: Any) -> str:
    if not isinstance(value, dict):
        return "–"
    shown = {k: v for k, v in value.items() if v not in (None, {}, "auto")}
    return esc(", ".join(f"{k} {v}" for k, v in shown.items()) or "–")


def _parser(prov: dict[str, Any]) -> str:
    """The judge's parser and its re-asks; "–" for a run with no judge (scored from answers)."""
    parser = prov.get("parser")
    if parser is None:
        return "–"
    reasks = prov.get("max_reasks")
    return esc(f"{parser} (max re-asks {'–' if reasks is None else reasks})")


def _provenance(runs: list[Run]) -> str:
    """What produced each run's numbers: judge, parser, prompts, sampling, data."""
    rows = []
    for run in runs:
        prov = run.provenance
        data = prov.get("data_sha256") if isinstance(prov.get("data_sha256"), dict) else {}
        rows.append(
            [
                esc(run.label),
                esc(run.judge),
                _parser(prov),
                _prompt_versions(run),
                _sampling(prov.get("judge_sampling")),
                _sampling(prov.get("answer_sampling"))
                if run.provenance.get("mode") == "run"
                else "answers read from files",
                "<br>".join(f"{esc(Path(k).name)} {esc(str(v)[:8])}" for k, v in data.items())
                or "–",
                esc(prov.get("turnbench_version", "–")),
            ]
        )
    return "<h3>Provenance</h3>" + table(
        [
            "run",
            "judge",
            "parser",
            "prompt versions",
            "judge sampling",
            "answer sampling",
            "data (sha256)",
            "turnbench",
        ],
        rows,
        text_columns=(0, 1, 2, 3, 4, 5, 6),
        wrap_columns=(3, 4, 5, 6),
    )


def _dollars(value: Any) -> str:
    from turnbench.prices import format_dollars

    if isinstance(value, int | float) and not isinstance(value, bool):
        return esc(format_dollars(float(value)))
    return "unknown price"


def _spending(runs: list[Run]) -> str:
    """Tokens and dollars per run and role, from results.json's `usage`."""
    rows = []
    for run in runs:
        usage = run.results.get("usage")
        if not isinstance(usage, dict):
            continue
        for role, name in (("model", "answers"), ("judge", "judgments")):
            row = usage.get(role)
            if not isinstance(row, dict) or not row.get("requests_logged"):
                continue
            batch = row.get("batch_prompt_tokens") or 0
            rows.append(
                [
                    esc(run.label),
                    esc(name),
                    esc(row.get("requests_logged")),
                    esc(f"{row.get('prompt_tokens', 0):,}"),
                    esc(f"{row.get('completion_tokens', 0):,}"),
                    esc(f"{batch:,}") if batch else "–",
                    _dollars(row.get("cost_usd")),
                    esc(row.get("prices_as_of") or "–"),
                ]
            )
    if not rows:
        return ""
    return (
        "<h3>Spent</h3>"
        + table(
            [
                "run",
                "requests",
                "logged",
                "prompt tokens",
                "completion tokens",
                "of them in batches (prompt)",
                "dollars",
                "prices as of",
            ],
            rows,
            text_columns=(0, 1, 7),
        )
        + '<p class="small muted">Every logged request counts (a redone one twice: it was '
        "paid twice); dollars at the price table's prices, batch requests at batch prices. "
        "Unknown price: a model the table does not list (add it with --prices FILE).</p>"
    )


# -- per benchmark: what its ReportSpec declares ---------------------------------------------
def _present(entries: list[Entry], field_name: str, order: tuple[str, ...]) -> list[str]:
    """The keys of a results table, in the declared order, then any others."""
    keys = _keys(entries, field_name)
    ordered = [k for k in order if k in keys]
    return ordered + [k for k in keys if k not in ordered]


def _turn_keys(entries: list[Entry], field_name: str, group: str) -> list[str]:
    found = {t for e in entries for t in ((e.results.get(field_name) or {}).get(group) or {})}
    return sorted(found, key=lambda t: int(t) if str(t).isdigit() else 0)


def _chart(spec: Chart, entries: list[Entry]) -> str:
    if spec.kind in ("radar", "bars"):
        keys = _present(entries, spec.field, spec.order)
        if not keys:
            return ""
        series = _series(entries, spec.field, keys)
        if spec.kind == "radar":
            return chart(charts.radar(keys, series, spec.title, maximum=spec.scale_max), spec.alt)
        picture = charts.bars(
            keys,
            series,
            spec.title,
            ylim=(0.0, spec.scale_max),
            ylabel="share met" if spec.scale_max == 1 else "score",
            horizontal=spec.horizontal,
        )
        return chart(picture, spec.alt)
    groups = _present(entries, spec.field, ())
    if not groups:
        return ""
    if spec.kind == "strips":
        return _strips(spec, entries, groups)
    if spec.kind == "turn_bars":
        panels = [
            (
                entry.label,
                [
                    (f"turn {t}", [_value(entry, spec.field, g, t) for g in groups])
                    for t in spec.order
                ],
            )
            for entry in entries
        ]
        picture = charts.turn_panels(groups, panels, spec.title, maximum=spec.scale_max)
        return chart(picture, spec.alt)
    lines = []
    for group in _present(entries, spec.field, spec.order):
        turns = _turn_keys(entries, spec.field, group)
        if turns:
            lines.append(
                (
                    group,
                    turns,
                    [(e.label, [_value(e, spec.field, group, t) for t in turns]) for e in entries],
                )
            )
    if not lines:
        return ""
    picture = chart(charts.line_panels(lines, spec.title, maximum=spec.scale_max), spec.alt)
    return f'<h3>Turn-wise scores</h3><div class="charts">{picture}</div>'


def _strips(spec: Chart, entries: list[Entry], groups: list[str]) -> str:
    """Each model's strip plot: a row per sample, a dot per repeated score, a colour per
    series (`groups`, e.g. the conversation types)."""
    pictures = []
    for entry in entries:
        table = entry.results.get(spec.field) or {}
        samples = list(dict.fromkeys(k for g in groups for k in (table.get(g) or {})))
        if not samples:
            continue
        series = [
            (group, [list((table.get(group) or {}).get(s) or []) for s in samples])
            for group in groups
        ]
        title = f"{spec.title}: {entry.label}" if len(entries) > 1 else spec.title
        pictures.append(
            chart(charts.strips(samples, series, title, maximum=spec.scale_max), spec.alt)
        )
    return "".join(pictures)


def _row_label(spec: ScoreTable, key: str) -> str:
    note = spec.row_notes.get(key)
    return esc(key) + (f" <span class='muted'>{esc(note)}</span>" if note else "")


def _score_table(spec: ScoreTable, entries: list[Entry]) -> str:
    keys = _present(entries, spec.field, spec.order)
    if not keys:
        return ""
    headers = [spec.row_title]
    rows = []
    if spec.turn_field:
        for entry in entries:
            first, *others = [f"turn {t}" for t in spec.turns]
            headers += [f"{entry.label} {first}", *others, "mean"]
        for key in keys:
            row = [_row_label(spec, key)]
            for entry in entries:
                row += [fmt(_value(entry, spec.turn_field, key, t)) for t in spec.turns]
                row.append(f"<b>{fmt(_value(entry, spec.field, key))}</b>")
            rows.append(row)
        if spec.total_field:
            totals = ["<b>overall</b>"]
            for entry in entries:
                totals += [fmt(_value(entry, spec.total_turn_field or "", t)) for t in spec.turns]
                totals.append(f"<b>{fmt(_value(entry, spec.total_field))}</b>")
            rows.append(totals)
    else:
        headers += [e.label for e in entries]
        rows = [[_row_label(spec, key), *(fmt(_value(e, spec.field, key)) for e in entries)]
                for key in keys]  # fmt: skip
        if spec.total_field:
            rows.append(
                ["<b>overall</b>", *(f"<b>{fmt(_value(e, spec.total_field))}</b>" for e in entries)]
            )
    title = f"<h3>{esc(spec.title)}</h3>" if spec.title else ""
    return title + table(headers, rows)


def _scores(report: ReportSpec, entries: list[Entry]) -> str:
    pictures = [_chart(spec, entries) for spec in report.charts if spec.kind != "turn_lines"]
    body = "".join(p for p in pictures if p)
    body = f'<div class="charts">{body}</div>' if body else ""
    body += "".join(_chart(spec, entries) for spec in report.charts if spec.kind == "turn_lines")
    body += "".join(_score_table(spec, entries) for spec in report.tables)
    return body or _generic(entries)


def _generic(entries: list[Entry]) -> str:
    for name in _keys_with_scores(entries):
        keys = _keys(entries, name)
        bars = charts.bars(keys, _series(entries, name, keys), f"Score per {name[3:]}")
        return f'<div class="charts">{chart(bars, "bar chart of scores")}</div>'
    return '<p class="muted">No per-group scores in these results.</p>'


def _keys_with_scores(entries: list[Entry]) -> list[str]:
    """Results tables of the form {group: score} (`by_...` keys), for unknown benchmarks."""
    names = []
    for entry in entries:
        for name, value in entry.results.items():
            if (
                name.startswith("by_")
                and isinstance(value, dict)
                and value
                and all(v is None or isinstance(v, int | float) for v in value.values())
                and name not in names
            ):
                names.append(name)
    return names


def _report_spec(entries: list[Entry]) -> ReportSpec:
    cls = entries[0].run.benchmark_class if entries else None
    return cls.report if cls is not None else ReportSpec()


# -- pairwise -------------------------------------------------------------------------------
def _pairwise(run: Run) -> str:
    models = run.results.get("models") or {}
    names = [n for n, m in models.items() if isinstance(m, dict)]
    counts = [
        (
            int(models[n].get("win") or 0),
            int(models[n].get("tie") or 0),
            int(models[n].get("loss") or 0),
        )
        for n in names
    ]
    rows = [
        [
            esc(n),
            *(esc(models[n].get(k, "–")) for k in ("win", "loss", "tie", "inconsistent")),
            fmt(models[n].get("win_rate"), 3),
            fmt(models[n].get("win_rate_adjusted"), 3),
        ]
        for n in names
    ]
    consistency = run.results.get("position_consistency")
    body = table(
        ["model", "win", "loss", "tie", "inconsistent", "win rate", "adjusted win rate"], rows
    )
    body += (
        f"<p>Position consistency of the judge: <b>{fmt(consistency, 3)}</b> "
        '<span class="muted small">(share of compared pairs whose two games, with the answers '
        "swapped, agree; ties include the inconsistent pairs)</span></p>"
    )
    share = run.results.get("first_position_win_share")
    if share is not None:
        body += (
            f"<p>First-position win share: <b>{fmt(share, 3)}</b> "
            '<span class="muted small">(of decisive games, the share won by the answer shown '
            "first; 0.5 means no position bias)</span></p>"
        )
    body += _ratings(run.results.get("ratings"))
    if names:
        picture = charts.outcomes(names, counts, f"Pairwise outcomes ({run.judging})")
        body = f'<div class="charts">{chart(picture, "pairwise outcome shares")}</div>' + body
    return body


def _sample_link(benchmark: str, sample: str) -> str:
    target = esc(sample_anchor(benchmark, sample))
    return f'<a class="to-sample" href="#{target}">#{esc(sample)}</a>'


def _rating_interval(interval: Any) -> str:
    if isinstance(interval, list) and len(interval) == 2 and None not in interval:
        return f"[{interval[0]:.0f}, {interval[1]:.0f}]"
    return "–"


def _ratings(ratings: Any) -> str:
    """Bradley-Terry ratings (Elo scale) with their intervals, when the results have them."""
    if not isinstance(ratings, dict) or not isinstance(ratings.get("models"), dict):
        return ""
    rows = [
        [
            esc(name),
            esc(row.get("rank", "–")),
            fmt(row.get("rating"), 0),
            _rating_interval(row.get("ci95")),
            esc(row.get("battles", "–")),
        ]
        for name, row in ratings["models"].items()
        if isinstance(row, dict)
    ]
    if not rows:
        return ""
    return (
        f"<h3>Ratings ({esc(ratings.get('method', ''))}, {esc(ratings.get('scale', ''))})</h3>"
        + table(["model", "rank", "rating", "95% CI", "battles"], rows)
    )


# -- comparison -----------------------------------------------------------------------------
def _comparison(
    comparison: Comparison, sample_href: Callable[[Entry, str], str] | None = None
) -> str:
    kind = comparison.group_kind

    def link(sample: str) -> str:
        if sample_href is None:
            return _sample_link(comparison.benchmark, sample)
        return f'<a href="{esc(sample_href(comparison.new, sample))}">{esc(sample)}</a>'

    overall = comparison.overall
    rows = [
        [
            f"<b>{esc(row.name)}</b>",
            esc(row.n),
            fmt(row.base),
            fmt(row.new),
            f"<b>{row.delta:+.2f}</b>",
            fmt_ci([row.ci_low, row.ci_high]),
            badge(row.verdict.replace("_", " "), row.verdict),
        ]
        for row in [overall, *comparison.rows]
    ]
    delta_chart = charts.deltas(
        [(r.name, r.delta, r.ci_low, r.ci_high, r.verdict) for r in [overall, *comparison.rows]],
        f"{comparison.new.label} minus {comparison.base.label}",
    )
    movers = [
        [
            link(p.sample_id),
            esc(p.group),
            fmt(p.base),
            fmt(p.new),
            f"{p.delta:+.2f}",
        ]
        for p in comparison.movers(TOP_MOVERS)
    ]
    warnings = comparison.warnings()
    notes = "".join(f"<li>{esc(w)}</li>" for w in warnings)
    return (
        f"<h3>{esc(comparison.base.label)} → {esc(comparison.new.label)}</h3>"
        f"<p>Overall: {badge(overall.verdict.replace('_', ' '), overall.verdict)} "
        f"delta {overall.delta:+.3f}, 95% interval {fmt_ci([overall.ci_low, overall.ci_high])}, "
        f"{overall.n} paired samples.</p>"
        + (f'<ul class="small warnings">{notes}</ul>' if notes else "")
        + f'<div class="charts">{chart(delta_chart, "paired differences with intervals")}</div>'
        + table([kind, "samples", "base", "new", "delta", "95% CI", "verdict"], rows)
        + (
            "<h3>Samples that moved most</h3>"
            + table(["sample", kind, "base", "new", "delta"], movers, text_columns=(0, 1))
            if movers
            else ""
        )
    )


def _comparisons(benchmark: str, entries: list[Entry], options: ReportOptions) -> str:
    parts = []
    base = entries[0]
    for new in entries[1 : 1 + MAX_COMPARISONS]:
        try:
            result = compare_entries(base, new, resamples=options.resamples, seed=options.seed)
        except UserError as error:
            parts.append(
                f"<h3>{esc(base.label)} → {esc(new.label)}</h3>"
                f'<p class="muted">Not compared: {esc(error.message)}</p>'
            )
            continue
        parts.append(_comparison(result, options.sample_href))
    if len(entries) > 1 + MAX_COMPARISONS:
        parts.append(
            f'<p class="muted">Only the first {MAX_COMPARISONS} comparisons are shown; '
            "use `turnbench compare` for the others.</p>"
        )
    return (
        f'<p class="small muted">Paired by {esc(benchmark)} sample; the first model is the base. '
        f"Sign-flip test over the paired samples ({options.resamples} patterns, seed "
        f"{options.seed}), "
        "resampling samples within each group; verdict better when the interval is above 0, "
        "worse when below, else no detectable change.</p>" + "".join(parts)
    )


# -- diagnostics ----------------------------------------------------------------------------
def _diagnostics(
    entries: list[Entry], sample_href: Callable[[Entry, str], str] | None = None
) -> str:
    rows = []
    failure_rows = []
    for entry in entries:
        if entry.run.pairwise:
            continue
        counts = entry.results.get("counts") or {}
        judged = list(entry.judgments.values())
        reask_spread = Counter(r.reasks for r in judged)
        spread = ", ".join(f"{n}: {reask_spread[n]}" for n in sorted(reask_spread)) or "–"
        prov = entry.run.provenance
        reported = prov.get("judge_reported") or []
        rows.append(
            [
                esc(entry.label),
                esc(len(judged)),
                esc(counts.get("failed", sum(r.status != "scored" for r in judged))),
                esc(counts.get("reasks", sum(r.reasks for r in judged))),
                esc(spread),
                esc(len(entry.open_failures)),
                esc(", ".join(map(str, reported)) or "–"),
                esc(prov.get("max_reasks", "–")),
            ]
        )
        for (sample, turn), record in sorted(entry.judgments.items()):
            if record.status != "scored":
                failure_rows.append(
                    [
                        esc(entry.label),
                        _sample_link(entry.run.benchmark, sample)
                        if sample_href is None
                        else f'<a href="{esc(sample_href(entry, sample))}">#{esc(sample)}</a>',
                        esc(turn),
                        esc(record.parse_error or "unparseable"),
                        esc(record.reasks),
                    ]
                )
        for (sample, turn), failure in sorted(entry.open_failures.items()):
            failure_rows.append(
                [
                    esc(entry.label),
                    f"#{esc(sample)}",
                    esc(turn),
                    esc(f"request: {failure.error}"),
                    "–",
                ]
            )
    body = (
        ""
        if not rows
        else table(
            [
                "model",
                "judgments in log",
                "unparseable",
                "re-asks",
                "re-asks per judgment (n: count)",
                "requests still failing",
                "judge model reported",
                "max re-asks",
            ],
            rows,
            text_columns=(0, 4, 6),
        )
    )
    body += _pairwise_diagnostics(entries)
    if failure_rows:
        body += "<h3>Failed judgments</h3>" + table(
            ["model", "sample", "turn", "reason", "re-asks"],
            failure_rows[:500],
            text_columns=(0, 1, 3),
            wrap_columns=(3,),
        )
    else:
        body += '<p class="muted">No unparseable judgments and no failing requests.</p>'
    return body


def _pairwise_diagnostics(entries: list[Entry]) -> str:
    runs = list({id(e.run): e.run for e in entries if e.run.pairwise}.values())
    rows = []
    for run in runs:
        counts = run.results.get("counts") or {}
        pairs = counts.get("pairs") if isinstance(counts.get("pairs"), dict) else {}
        verdicts = run.results.get("verdicts") or {}
        rows.append(
            [
                esc(run.label),
                f"{esc(counts.get('judged', '–'))} / {esc(counts.get('expected', '–'))}",
                esc(counts.get("failed", "–")),
                esc(counts.get("reasks", "–")),
                f"{esc(pairs.get('compared', '–'))} / {esc(pairs.get('expected', '–'))}",
                esc(pairs.get("inconsistent", "–")),
                fmt(run.results.get("position_consistency"), 3),
                fmt(run.results.get("first_position_win_share"), 3),
                esc(", ".join(f"{k} {v}" for k, v in verdicts.items()) or "–"),
            ]
        )
    if not rows:
        return ""
    return "<h3>Pairwise judging</h3>" + table(
        [
            "run",
            "games judged / expected",
            "unparseable",
            "re-asks",
            "pairs compared / expected",
            "inconsistent pairs",
            "position consistency",
            "first-position win share",
            "verdicts",
        ],
        rows,
        text_columns=(0, 8),
    )


# -- the page -------------------------------------------------------------------------------
def _texts(benchmark: str, runs: list[Run], options: ReportOptions, warn: Warn) -> Texts:
    from_log: Texts = {}
    for run in runs:
        for sample, questions in run.log.questions.items():
            text = from_log.setdefault(sample, DialogueText(sample))
            for turn, question in questions.items():
                text.questions.setdefault(turn, question)
        for done in run.index.done.values():  # simulated conversations: their user turns
            if isinstance(done, UserTurnDone):
                text = from_log.setdefault(str(done.sample_id), DialogueText(str(done.sample_id)))
                text.users[done.turn] = user_turn_note(
                    done.origin, done.revealed, done.problems, done.ended
                )
                if done.text:
                    text.questions.setdefault(done.turn, done.text)
    from_data, problem = texts_from_data(runs[0].benchmark_class, benchmark, options.data_dir)
    if problem is not None:
        note = f"{benchmark}: dialogue text from the run logs only ({problem})"
        options.notes.append(note)
        warn(note)
    return merge_texts(from_log, from_data)


def build_report(runs: list[Run], options: ReportOptions, warn: Warn | None = None) -> str:
    return page(options.title, report_body(runs, options, warn))


def report_body(runs: list[Run], options: ReportOptions, warn: Warn | None = None) -> str:
    """The report's markup inside <body> (escaped): `turnbench report` frames it as one
    file, `turnbench view` as a page of its own with the same sections."""
    warn = warn or (lambda _message: None)
    if options.out is not None:
        options.pages = Pages(
            options.out, options.title, page, options.inline_limit, options.page_limit
        )
        options.pages.clear()
    entries = [e for run in runs for e in run.entries()]
    if not entries:
        raise UserError("the given run directories hold no model results")
    benchmarks = list(dict.fromkeys(run.benchmark for run in runs))
    generated = options.generated_at or _dt.datetime.now(_dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC"
    )
    sections = []
    toc = [("summary", "Summary")]
    rankings = "".join(
        f"<h3>{esc(run.label)}</h3>{_ratings(run.results.get('ranking'))}"
        for run in runs
        if isinstance(run.results.get("ranking"), dict)
    )
    sections.append(
        section(
            "summary",
            "Summary",
            _summary(entries)
            + _pairwise_summary(runs)
            + rankings
            + _provenance(runs)
            + _spending(runs),
        )
    )
    dialogues = (
        _dialogues_started(runs, entries, benchmarks, options, warn)
        if options.dialogues
        else lambda: ([], [])
    )
    for benchmark in benchmarks:
        single = [e for e in entries if e.run.benchmark == benchmark and not e.run.pairwise]
        if single:
            ident = f"scores-{benchmark}"
            toc.append((ident, f"{benchmark} scores"))
            body = _scores(_report_spec(single), single)
            sections.append(section(ident, f"{benchmark}: scores", body))
        if len(single) > 1:
            ident = f"compare-{benchmark}"
            toc.append((ident, f"{benchmark} comparison"))
            sections.append(
                section(ident, f"{benchmark}: comparison", _comparisons(benchmark, single, options))
            )
    for run in runs:
        if run.pairwise:
            ident = _pairwise_id(runs, run)
            toc.append((ident, f"pairwise: {run.label}"))
            sections.append(section(ident, f"Pairwise: {run.label}", _pairwise(run)))
    toc.append(("judge", "Judge diagnostics"))
    diagnostics = _diagnostics(entries, options.sample_href)
    sections.append(section("judge", "Judge diagnostics", diagnostics))
    trust = trust_section(entries, runs)
    if trust:
        toc.append(("trust", "Judge trust"))
        sections.append(section("trust", "Judge trust", trust))
    stress = stress_section(entries)
    if stress:
        toc.append(("stress", "Stress arms"))
        sections.append(section("stress", "Stress arms", stress))
    browsers, written = dialogues()
    if options.pages is not None:
        options.pages.written[:] = written  # (the pages a child process wrote)
    for benchmark, browser in zip(benchmarks if options.dialogues else [], browsers, strict=True):
        ident = f"dialogues-{benchmark}"
        toc.append((ident, f"{benchmark} dialogues"))
        sections.append(
            section(
                ident,
                f"{benchmark}: dialogues",
                '<p class="small muted">Every sample with each turn\'s question and every '
                "model's answer side by side; open a sample to read it, and the judge's "
                "explanation under each answer. The score filter keeps samples with at least "
                "one turn scored in the range.</p>" + browser,
            )
        )
    notes = [*(w for run in runs for w in run.warnings), *_run_notes(runs), *options.notes]
    warnings_markup = (
        section(
            "notes",
            "Notes",
            "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>",
            extra_class="warnings",
        )
        if notes
        else ""
    )
    runs_list = "".join(
        f"<li><b>{esc(run.label)}</b>: {esc(run.path)} · {esc(run.benchmark)} · judge "
        f"{esc(run.judge)} · {esc(run.judging)}</li>"
        for run in runs
    )
    nav = "".join(f'<a href="#{esc(i)}">{esc(t)}</a>' for i, t in toc)
    header = (
        f'<header class="top"><h1>{esc(options.title)}</h1>'
        f'<div class="muted small">generated {esc(generated)} by turnbench {esc(__version__)}'
        f'</div><ul class="small">{runs_list}</ul><nav class="toc">{nav}</nav></header>'
    )
    return header + "<main>" + warnings_markup + "".join(sections) + "</main>"


def _dialogues_started(
    runs: list[Run],
    entries: list[Entry],
    benchmarks: list[str],
    options: ReportOptions,
    warn: Warn,
) -> Callable[[], tuple[list[str], list[Path]]]:
    """The dialogue browser of each benchmark and the page files written for them, as a
    function to call when they are needed: for a large report they are rendered meanwhile
    in a second process (`store.parallel`). The question texts are read here, so their
    warnings are this process's."""
    jobs = []
    for number, benchmark in enumerate(benchmarks, start=1):
        bench_runs = [run for run in runs if run.benchmark == benchmark]
        bench_entries = [e for e in entries if e.run.benchmark == benchmark]
        texts = _texts(benchmark, bench_runs, options, warn)
        jobs.append((number, benchmark, bench_entries, texts))

    def render() -> tuple[list[str], list[Path]]:
        browsers = [
            dialogue_browser(benchmark, bench_entries, texts, options.pages, number)
            for number, benchmark, bench_entries, texts in jobs
        ]
        return browsers, list(options.pages.written) if options.pages is not None else []

    parallel = options.parallel
    if parallel is None:
        parallel = sum(len(e.answers) + len(e.judgments) for e in entries) >= PARALLEL_ITEMS
    return forked(render) if parallel else render


def _pairwise_id(runs: list[Run], run: Run) -> str:
    return f"pairwise-{runs.index(run) + 1}"


def _pairwise_summary(runs: list[Run]) -> str:
    return "".join(
        f"<p>{esc(run.label)}: pairwise run ({esc(run.judging)}); "
        f'<a href="#{_pairwise_id(runs, run)}">outcomes</a>.</p>'
        for run in runs
        if run.pairwise
    )


def _run_notes(runs: list[Run]) -> list[str]:
    notes = []
    for run in runs:
        if run.results.get("judge_warning"):
            notes.append(f"{run.label}: {run.results['judge_warning']}")
        if run.results.get("complete") is False:
            notes.append(
                f"{run.label} is incomplete (stopped: {run.results.get('stopped') or 'unknown'});"
                " its numbers cover finished work only. Re-run its command to finish it."
            )
        failures = run.results.get("request_failures") or []
        if failures:
            notes.append(f"{run.label}: {len(failures)} request(s) still failing after retries")
    return notes


def write_report(text: str, out: Path) -> Path:
    from turnbench.interop.export import write_text

    write_text(out, text)
    return out


#: the comparison section of one pair of runs (`turnbench view`'s compare page uses it too)
comparison_markup = _comparison
