"""`turnbench report`, `turnbench compare` and `turnbench export`: reading finished runs.

None of these sends a request or changes a run directory's log. Heavy imports (numpy,
the report modules) happen inside the commands, so CLI start-up stays fast.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console

from turnbench.cli.application import app
from turnbench.cli.terminal import console, shown
from turnbench.errors import UserError

if TYPE_CHECKING:
    from turnbench.benchmarks.recorded import NamedBenchmark
    from turnbench.store.rundir import Entry

EXIT_WORSE = 1
EXIT_LOSSY = 1  # an export written, but without everything its import would need

RunDir = Annotated[Path, typer.Argument(help="A run directory (holds results.json and log.jsonl).")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of the paired bootstrap.")]
Resamples = Annotated[
    int,
    typer.Option(
        "--resamples", min=100, help="Random sign patterns of the paired test (intervals)."
    ),
]


ReadBenchmark = Annotated[
    str | None,
    typer.Option(
        "--benchmark",
        help="The plug-in benchmark (package.module:ClassName) a run used. Code a run "
        "directory names is never imported, so a plug-in's runs are read only with it named "
        "here; it must be the one the run recorded.",
    ),
]


def _named(benchmark: str | None) -> NamedBenchmark | None:
    """The benchmark the user named for reading runs (imported: the user's own choice)."""
    if benchmark is None:
        return None
    from turnbench.benchmarks.recorded import named_benchmark

    return named_benchmark(benchmark)


def _stderr() -> Console:
    return console(stderr=True, soft_wrap=True)


def _warn(message: str) -> None:
    _stderr().print(f"[yellow]warning:[/yellow] {shown(message)}")


@app.command()
def report(
    runs: Annotated[
        list[Path], typer.Argument(help="One or more run directories (the first is the base).")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="HTML file to write (default: FIRST_RUN/report.html)."),
    ] = None,
    title: Annotated[str, typer.Option("--title", help="Title of the report.")] = (
        "turnbench report"
    ),
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Benchmark data folder for dialogue text (else $TURNBENCH_DATA_DIR, the cache).",
        ),
    ] = None,
    seed: Seed = 0,
    resamples: Resamples = 2000,
    benchmark: ReadBenchmark = None,
) -> None:
    """Write one self-contained HTML report (charts, comparison, dialogue browser); a judge
    audit directory (from `turnbench audit-judge`) gets the audit report."""
    from turnbench.report.audit import build_audit_report, is_audit_dir, load_audit
    from turnbench.report.html import ReportOptions, build_report, write_report
    from turnbench.store.rundir import load_runs, unique_labels
    from turnbench.store.runfiles import refuse_run_file

    audits = [path for path in runs if path.is_dir() and is_audit_dir(path)]
    if audits:
        if len(audits) != len(runs):
            raise UserError(
                "give either run directories or judge audit directories to one report, not both"
            )
        if benchmark is not None:
            raise UserError("--benchmark names the plug-in of run directories, not of audits")
        if out is not None:
            refuse_run_file(out, runs)
        loaded_audits = [
            load_audit(path, label, _warn)
            for path, label in zip(runs, unique_labels(runs), strict=True)
        ]
        text = build_audit_report(
            loaded_audits, "turnbench judge audit" if title == "turnbench report" else title
        )
        target = out if out is not None else runs[0] / "report.html"
        write_report(text, target)
        console().print(
            f"Report written to {shown(target)} ({len(text.encode('utf-8')) / 1024:.0f} KiB)"
        )
        return

    target = out if out is not None else runs[0] / "report.html"
    refuse_run_file(target, runs)
    options = ReportOptions(
        title=title, data_dir=data_dir, seed=seed, resamples=resamples, out=target
    )
    loaded = load_runs(
        runs, require_log=False, warn=_warn, benchmark=_named(benchmark), need_benchmark=True
    )
    text = build_report(loaded, options, warn=_warn)
    write_report(text, target)
    pages = options.pages.written if options.pages is not None else []
    console().print(
        f"Report written to {shown(target)} ({len(text.encode('utf-8')) / 1024:.0f} KiB)"
        + (f", its dialogues on {len(pages)} pages in {shown(pages[0].parent)}" if pages else "")
    )


def _arm_of(entry: Entry, arm: str) -> Entry:
    """The entry read on its stress arm `arm` (refused when the run has no such arm)."""
    from turnbench.results.shapes import SingleRunResults

    results = entry.typed
    arms = (results.perturbations if isinstance(results, SingleRunResults) else None) or {}
    if arm not in arms:
        held = ", ".join(shown(kind) for kind in arms) or "none"
        raise UserError(
            f"{shown(entry.run.path)}: no stress arm {shown(arm)} (its arms: {held}); "
            "run it with --perturb KIND"
        )
    return dataclasses.replace(entry, arm=arm)


