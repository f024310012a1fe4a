"""The typer application object shared by every command module."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="turnbench",
    help="Evaluate chat models in multi-turn dialogue with an LLM judge.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
data_app = typer.Typer(
    help="Find, download and verify the benchmark data files.", no_args_is_help=True
)
app.add_typer(data_app, name="data")
