"""What `turnbench run` and `turnbench judge` print: results tables, estimates, warnings."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from turnbench.benchmarks import benchmark_class
from turnbench.dialogue import Estimate
from turnbench.errors import UserError
from turnbench.session import Prepared, RunResult
from turnbench.terminal import cell, counts_line, generic_table, render_pairwise, shown
from turnbench.terminal import console as make_console


def _stderr() -> Console:
    return make_console(stderr=True, soft_wrap=True)


def print_warning(message: str) -> None:
    """A run's warnings go to standard output, beside its progress and results."""
    make_console(soft_wrap=True).print(f"[yellow]warning:[/yellow] {shown(message)}")


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
    if results.get("ranking"):
        from turnbench.ratings import ratings_table

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
    state = "complete" if results["complete"] else "[red]incomplete[/red]"
    if result.status == "fatal" and result.message:
        _stderr().print(f"[bold red]error:[/bold red] {shown(result.message)}")
    elif result.message:
        console.print(f"[red]{shown(result.message)}[/red]")
    console.print(f"Run {state}: results in {shown(result.out / 'results.json')}")
    if not results["complete"]:
        console.print("Re-run the same command to resume; finished work is kept.")
    for warning in results.get("warnings") or []:
        _stderr().print(f"[bold yellow]warning:[/bold yellow] {shown(warning)}")
    warning = results.get("judge_warning")
    if warning:
        console.print(f"\n[yellow]{shown(warning)}[/yellow]")


def print_estimate(console: Console, prepared: Prepared, estimate: Estimate) -> None:
    config = prepared.config
    table = Table(
        title=cell(f"Dry run: {config.benchmark} (nothing will be sent)"), title_justify="left"
    )
    for column in ("stage", "requests", "prompt tokens (est.)", "completion tokens (max)"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    if estimate.answers:
        table.add_row(
            cell(f"answers ({config.model})"),
            str(estimate.answers),
            f"{estimate.answer_prompt_tokens:,}",
            f"{estimate.answer_completion_tokens:,}",
        )
    table.add_row(
        cell(f"judgments ({config.judge})"),
        str(estimate.judgments),
        f"{estimate.judge_prompt_tokens:,}",
        f"{estimate.judge_completion_tokens:,}",
    )
    console.print(table)
    for note in estimate.notes:
        console.print(shown(note))
