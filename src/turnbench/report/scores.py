"""A benchmark's scores section: the charts and tables its `ReportSpec` declares, drawn from
the models' typed results (`scores.html`); a benchmark that declares none gets a bar chart
of its first `by_...` table."""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup

from turnbench.benchmarks.base import Chart, ReportSpec, ScoreTable
from turnbench.report import charts
from turnbench.report.cells import Bold, Noted
from turnbench.report.markup import fmt
from turnbench.report.reading import model_results, number, table
from turnbench.report.templating import render
from turnbench.store.rundir import Entry

Figure = tuple[str, str]  # (the chart as a data: URI, its alt text)


@dataclass
class TableView:
    """A score table as the template draws it."""

    title: str | None
    headers: list[str]
    rows: list[list[object]] = field(default_factory=list)


def report_spec(entries: list[Entry]) -> ReportSpec:
    cls = entries[0].run.benchmark_class if entries else None
    return cls.report if cls is not None else ReportSpec()


def _keys(entries: list[Entry], name: str) -> list[str]:
    """Union of a results table's keys over entries, in first-seen order."""
    keys: list[str] = []
    for entry in entries:
        value = table(entry, name)
        if isinstance(value, dict):
            keys.extend(k for k in value if k not in keys)
    return keys


def _present(entries: list[Entry], name: str, order: tuple[str, ...]) -> list[str]:
    """The keys of a results table, in the declared order, then any others."""
    keys = _keys(entries, name)
    ordered = [k for k in order if k in keys]
    return ordered + [k for k in keys if k not in ordered]


def _series(entries: list[Entry], name: str, keys: list[str]) -> charts.Series:
    return [(e.label, [number(e, name, k) for k in keys]) for e in entries]


def _turn_keys(entries: list[Entry], name: str, group: str) -> list[str]:
    found = {t for e in entries for t in ((table(e, name) or {}).get(group) or {})}
    return sorted(found, key=lambda t: int(t) if str(t).isdigit() else 0)


def _figures(spec: Chart, entries: list[Entry]) -> list[Figure]:
    """The pictures of one declared chart (a strip plot has one per model)."""
    if spec.kind in ("radar", "bars"):
        keys = _present(entries, spec.field, spec.order)
        if not keys:
            return []
        series = _series(entries, spec.field, keys)
        if spec.kind == "radar":
            return [(charts.radar(keys, series, spec.title, maximum=spec.scale_max), spec.alt)]
        picture = charts.bars(
            keys,
            series,
            spec.title,
            ylim=(0.0, spec.scale_max),
            ylabel="share met" if spec.scale_max == 1 else "score",
            horizontal=spec.horizontal,
        )
        return [(picture, spec.alt)]
    groups = _present(entries, spec.field, ())
    if not groups:
        return []
    if spec.kind == "strips":
        return _strips(spec, entries, groups)
    if spec.kind == "turn_bars":
        panels = [
            (
                entry.label,
                [
                    (f"turn {t}", [number(entry, spec.field, g, t) for g in groups])
                    for t in spec.order
                ],
            )
            for entry in entries
        ]
        picture = charts.turn_panels(groups, panels, spec.title, maximum=spec.scale_max)
        return [(picture, spec.alt)]
    lines = []
    for group in _present(entries, spec.field, spec.order):
        turns = _turn_keys(entries, spec.field, group)
        if turns:
            lines.append(
                (
                    group,
                    turns,
                    [(e.label, [number(e, spec.field, group, t) for t in turns]) for e in entries],
                )
            )
    if not lines:
        return []
    return [(charts.line_panels(lines, spec.title, maximum=spec.scale_max), spec.alt)]


