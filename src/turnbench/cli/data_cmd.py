"""`turnbench data download` and `turnbench data status`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from turnbench.benchmarks import load_sources
from turnbench.benchmarks.datafiles import DataLocator, file_problem, sha256_file
from turnbench.cli.application import data_app
from turnbench.cli.terminal import cell, console, shown
from turnbench.errors import UserError


@data_app.command("download")
def download(
    benchmark: Annotated[
        list[str] | None,
        typer.Option("--benchmark", "-b", help="Only this benchmark's files (repeatable)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Fetch again even if present.")] = False,
) -> None:
    """Fetch the pinned upstream files into the user cache and verify their sha256."""
    import urllib.error

    locator = DataLocator(datasets=load_sources()[1])
    names = benchmark or sorted(locator.datasets)
    out = console()
    for name in names:
        if name not in locator.datasets:
            raise UserError(
                f"unknown benchmark {name!r}; known: {', '.join(sorted(locator.datasets))}"
            )
        try:
            written = locator.download(name, force=force)
        except (OSError, urllib.error.URLError) as error:
            raise UserError(
                f"downloading {name} from {locator.base_url()} failed: {error}. "
                "Without internet access, copy the data folder from a machine "
                "that has it and point --data-dir or $TURNBENCH_DATA_DIR at it."
            ) from None
        out.print(
            f"{name}: {len(written)} file(s) downloaded and verified, "
            f"{len(locator.datasets[name]) - len(written)} already present "
            f"(in {shown(locator.cache_dir)})"
        )


@data_app.command("status")
def status(
    data_dir: Annotated[Path | None, typer.Option("--data-dir")] = None,
) -> None:
    """Where each data file is found and whether its checksum matches."""
    locator = DataLocator(data_dir, allow_download=False, datasets=load_sources()[1])
    table = Table(title="turnbench data files", title_justify="left")
    for column in ("benchmark", "file", "found in", "sha256"):
        table.add_column(column)
    ((label, directory),) = locator.search_dirs()  # (the named folder alone, else the cache)
    for name, entries in sorted(locator.datasets.items()):
        for entry in entries:
            problem = file_problem(directory / entry.path)
            if problem is not None:
                shown_problem = "missing" if problem == "is missing" else problem
                table.add_row(name, entry.path, cell(f"{label}: {shown_problem}", "red"), "")
                continue
            found = (label, directory / entry.path)
            ok = sha256_file(found[1]) == entry.sha256
            table.add_row(
                name,
                entry.path,
                cell(f"{found[0]} {found[1].parent}"),
                "[green]ok[/green]" if ok else "[red]MISMATCH[/red]",
            )
    console().print(table)
