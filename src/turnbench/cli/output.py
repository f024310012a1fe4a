"""What `turnbench run` and `turnbench judge` print: results tables, estimates, warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from turnbench.api import Prepared, RunResult
from turnbench.benchmarks import Benchmark, benchmark_class
from turnbench.benchmarks.base import generic_table
from turnbench.cli.terminal import RESUMABLE, cell, counts_line, draw_table, render_pairwise, shown
from turnbench.cli.terminal import console as make_console
from turnbench.engine.estimate import Estimate
from turnbench.errors import UserError

if TYPE_CHECKING:  # (imported where results are printed: a run's requests start first)
    from turnbench.results.shapes import ModelResults, PairwiseResults, ResultsModel
    from turnbench.results.stress import ArmResults


def _stderr() -> Console:
    return make_console(stderr=True, soft_wrap=True)


def print_warning(message: str) -> None:
    """A run's warnings go to standard output, beside its progress and results."""
    make_console(soft_wrap=True).print(f"[yellow]warning:[/yellow] {shown(message)}")


def _render(results: ModelResults, cls: type[Benchmark] | None) -> object:
    """A model's table as its benchmark declares it (`terminal_table` reads a mapping:
    the model's results.json entries)."""
    fields = results.model_dump(exclude_unset=True)
    return draw_table(generic_table(fields) if cls is None else cls.terminal_table(fields))


def named_class(reference: str) -> type[Benchmark] | None:
    """The class the user's `--benchmark` names (None: the generic table). Never the one a
    results file names: a run directory is data, and its `benchmark_ref` is not imported."""
    try:
        return benchmark_class(reference)
    except UserError:
        return None


def print_results(
    console: Console, result: RunResult, benchmark: type[Benchmark] | None = None
) -> None:
    """The results of a run of `benchmark` (the class the command ran: its own tables),
    read as their typed model: a pairwise run is a PairwiseResults."""
    from turnbench.results.shapes import JudgeOnlyResults, PairwiseResults, SingleRunResults

    results = result.typed()
    hint = RESUMABLE if result.resumable else (result.pending_hint or "not in the files")
    per_model: list[ModelResults] = []
    if isinstance(results, PairwiseResults):  # one table for all models
        for renderable in render_pairwise(results, hint):
            console.print(renderable)
    elif isinstance(results, JudgeOnlyResults):
        per_model = list(results.models.values())
    else:
        per_model = [results]
    for model_results in per_model:
        console.print(_render(model_results, benchmark))
        console.print(counts_line(model_results, hint))
        for line in trust_lines(model_results):
            console.print(line)
        if isinstance(model_results, SingleRunResults) and model_results.perturbations:
            group_kind = benchmark.group_kind if benchmark else "group"
            _print_stress(console, model_results.perturbations, group_kind)
    if isinstance(results, PairwiseResults):
        for line in trust_lines(results):
            console.print(line)
    if isinstance(results, JudgeOnlyResults) and results.ranking:
        from turnbench.cli.terminal import ratings_table

        console.print(ratings_table(results.ranking, "Ranking from per-turn score comparisons"))
    failures = results.request_failures
    if failures:
        console.print(
            f"[red]{len(failures)} request(s) failed after all retries[/red]"
            f" (first: {shown(failures[0].error)})"
        )
    invalid = results.invalid_records
    if invalid:
        console.print(
            f"[yellow]{len(invalid)} record(s) of the log could not be trusted and were left "
            f"out[/yellow] (first: {shown(invalid[0].reason)}); their work is redone on resume"
        )
    spent = spent_line(results)
    if spent:
        console.print(shown(spent))
    state = "complete" if results.complete else "[red]incomplete[/red]"
    if result.status == "fatal" and result.message:
        _stderr().print(f"[bold red]error:[/bold red] {shown(result.message)}")
    elif result.message:
        console.print(f"[red]{shown(result.message)}[/red]")
    console.print(f"Run {state}: results in {shown(result.out / 'results.json')}")
    if not results.complete and result.resumable:
        console.print("Re-run the same command to resume; finished work is kept.")
    said = set(result.warnings)  # printed as they happened (print_warning): not twice
    for warning in results.warnings:
        if warning not in said:
            _stderr().print(f"[bold yellow]warning:[/bold yellow] {shown(warning)}")
    if results.judge_warning:
        console.print(f"\n[yellow]{shown(results.judge_warning)}[/yellow]")


def _print_stress(console: Console, stress: dict[str, ArmResults], group_kind: str) -> None:
    """The stress arms' table, and what each arm left out or has still to do."""
    from turnbench.cli.terminal import stress_table

    console.print(stress_table(stress, group_kind))
    for kind, arm in stress.items():
        notes = [f"{n} turn(s) not in the arm ({why})" for why, n in arm.not_in_arm.items()]
        if arm.pending:
            notes.append(f"[red]{arm.pending} pending[/red] ({RESUMABLE})")
        if arm.failed:
            notes.append(f"[yellow]{arm.failed} unparseable[/yellow]")
        if notes:
            console.print(f"{shown(kind)}: " + "; ".join(notes))


