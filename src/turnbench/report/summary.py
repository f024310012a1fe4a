"""The report's summary section: a row per model, pairwise runs, rankings, what produced
each run's numbers (provenance) and what they cost (`summary.html`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup

from turnbench.prices import format_dollars
from turnbench.report.cells import Badge, Bold, Lines
from turnbench.report.markup import fmt, fmt_ci
from turnbench.report.pairwise_section import ratings_view
from turnbench.report.reading import is_pairwise, model_results, single
from turnbench.report.scores import report_spec
from turnbench.report.templating import render
from turnbench.results.shapes import JudgeOnlyResults, Provenance
from turnbench.store.rundir import Entry, Run


def pairwise_id(runs: list[Run], run: Run) -> str:
    """The id of a pairwise run's section."""
    return f"pairwise-{runs.index(run) + 1}"


def _listed(value: Any) -> str:
    """A summary field as a reader writes it: a list as "full, sharded", not its repr."""
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    return str(value)


def _summary_rows(entries: list[Entry]) -> tuple[list[list[object]], list[str]]:
    """A row per model of a single-grading run, and the benchmarks' notes on `overall`."""
    rows: list[list[object]] = []
    notes: dict[str, str] = {}
    for entry in single(entries):
        results = model_results(entry)
        report = report_spec([entry])
        notes.setdefault(entry.run.benchmark, report.overall_note)
        extra = [
            f"{name}: {_listed(value)}"
            for name in report.summary_fields
            if (value := getattr(results, name, None)) is not None
        ]
        counts = results.counts
        rows.append(
            [
                entry.run.label,
                entry.model,
                Lines([entry.run.benchmark, *extra]),
                Bold(fmt(results.overall)),
                fmt_ci(results.overall_ci95),
                f"{counts.judged} / {counts.expected}",
                counts.failed,
                counts.pending,
                counts.reasks,
                Badge("complete", "ok") if results.complete else Badge("incomplete", "fail"),
                entry.run.judge or "none (scored by the benchmark)",
            ]
        )
    return rows, list(notes.values())


def _sampling(value: dict[str, Any] | None) -> str:
    if value is None:
        return "–"
    shown = {k: v for k, v in value.items() if v not in (None, {}, "auto")}
    return ", ".join(f"{k} {v}" for k, v in shown.items()) or "–"


def _parser(prov: Provenance) -> str:
    """The judge's parser and its re-asks; "–" for a run with no judge (scored from answers)."""
    if prov.parser is None:
        return "–"
    reasks = "–" if prov.max_reasks is None else prov.max_reasks
    return f"{prov.parser} (max re-asks {reasks})"


def _provenance_rows(runs: list[Run]) -> list[list[object]]:
    """What produced each run's numbers: judge, parser, prompts, sampling, data."""
    rows: list[list[object]] = []
    for run in runs:
        prov = run.typed.provenance
        versions = [f"{k}: {v}" for k, v in prov.prompt_versions.items()]
        data = [f"{Path(k).name} {str(v)[:8]}" for k, v in prov.data_sha256.items()]
        rows.append(
            [
                run.label,
                run.judge or "–",
                _parser(prov),
                Lines(versions) if versions else "–",
                _sampling(prov.judge_sampling),
                _sampling(prov.answer_sampling)
                if prov.mode == "run"
                else "answers read from files",
                Lines(data) if data else "–",
                prov.turnbench_version,
            ]
        )
    return rows


def _dollars(value: float | None) -> str:
    return "unknown price" if value is None else format_dollars(float(value))


#: what the spending table calls the roles every run may have (any other role, a driver's
#: own, by its name)
ROLE_LABELS = {"model": "answers", "user": "user turns", "judge": "judgments"}


def _spending_rows(runs: list[Run]) -> list[list[object]]:
    """Tokens and dollars per run and role (by the role's name), from the results'
    `usage`."""
    rows: list[list[object]] = []
    for run in runs:
        for role, usage in run.typed.usage.items():
            if not usage.requests_logged:
                continue
            name = ROLE_LABELS.get(role, role)
            batch = usage.batch_prompt_tokens
            rows.append(
                [
                    run.label,
                    name,
                    usage.requests_logged,
                    f"{usage.prompt_tokens:,}",
                    f"{usage.completion_tokens:,}",
                    f"{batch:,}" if batch else "–",
                    _dollars(usage.cost_usd),
                    usage.prices_as_of or "–",
                ]
            )
    return rows


def summary_section(runs: list[Run], entries: list[Entry]) -> Markup:
    """The body of the summary section."""
    rows, notes = _summary_rows(entries)
    rankings = [
        (run.label, ratings_view(run.typed.ranking))
        for run in runs
        if isinstance(run.typed, JudgeOnlyResults) and isinstance(run.typed.ranking, dict)
    ]
    pairwise = [
        {"label": run.label, "judging": run.typed.provenance.judging, "id": pairwise_id(runs, run)}
        for run in runs
        if is_pairwise(run)
    ]
    return render(
        "summary.html",
        rows=rows,
        notes="; ".join(notes),
        pairwise=pairwise,
        rankings=rankings,
        provenance=_provenance_rows(runs),
        spending=_spending_rows(runs),
    )