def _strips(spec: Chart, entries: list[Entry], groups: list[str]) -> list[Figure]:
    """Each model's strip plot: a row per sample, a dot per repeated score, a colour per
    series (`groups`, e.g. the conversation types)."""
    pictures = []
    for entry in entries:
        found = table(entry, spec.field) or {}
        samples = list(dict.fromkeys(k for g in groups for k in (found.get(g) or {})))
        if not samples:
            continue
        series = [
            (group, [list((found.get(group) or {}).get(s) or []) for s in samples])
            for group in groups
        ]
        title = f"{spec.title}: {entry.label}" if len(entries) > 1 else spec.title
        pictures.append((charts.strips(samples, series, title, maximum=spec.scale_max), spec.alt))
    return pictures


def _score_table(spec: ScoreTable, entries: list[Entry]) -> TableView | None:
    keys = _present(entries, spec.field, spec.order)
    if not keys:
        return None
    view = TableView(spec.title, [spec.row_title])
    if spec.columns:
        several = len(entries) > 1
        for entry in entries:
            view.headers += [f"{entry.label} {h}" if several else h for _, h in spec.columns]
        for key in keys:
            row = [Noted(key, spec.row_notes.get(key))]
            for entry in entries:
                row += [fmt(number(entry, spec.field, key, column)) for column, _ in spec.columns]
            view.rows.append(row)
        if spec.total_columns:
            totals = [Bold("overall")]
            for entry in entries:
                totals += [Bold(fmt(number(entry, column))) for column, _ in spec.columns]
            view.rows.append(totals)
    elif spec.turn_field:
        for entry in entries:
            first, *others = [f"turn {t}" for t in spec.turns]
            view.headers += [f"{entry.label} {first}", *others, "mean"]
        for key in keys:
            row: list[object] = [Noted(key, spec.row_notes.get(key))]
            for entry in entries:
                row += [fmt(number(entry, spec.turn_field, key, t)) for t in spec.turns]
                row.append(Bold(fmt(number(entry, spec.field, key))))
            view.rows.append(row)
        if spec.total_field:
            totals: list[object] = [Bold("overall")]
            for entry in entries:
                turn_field = spec.total_turn_field or ""
                totals += [fmt(number(entry, turn_field, t)) for t in spec.turns]
                totals.append(Bold(fmt(number(entry, spec.total_field))))
            view.rows.append(totals)
    else:
        view.headers += [e.label for e in entries]
        for key in keys:
            cells = [fmt(number(e, spec.field, key)) for e in entries]
            view.rows.append([Noted(key, spec.row_notes.get(key)), *cells])
        if spec.total_field:
            total = spec.total_field
            view.rows.append([Bold("overall"), *(Bold(fmt(number(e, total))) for e in entries)])
    return view


def _tables_with_scores(entries: list[Entry]) -> list[str]:
    """Results tables of the form {group: score} (`by_...` keys), for unknown benchmarks."""
    names = []
    for entry in entries:
        for name, value in (model_results(entry).model_extra or {}).items():
            if (
                name.startswith("by_")
                and isinstance(value, dict)
                and value
                and all(v is None or isinstance(v, int | float) for v in value.values())
                and name not in names
            ):
                names.append(name)
    return names


def _generic(entries: list[Entry]) -> list[Figure]:
    """One bar chart of the first {group: score} table (none: no per-group scores)."""
    for name in _tables_with_scores(entries):
        keys = _keys(entries, name)
        bars = charts.bars(keys, _series(entries, name, keys), f"Score per {name[3:]}")
        return [(bars, "bar chart of scores")]
    return []


def scores_section(entries: list[Entry]) -> Markup:
    """The body of one benchmark's scores section (its single-grading entries)."""
    spec = report_spec(entries)
    figures = [f for c in spec.charts if c.kind != "turn_lines" for f in _figures(c, entries)]
    turn_lines = [f for c in spec.charts if c.kind == "turn_lines" for f in _figures(c, entries)]
    tables = [t for t in (_score_table(s, entries) for s in spec.tables) if t is not None]
    generic = None if figures or turn_lines or tables else _generic(entries)
    return render(
        "scores.html", figures=figures, turn_lines=turn_lines, tables=tables, generic=generic
    )
