"""The typer application object shared by every command module."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    name="turnbench",
    help="Evaluate chat models in multi-turn dialogue with an LLM judge.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from turnbench import __version__

        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Evaluate chat models in multi-turn dialogue with an LLM judge."""


data_app = typer.Typer(
    help="Find, download and verify the benchmark data files.", no_args_is_help=True
)
app.add_typer(data_app, name="data")