def _num(value: object, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "–"


def trust_lines(results: ModelResults | PairwiseResults) -> list[str]:
    """One line each for a panel, repeats, length and flagged answers (when any): a model's,
    or a pairwise run's (whose panel and length blocks have no such line)."""
    from turnbench.trust.models import JudgeScores, LengthScores, RepeatSpread

    lines = []
    by_judge = results.by_judge or {}
    if isinstance(next(iter(by_judge.values()), None), JudgeScores):
        agreement = results.judge_agreement
        alpha = agreement.krippendorff_alpha if agreement is not None else None
        scores = ", ".join(f"{shown(j)} {_num(v.overall)}" for j, v in by_judge.items())
        lines.append(f"panel: {scores}; Krippendorff's alpha {_num(alpha, 3)}")
    spread = results.repeats
    if spread is not None:
        single = isinstance(spread, RepeatSpread)
        ranges = ", ".join(_num(v, 3) for v in spread.overall_range.values()) if single else ""
        sd = spread.mean_item_sd if single else None
        lines.append(
            f"repeats: {spread.k} per item; mean item sd {_num(sd, 3)}; overall range across "
            f"repeats {ranges}"
        )
    length = results.length
    if isinstance(length, LengthScores):
        lines.append(
            f"length: rank correlation with score {_num(length.spearman, 3)}; "
            f"length-controlled overall {_num(length.length_controlled_overall)} "
            f"(difference {_num(length.difference)})"
        )
    flagged = results.flagged_answers or []
    if flagged:
        lines.append(
            f"[yellow]{len(flagged)} answer(s) flagged by the injection detector[/yellow] "
            "(results.json flagged_answers; consider --judge-guard)"
        )
    return lines


def spent_line(results: ResultsModel) -> str | None:
    """'Spent: answers $1.20, judgments $3.40 (prices as of ...)', when anything was."""
    from turnbench.prices import format_dollars

    parts, unanswered, as_of = [], [], None
    for role, name in (("model", "answers"), ("judge", "judgments")):
        usage = results.usage.get(role)
        if usage is None:
            continue
        if usage.requests_logged:
            parts.append(f"{name} {format_dollars(usage.cost_usd)}")
            as_of = as_of or usage.prices_as_of
        if usage.unanswered_attempts > 0:
            worst = format_dollars(usage.unanswered_cost_usd_worst_case)
            unanswered.append(f"{name} {usage.unanswered_attempts} (up to {worst})")
            as_of = as_of or usage.prices_as_of
    if not parts and not unanswered:
        return None
    line = f"Spent: {', '.join(parts) or 'nothing logged'} (prices as of {as_of})"
    if unanswered:
        line += (
            f"; attempts that returned nothing, which a provider may bill: {', '.join(unanswered)}"
        )
    return line


def print_estimate(
    console: Console,
    prepared: Prepared,
    estimate: Estimate,
    *,
    judge_batch: bool = False,
    model_batch: bool = False,
) -> None:
    from turnbench.prices import estimate_dollars, format_dollars, load_prices

    config = prepared.config
    prices = prepared.prices or load_prices()
    table = Table(
        title=cell(f"Dry run: {config.benchmark} (nothing will be sent)"), title_justify="left"
    )
    columns = ("stage", "requests", "prompt tokens (est.)", "completion tokens (max)", "dollars")
    for column in columns:
        table.add_column(column, justify="left" if column == "stage" else "right")
    total: float | None = 0.0
    for row in estimate_rows(prepared, estimate):
        judged = row.role in estimate.judges
        batch = model_batch if row.role == "model" else judge_batch and judged
        dollars = estimate_dollars([row], batch=batch, prices=prices)[row.role]
        total = None if total is None or dollars is None else total + dollars
        label = {"model": "answers", "user": "user turns"}.get(
            row.role, "judgments" if judged else row.role
        )
        table.add_row(
            f"{label} ({shown(row.model)})" + (" [batch]" if batch else ""),
            f"{row.requests:,}",
            f"{row.prompt_tokens:,}",
            f"{row.completion_tokens:,}",
            shown(format_dollars(dollars)),
        )
    console.print(table)
    console.print(
        f"Estimated dollars in all: {shown(format_dollars(total))} (upper bound: every "
        "completion at its token limit, no prompt-cache discount; prices as of "
        f"{shown(str(prices.as_of))}; a model without a price shows 'unknown price': add it "
        "with --prices FILE)"
    )
    for note in estimate.notes:
        console.print(shown(note))


def estimate_rows(prepared: Prepared, estimate: Estimate) -> list:
    """The estimate per role, by name: the answers' model, the simulated user, each role a
    driver names, then each judge, each priced by the model that plays it."""
    from turnbench.prices import RoleEstimate

    specs = {name: role.spec for name, role in prepared.roles.items()}
    if prepared.config.model:
        specs.setdefault("model", prepared.config.model)
    return [
        RoleEstimate(name, specs.get(name, name), count.requests, count.prompt_tokens,
                     count.completion_tokens)
        for name, count in estimate.roles.items()
        if count.requests
    ]  # fmt: skip
