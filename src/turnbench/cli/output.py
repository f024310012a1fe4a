"""What `turnbench run` and `turnbench judge` print: results tables, estimates, warnings."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from turnbench.benchmarks import benchmark_class
from turnbench.dialogue import Estimate
from turnbench.errors import UserError
from turnbench.session import Prepared, RunResult
from turnbench.terminal import counts_line, generic_table, render_pairwise


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def print_warning(message: str) -> None:
    """A run's warnings go to standard output, beside its progress and results."""
    Console(highlight=False, soft_wrap=True).print(f"[yellow]warning:[/yellow] {escape(message)}")


def _render(results: dict) -> object:
    reference = (results.get("provenance") or {}).get("benchmark_ref") or results["benchmark"]
    try:
        cls = benchmark_class(str(reference))
    except UserError:
        return generic_table(results)
    return cls.render_table(results)


def print_results(console: Console, result: RunResult) -> None:
    results = result.results
    per_model = list(results["models"].values()) if "models" in results else [results]
    if "position_consistency" in results:  # a pairwise run: one table for all models
        per_model = []
        for renderable in render_pairwise(results):
            console.print(renderable)
    for model_results in per_model:
        console.print(_render(model_results))
        console.print(counts_line(model_results))
        for line in trust_lines(model_results):
            console.print(line)
    for line in trust_lines(results) if "position_consistency" in results else ():
        console.print(line)
    if results.get("ranking"):
        from turnbench.ratings import ratings_table

        console.print(ratings_table(results["ranking"], "Ranking from per-turn score comparisons"))
    failures = results.get("request_failures") or []
    if failures:
        console.print(
            f"[red]{len(failures)} request(s) failed after all retries[/red]"
            f" (first: {escape(failures[0]['error'])})"
        )
    invalid = results.get("invalid_records") or []
    if invalid:
        console.print(
            f"[yellow]{len(invalid)} record(s) of the log could not be trusted and were left "
            f"out[/yellow] (first: {escape(invalid[0]['reason'])}); their work is redone on resume"
        )
    state = "complete" if results["complete"] else "[red]incomplete[/red]"
    if result.status == "fatal" and result.message:
        _stderr().print(f"[bold red]error:[/bold red] {escape(result.message)}")
    elif result.message:
        console.print(f"[red]{escape(result.message)}[/red]")
    console.print(f"Run {state}: results in {escape(str(result.out / 'results.json'))}")
    if not results["complete"]:
        console.print("Re-run the same command to resume; finished work is kept.")
    warning = results.get("judge_warning")
    if warning:
        console.print(f"\n[yellow]{escape(warning)}[/yellow]")


def _num(value: object, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "–"


def trust_lines(results: dict) -> list[str]:
    """One line each for a model's panel, repeats, length and flagged answers (when any)."""
    lines = []
    by_judge = results.get("by_judge")
    if isinstance(by_judge, dict) and "overall" in next(iter(by_judge.values()), {}):
        agreement = results.get("judge_agreement") or {}
        shown = ", ".join(f"{escape(j)} {_num(v.get('overall'))}" for j, v in by_judge.items())
        lines.append(
            f"panel: {shown}; Krippendorff's alpha {_num(agreement.get('krippendorff_alpha'), 3)}"
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


def print_estimate(console: Console, prepared: Prepared, estimate: Estimate) -> None:
    config = prepared.config
    table = Table(
        title=f"Dry run: {escape(config.benchmark)} (nothing will be sent)", title_justify="left"
    )
    for column in ("stage", "requests", "prompt tokens (est.)", "completion tokens (max)"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    if estimate.answers:
        table.add_row(
            f"answers ({escape(str(config.model))})",
            str(estimate.answers),
            f"{estimate.answer_prompt_tokens:,}",
            f"{estimate.answer_completion_tokens:,}",
        )
    table.add_row(
        f"judgments ({escape(config.judge)})",
        str(estimate.judgments),
        f"{estimate.judge_prompt_tokens:,}",
        f"{estimate.judge_completion_tokens:,}",
    )
    console.print(table)
    for note in estimate.notes:
        console.print(escape(note))
