"""`turnbench import`: another tool's finished evaluation as a turnbench run (no API call).

The formats are declared by the benchmarks they belong to (`Benchmark.importers`), so a new
benchmark brings its own formats without a change here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.markup import escape

from turnbench.benchmarks.options import parse_assignments
from turnbench.cli.application import app
from turnbench.cli.output import print_results, print_warning


@app.command("import")
def import_(
    source: Annotated[
        Path,
        typer.Argument(
            help="The other tool's files: a file or a folder (structflowbench: one "
            "*_evaluate.json or a folder of them; fastchat: a data/mt_bench folder, or a "
            "fork's in its layout; a benchmark's own format: its page in the docs; csv, "
            "jsonl: a `turnbench export` file).",
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="csv or jsonl (turnbench's exports), fastchat, or a format a benchmark reads "
            "(its page in the docs names it).",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory to write.")],
    judge_name: Annotated[
        str | None,
        typer.Option(
            "--judge-name",
            help="The judge's name in the run (default: named after the files' provenance, "
            "e.g. fastchat/gpt-4).",
        ),
    ] = None,
    mode: Annotated[
        Literal["auto", "single", "pairwise"],
        typer.Option(
            "--mode",
            help="fastchat: single or pairwise judgments (auto: single if the folder has them).",
        ),
    ] = "auto",
    judgments: Annotated[
        Path | None,
        typer.Option(
            "--judgments",
            help="fastchat: the judgment file (or a fork's folder of them, "
            "model_judgment/pairwise/JUDGE/) to import, when model_judgment/ holds several.",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="Pairwise judgments: the baseline model (default: the model every game includes).",
        ),
    ] = None,
    benchmark: Annotated[
        str | None,
        typer.Option(
            "--benchmark",
            "-b",
            help="The benchmark the files belong to, for a format several benchmarks read "
            "(the domain of a benchmark with several, say).",
        ),
    ] = None,
    model_name: Annotated[
        str | None,
        typer.Option(
            "--model-name",
            help="The model's name in the run, for a format that records conversations "
            "(default: as the files name it).",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir", help="Benchmark data folder (else $TURNBENCH_DATA_DIR, the user cache)."
        ),
    ] = None,
    no_download: Annotated[
        bool, typer.Option("--no-download", help="Never fetch data files.")
    ] = False,
    benchmark_option: Annotated[
        list[str] | None,
        typer.Option(
            "--benchmark-option",
            "-B",
            help="A benchmark option as key=value (repeatable), for a benchmark's own format "
            "(e.g. -B attack=NAME: which attack of a folder to import).",
        ),
    ] = None,
) -> None:
    """Turn another tool's finished evaluation (answers and judge verdicts) into a run
    directory that report, compare and export read like any other; nothing is sent."""
    from turnbench.api import EXIT_INCOMPLETE, EXIT_OK, RunResult
    from turnbench.interop.importing import ImportOptions, read_import, write_import

    options = ImportOptions(
        judge_name=judge_name,
        mode=mode,
        judgments=judgments,
        data_dir=data_dir,
        download=not no_download,
        baseline=baseline,
        benchmark=benchmark,
        model_name=model_name,
        benchmark_options=parse_assignments(benchmark_option or []),
    )
    imported = read_import(fmt, source, options)  # everything is validated before writing
    results = write_import(imported, out, warn=print_warning)
    console = Console(highlight=False)
    for note in imported.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    complete = bool(results.get("complete"))
    print_results(
        console,
        RunResult(
            out=out,
            results=results,
            status="finished",
            message=None
            if complete
            else "the imported files do not cover every planned turn (results.json lists "
            "what is pending); importing the same files again adds nothing",
            exit_code=EXIT_OK if complete else EXIT_INCOMPLETE,
            resumable=False,
            pending_hint="no judgment for them in the imported files",
        ),
        type(imported.benchmark),
    )
    raise typer.Exit(EXIT_OK if complete else EXIT_INCOMPLETE)
