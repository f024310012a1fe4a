"""`turnbench rank`: Bradley-Terry ratings of the models of several finished runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from turnbench.cli.application import app
from turnbench.cli.terminal import console

DEFAULT_RESAMPLES, DEFAULT_SEED = 1000, 0  # turnbench.stats.ratings' defaults (numpy loads lazily)


@app.command("rank")
def rank_command(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (same benchmark and judge).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    resamples: Annotated[
        int, typer.Option("--resamples", min=0, help="Bootstrap resamples (0: no intervals).")
    ] = DEFAULT_RESAMPLES,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = DEFAULT_SEED,
) -> None:
    """Rank models of several runs with Bradley-Terry ratings and bootstrap intervals."""
    from turnbench.cli.terminal import ratings_table
    from turnbench.results.ranking import rank_runs

    report = rank_runs(runs, resamples=resamples, seed=seed)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    console().print(
        ratings_table(report["ratings"], f"{report['benchmark']} ranking, judge {report['judge']}")
    )
    typer.echo(f"from {report['source']}; {report['ratings']['battles']} battles")
