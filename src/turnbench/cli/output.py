"""What `turnbench run` and `turnbench judge` print: results tables, estimates, warnings."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from turnbench.api import Prepared, RunResult
from turnbench.benchmarks import Benchmark, benchmark_class
from turnbench.benchmarks.base import generic_table
from turnbench.cli.terminal import RESUMABLE, cell, counts_line, draw_table, render_pairwise, shown
from turnbench.cli.terminal import console as make_console
from turnbench.engine.estimate import Estimate
from turnbench.errors import UserError


def _stderr() -> Console:
    return make_console(stderr=True, soft_wrap=True)


def print_warning(message: str) -> None:
    """A run's warnings go to standard output, beside its progress and results."""
    make_console(soft_wrap=True).print(f"[yellow]warning:[/yellow] {shown(message)}")


def _render(results: dict, cls: type[Benchmark] | None) -> object:
    return draw_table(generic_table(results) if cls is None else cls.terminal_table(results))


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
    """The results of a run of `benchmark` (the class the command ran: its own tables)."""
    results = result.results
    hint = RESUMABLE if result.resumable else (result.pending_hint or "not in the files")
    per_model = list(results["models"].values()) if "models" in results else [results]
    if "position_consistency" in results:  # a pairwise run: one table for all models
        per_model = []
        for renderable in render_pairwise(results, hint):
            console.print(renderable)
    for model_results in per_model:
        console.print(_render(model_results, benchmark))
        console.print(counts_line(model_results, hint))
        for line in trust_lines(model_results):
            console.print(line)
        stress = model_results.get("perturbations")
        if stress:
            _print_stress(console, stress, benchmark.group_kind if benchmark else "group")
    for line in trust_lines(results) if "position_consistency" in results else ():
        console.print(line)
    if results.get("ranking"):
        from turnbench.cli.terminal import ratings_table

        console.print(ratings_table(results["ranking"], "Ranking from per-turn score comparisons"))
    failures = results.get("request_failures") or []
    if failures:
        console.print(
            f"[red]{len(failures)} request(s) failed after all retries[/red]"
            f" (first: {shown(failures[0]['error'])})"
        )
    invalid = results.get("invalid_records") or []
    if invalid:
        console.print(
            f"[yellow]{len(invalid)} record(s) of the log could not be trusted and were left "
            f"out[/yellow] (first: {shown(invalid[0]['reason'])}); their work is redone on resume"
        )
    spent = spent_line(results)
    if spent:
        console.print(shown(spent))
    state = "complete" if results["complete"] else "[red]incomplete[/red]"
    if result.status == "fatal" and result.message:
        _stderr().print(f"[bold red]error:[/bold red] {shown(result.message)}")
    elif result.message:
        console.print(f"[red]{shown(result.message)}[/red]")
    console.print(f"Run {state}: results in {shown(result.out / 'results.json')}")
    if not results["complete"] and result.resumable:
        console.print("Re-run the same command to resume; finished work is kept.")
    said = set(result.warnings)  # printed as they happened (print_warning): not twice
    for warning in results.get("warnings") or []:
        if warning not in said:
            _stderr().print(f"[bold yellow]warning:[/bold yellow] {shown(warning)}")
    warning = results.get("judge_warning")
    if warning:
        console.print(f"\n[yellow]{shown(warning)}[/yellow]")


def _print_stress(console: Console, stress: dict, group_kind: str) -> None:
    """The stress arms' table, and what each arm left out or has still to do."""
    from turnbench.cli.terminal import stress_table

    console.print(stress_table(stress, group_kind))
    for kind, block in stress.items():
        notes = [f"{n} turn(s) not in the arm ({why})" for why, n in block["not_in_arm"].items()]
        if block.get("pending"):
            notes.append(f"[red]{block['pending']} pending[/red] ({RESUMABLE})")
        if block.get("failed"):
            notes.append(f"[yellow]{block['failed']} unparseable[/yellow]")
        if notes:
            console.print(f"{shown(kind)}: " + "; ".join(notes))


def _num(value: object, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "–"


def trust_lines(results: dict) -> list[str]:
    """One line each for a model's panel, repeats, length and flagged answers (when any)."""
    lines = []
    by_judge = results.get("by_judge")
    if isinstance(by_judge, dict) and "overall" in next(iter(by_judge.values()), {}):
        agreement = results.get("judge_agreement") or {}
        scores = ", ".join(f"{shown(j)} {_num(v.get('overall'))}" for j, v in by_judge.items())
        lines.append(
            f"panel: {scores}; Krippendorff's alpha {_num(agreement.get('krippendorff_alpha'), 3)}"
        )
    spread = results.get("repeats")
    if isinstance(spread, dict):
        ranges = ", ".join(_num(v, 3) for v in (spread.get("overall_range") or {}).values())
        lines.append(
            f"repeats: {spread.get('k')} per item; mean item sd "
            f"{_num(spread.get('mean_item_sd'), 3)}; overall range across repeats {ranges}"
        )
    length = results.get("length")
    if isinstance(length, dict) and "spearman" in length:
        lines.append(
            f"length: rank correlation with score {_num(length.get('spearman'), 3)}; "
            f"length-controlled overall {_num(length.get('length_controlled_overall'))} "
            f"(difference {_num(length.get('difference'))})"
        )
    flagged = results.get("flagged_answers") or []
    if flagged:
        lines.append(
            f"[yellow]{len(flagged)} answer(s) flagged by the injection detector[/yellow] "
            "(results.json flagged_answers; consider --judge-guard)"
        )
    return lines


def spent_line(results: dict) -> str | None:
    """'Spent: answers $1.20, judgments $3.40 (prices as of ...)', when anything was."""
    from turnbench.prices import format_dollars

    usage = results.get("usage") or {}
    parts, unanswered, as_of = [], [], None
    for role, name in (("model", "answers"), ("judge", "judgments")):
        row = usage.get(role) or {}
        if row.get("requests_logged"):
            parts.append(f"{name} {format_dollars(row.get('cost_usd'))}")
            as_of = as_of or row.get("prices_as_of")
        attempts = row.get("unanswered_attempts")
        if isinstance(attempts, int) and attempts > 0:
            worst = format_dollars(row.get("unanswered_cost_usd_worst_case"))
            unanswered.append(f"{name} {attempts} (up to {worst})")
            as_of = as_of or row.get("prices_as_of")
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
        batch = {"model": model_batch, "user": False}.get(row.role, judge_batch)
        dollars = estimate_dollars([row], batch=batch, prices=prices)[row.role]
        total = None if total is None or dollars is None else total + dollars
        label = {"model": "answers", "user": "user turns"}.get(row.role, "judgments")
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
    """The estimate per role: the answers' model, then each judge (the judges of a panel
    get the same requests, so each gets its share)."""
    from turnbench.prices import RoleEstimate

    rows = []
    if estimate.answers and prepared.config.model:
        rows.append(
            RoleEstimate(
                "model",
                prepared.config.model,
                estimate.answers,
                estimate.answer_prompt_tokens,
                estimate.answer_completion_tokens,
            )
        )
    if estimate.user_turns and prepared.user is not None:
        rows.append(
            RoleEstimate(
                "user",
                prepared.user.spec,
                estimate.user_turns,
                estimate.user_prompt_tokens,
                estimate.user_completion_tokens,
            )
        )
    judges = prepared.judges or []
    share = max(1, len(judges))
    for judge in judges:
        rows.append(
            RoleEstimate(
                judge.id,
                judge.spec,
                estimate.judgments // share,
                estimate.judge_prompt_tokens // share,
                estimate.judge_completion_tokens // share,
            )
        )
    return rows