@app.command()
def compare(
    base: Annotated[Path, typer.Argument(help="The base run directory (the reference).")],
    new: Annotated[Path, typer.Argument(help="The new run directory (the candidate).")],
    base_model: Annotated[
        str | None,
        typer.Option("--base-model", help="Model of BASE to use when it holds several."),
    ] = None,
    new_model: Annotated[
        str | None,
        typer.Option("--new-model", help="Model of NEW to use when it holds several."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    fail_if_worse: Annotated[
        float | None,
        typer.Option(
            "--fail-if-worse",
            min=0.0,
            help="Exit 1 when the overall verdict is worse and its interval lies entirely "
            "below -DELTA (a CI gate).",
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Refuse (exit 2) when judge, prompts, parser or sampling differ."
        ),
    ] = False,
    top: Annotated[int, typer.Option("--top", min=0, help="How many movers to list.")] = 10,
    seed: Seed = 0,
    resamples: Resamples = 2000,
    benchmark: ReadBenchmark = None,
    arm: Annotated[
        str | None,
        typer.Option(
            "--arm",
            metavar="KIND",
            help="Compare the runs' stress arm KIND (run --perturb KIND) instead of their "
            "unperturbed scores.",
        ),
    ] = None,
) -> None:
    """Paired comparison of two runs: overall and per category/task deltas with intervals."""
    from turnbench.report.compare import compare_entries
    from turnbench.stats.paired import fails_gate
    from turnbench.store.rundir import load_run, select_entry

    named = _named(benchmark)
    base_run = load_run(base, warn=_warn, benchmark=named, need_benchmark=True)
    new_run = load_run(new, warn=_warn, benchmark=named, need_benchmark=True)
    base_entry = select_entry(base_run, base_model, "--base-model")
    new_entry = select_entry(new_run, new_model, "--new-model")
    if arm is not None:
        base_entry, new_entry = (_arm_of(e, arm) for e in (base_entry, new_entry))
    if base_run.path.resolve() == new_run.path.resolve() and base_entry.model == new_entry.model:
        raise UserError("BASE and NEW are the same run and model; nothing to compare")
    comparison = compare_entries(base_entry, new_entry, resamples=resamples, seed=seed)
    if comparison.differences and strict:
        raise UserError(
            "the runs differ in settings that change scores (--strict):\n  "
            + "\n  ".join(comparison.differences)
        )
    for note in comparison.warnings():
        _warn(note)
    if as_json:
        sys.stdout.write(json.dumps(comparison.to_json(top), indent=2, allow_nan=False) + "\n")
    else:
        from turnbench.cli.compare_table import print_comparison

        print_comparison(console(), comparison, top)
    if fail_if_worse is not None and fails_gate(comparison.overall, fail_if_worse):
        _stderr().print(
            f"[bold red]worse:[/bold red] the overall score dropped by more than "
            f"{fail_if_worse:g} with 95% confidence (interval upper end "
            f"{comparison.overall.ci_high:.3f} < {-fail_if_worse:g})"
        )
        raise typer.Exit(EXIT_WORSE)


@app.command()
def export(
    run_dir: RunDir,
    fmt: Annotated[
        Literal["csv", "jsonl", "fastchat", "conversations"],
        typer.Option(
            "--format",
            "-f",
            help="csv or jsonl: one row per judged turn; fastchat: FastChat's "
            "model_answer and model_judgment files; conversations: one JSON object per "
            "conversation, its messages in OpenAI's chat format, its outcome and score.",
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="File (csv, jsonl, conversations; '-' for standard output) or folder "
            "(fastchat). Default: RUN_DIR/judgments.csv, RUN_DIR/judgments.jsonl, "
            "RUN_DIR/fastchat/ or RUN_DIR/conversations.jsonl.",
        ),
    ] = None,
    benchmark: ReadBenchmark = None,
) -> None:
    """Export a run's answers and judgments for other tools."""
    from turnbench.interop.export import (
        default_output,
        fastchat_data,
        fastchat_rows,
        judgment_rows,
        render_csv,
        render_jsonl,
        write_fastchat,
        write_text,
    )
    from turnbench.store.rundir import load_run
    from turnbench.store.runfiles import refuse_run_file

    target = out if out is not None else default_output(run_dir, fmt)
    if str(target) != "-" and fmt != "fastchat":
        refuse_run_file(target, [run_dir])
    run = load_run(run_dir, warn=_warn, benchmark=_named(benchmark), need_benchmark=True)
    out = console(stderr=str(target) == "-")
    if fmt == "conversations":
        from turnbench.interop.conversations import write_conversations

        exported = write_conversations(run, target)
        if exported.without_requests:
            _warn(
                f"{exported.without_requests} conversation(s) left out: their answers were "
                "imported without the requests they answered"
            )
        if str(target) != "-":
            out.print(f"wrote {exported.written} conversation(s) to {shown(target)}")
        return
    if fmt == "fastchat":
        if str(target) == "-":
            raise UserError("--format fastchat writes a folder; give --out FOLDER")
        turns, data, missing = fastchat_data(run)
        exported = fastchat_rows(run, turns or None)
        exported.data = data
        if missing is not None:
            exported.lost.insert(
                0, f"the benchmark's data files (question.jsonl, reference_answer/): {missing}"
            )
        written = write_fastchat(exported, target, refuse=lambda p: refuse_run_file(p, [run_dir]))
        for path in written:
            out.print(f"wrote {shown(path)}")
        if exported.lost:
            for note in exported.lost[:10]:
                _warn(f"not in the FastChat files: {note}")
            if len(exported.lost) > 10:
                _warn(f"... and {len(exported.lost) - 10} more")
            _stderr().print(
                f"[bold red]error:[/bold red] the FastChat files cannot carry "
                f"{len(exported.lost)} item(s) of this run (listed above), so `turnbench "
                "import --format fastchat` would not rebuild its scores; --format jsonl "
                "carries everything"
            )
            raise typer.Exit(EXIT_LOSSY)
        return
    rows = judgment_rows(run)
    text = render_csv(rows) if fmt == "csv" else render_jsonl(rows)
    if str(target) == "-":
        sys.stdout.write(text)
        return
    write_text(target, text)
    out.print(f"wrote {len(rows)} row(s) to {shown(target)}")
    if fmt == "csv":
        out.print(
            "note: CSV carries scores and verdicts, not the answer texts or the judge's "
            "replies; `turnbench import --format csv` rebuilds the scores only (--format "
            "jsonl carries the texts too)"
        )
