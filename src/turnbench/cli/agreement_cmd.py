"""`turnbench agreement`: judge-vs-human and human-vs-human agreement on pairwise votes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from turnbench.cli.application import app
from turnbench.cli.terminal import cell, console
from turnbench.errors import UserError


@app.command("agreement")
def agreement_command(
    votes: Annotated[
        list[Path] | None,
        typer.Option(
            "--votes",
            help="Vote file in the format of the HF dataset lmsys/mt_bench_human_judgments "
            "(JSON list or JSON lines), or the SQLite votes file of `turnbench view "
            "--annotate` or a team's own (a votes table of annotator, sample_id, turn, "
            "model_a, model_b, winner and a timestamp; annotators pooled as `human`); "
            "repeatable.",
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
    from turnbench.interop.votes import run_judging, run_scores, run_votes
    from turnbench.stats.vote_agreement import SETUPS, agreement, load_votes, score_agreement
    from turnbench.view.votes_db import (
        is_sqlite_file,
        read_votes,
        votes_as_pairs,
        votes_as_scores,
    )

    files, runs = votes or [], run or []
    if not files and not runs:
        raise UserError("turnbench agreement needs at least one --votes FILE or --run DIR")
    collected, scores = [], []
    for path in files:
        if is_sqlite_file(path):  # human votes of `turnbench view --annotate` (or a team's)
            stored = read_votes(path)  # (one read-only connection)
            collected += votes_as_pairs(stored)
            scores += votes_as_scores(stored)
        else:
            collected += load_votes(path)
    seen_judges = {vote.judge for vote in collected} | {score.judge for score in scores}
    for directory in runs:
        if scores and run_judging(directory) == "single":
            from_scores = run_scores(directory)
            names = {score.judge for score in from_scores}
            if names & seen_judges:
                raise UserError(
                    f"--run {directory}: its judge {', '.join(sorted(names & seen_judges))} "
                    "already scores in another --votes file or --run"
                )
            if not from_scores:
                raise UserError(f"--run {directory}: no scored judgment yet")
            seen_judges |= names
            scores += from_scores
            continue
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
    report: dict[str, Any] = agreement(collected)
    scored = score_agreement(scores) if scores else {}
    if not report and not scored:
        raise UserError(
            "nothing to compare: the votes come from one judge with at most one vote per "
            f"comparison (judges found: {', '.join(sorted(seen_judges)) or 'none'})"
        )
    if as_json:
        # "scores" cannot be a judge pair's key (those hold "|" or are JSON lists)
        typer.echo(json.dumps({**report, **({"scores": scored} if scored else {})}, indent=2))
        return
    if report:
        console().print(agreement_table(report, SETUPS))
    if scored:
        console().print(score_table(scored))


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


def score_table(report: dict[str, Any]) -> Table:
    """A rich table of 1-10 score agreement (single grading), rounded for display only."""
    table = Table(
        title="Score agreement (1-10; exact on rounded scores, within one point)",
        title_justify="left",
    )
    for name in ("judges", "turn", "exact", "within 1", "mean |diff|", "kappa"):
        table.add_column(name, justify="left" if name == "judges" else "right", overflow="fold")
    for pair, by_turn in report.items():
        for turn, stats in by_turn.items():
            rate = "" if stats["rate"] is None else f" ({stats['rate']:.1%})"
            diff = stats["mean_abs_diff"]
            table.add_row(
                cell(pair),
                cell(turn),
                f"{stats['agree']}/{stats['total']}{rate}",
                f"{stats['within_1']}/{stats['total']}",
                "-" if diff is None else f"{diff:.2f}",
                "-" if stats["kappa"] is None else f"{stats['kappa']:.3f}",
            )
    return table
