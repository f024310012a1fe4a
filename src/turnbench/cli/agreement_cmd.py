"""`turnbench agreement`: judge-vs-human and human-vs-human agreement on pairwise votes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from turnbench.cli.app import app
from turnbench.cli.terminal import cell, console
from turnbench.errors import UserError


@app.command("agreement")
def agreement_command(
    votes: Annotated[
        list[Path] | None,
        typer.Option(
            "--votes",
            help="Vote file in the format of the HF dataset lmsys/mt_bench_human_judgments "
            "(JSON list or JSON lines); repeatable.",
        ),
    ] = None,
    run: Annotated[
        list[Path] | None,
        typer.Option(
            "--run",
            help="A turnbench pairwise run directory; its judge votes under its judge spec. "
            "Repeatable.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON instead of a table.")
    ] = False,
) -> None:
    """Agreement between judges per turn, setups S1 (ties kept) and S2 (ties dropped)."""
    from turnbench.interop.votes import run_votes
    from turnbench.stats.vote_agreement import SETUPS, agreement, load_votes

    files, runs = votes or [], run or []
    if not files and not runs:
        raise UserError("turnbench agreement needs at least one --votes FILE or --run DIR")
    collected = [vote for path in files for vote in load_votes(path)]
    seen_judges = {vote.judge for vote in collected}
    for directory in runs:
        from_run = run_votes(directory)
        names = {vote.judge for vote in from_run}
        clash = names & seen_judges
        if clash:
            raise UserError(
                f"--run {directory}: its judge {', '.join(sorted(clash))} already votes in "
                "another --votes file or --run; compare runs of different judges"
            )
        if not from_run:
            raise UserError(f"--run {directory}: no comparison with both games judged yet")
        seen_judges |= names
        collected += from_run
    report = agreement(collected)
    if not report:
        raise UserError(
            "nothing to compare: the votes come from one judge with at most one vote per "
            f"comparison (judges found: {', '.join(sorted(seen_judges)) or 'none'})"
        )
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    console().print(agreement_table(report, SETUPS))


def agreement_table(report: dict[str, Any], setups: tuple[str, ...]) -> Table:
    """A rich table of an agreement report (rounded for display only)."""
    table = Table(title="Judge agreement (S1: ties kept, S2: ties dropped)", title_justify="left")
    table.add_column("judges", overflow="fold")
    table.add_column("turn", justify="right")
    for setup in setups:
        table.add_column(f"{setup} agree", justify="right")
        table.add_column(f"{setup} kappa", justify="right")
    for pair, by_turn in report.items():
        for turn, setups in by_turn.items():
            cells = []
            for setup in setups:
                stats = setups[setup]
                rate = "" if stats["rate"] is None else f" ({stats['rate']:.1%})"
                kappa = "-" if stats["kappa"] is None else f"{stats['kappa']:.3f}"
                cells += [f"{stats['agree']}/{stats['total']}{rate}", kappa]
            table.add_row(cell(pair), cell(turn), *cells)
    return table
