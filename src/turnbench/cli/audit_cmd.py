"""`turnbench audit-judge`: run the probe suite through a judge and write DIR/audit.json."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from turnbench.cli.application import app
from turnbench.cli.flags import (
    AUDIT_FLAGS,
    AUDIT_SHARED,
    FLAGS,
    flags_signature,
    group_judges,
    parse_json_object,
)
from turnbench.cli.terminal import cell, shown
from turnbench.cli.terminal import console as make_console
from turnbench.errors import UserError

SHARED = tuple(next(f for f in FLAGS if f.name == name) for name in AUDIT_SHARED)
#: shared flags whose table default is a run's default, not the audit's
AUDIT_DEFAULTED = ("judge_max_tokens",)


def _given(ctx: typer.Context, name: str) -> bool:
    return getattr(ctx.get_parameter_source(name), "name", "DEFAULT") != "DEFAULT"


def _fmt(metric: Any) -> str:
    if not isinstance(metric, dict) or metric.get("value") is None:
        return "–"
    value = f"{metric['value']:+.3f}" if metric.get("signed") else f"{metric['value']:.3f}"
    if metric.get("ci_low") is None:
        return value
    return f"{value}  [{metric['ci_low']:.3f}, {metric['ci_high']:.3f}]"


def print_audit(console: Console, audit: dict[str, Any]) -> None:
    """The audit as a table. The judge's spec, notes and rules are external text: shown
    plain (no markup, control characters made visible), like every command's."""
    table = Table(title=cell(f"Judge audit: {audit['judge']}"), title_justify="left")
    table.add_column("metric")
    table.add_column("value [95% CI]", justify="right")
    table.add_column("unbiased judge", justify="right")
    rows = [
        ("position consistency", audit["position_consistency"], "1"),
        ("first-position preference", audit["first_position_preference"], "0"),
        ("verbosity delta", audit["verbosity_delta"], "<= 0"),
        ("stability (sd of repeats)", audit["stability"], "0"),
        ("scale sanity", audit["scale_sanity"], "1"),
    ]
    for kind, pair in audit["manipulation"].items():
        rows.append((f"manipulation: {kind}", pair["without_guard"], "<= 0"))
        rows.append(("  with --judge-guard", pair["with_guard"], "<= 0"))
    for name, metric, ideal in rows:
        table.add_row(cell(name), _fmt(metric), ideal)
    console.print(table)
    counts = audit["counts"]
    console.print(
        f"{counts['judged']}/{counts['expected']} judgments scored, {counts['failed']} "
        f"unparseable, {counts['pending']} pending; {audit['wall_seconds']:.0f} s"
    )
    for note in audit.get("notes", []):
        console.print(f"[yellow]note:[/yellow] {shown(note)}")
    for check in audit.get("thresholds", []):
        state = "[red]FAILED[/red]" if check["failed"] else "[green]ok[/green]"
        console.print(f"--fail-if {shown(check['rule'])}: {state} (value {shown(check['value'])})")


def audit_judge(ctx: typer.Context, **params: Any) -> None:
    """Measure a judge's biases (position, verbosity, manipulation, stability) with a fixed
    probe suite judged by the benchmark's own prompts; writes OUT/audit.json."""
    from turnbench.audit.run import AuditOptions, run_audit
    from turnbench.backends.options import parse_concurrency
    from turnbench.textio import describe_validation_error

    argv = ctx.obj.get("argv") if isinstance(ctx.obj, dict) else None
    judges = group_judges(
        params.get("judge") or [],
        params.get("judge_base_url") or [],
        params.get("judge_api_key_env") or [],
        argv,
    )
    if len(judges) != 1:
        raise UserError("audit-judge audits one judge: give exactly one --judge")
    if params.get("out") is None:
        raise UserError("audit-judge needs --out DIR")
    values = {
        name: params[name]
        for name in (
            "benchmark", "out", "parser", "max_reasks", "reask_max_tokens", "judge_temperature",
            "judge_token_param", "request_timeout", "max_attempts", "retry_max_time",
            "retry_initial_wait", "data_dir", "questions", "repeats", "seed", "resamples",
        )
        if params.get(name) is not None
    }  # fmt: skip
    for name in AUDIT_DEFAULTED:
        if _given(ctx, name):
            values[name] = params[name]
    values["judge_extra"] = parse_json_object(params.get("judge_extra"), "--judge-extra")
    values["concurrency"] = parse_concurrency(params.get("concurrency") or "8", "--concurrency")
    values["download"] = not params.get("no_download", False)
    values["fail_if"] = params.get("fail_if") or []
    try:
        options = AuditOptions(judge=judges[0], **values)
    except ValidationError as error:
        raise UserError(f"invalid options: {describe_validation_error(error)}") from None
    console = make_console()
    factory = None
    if not params.get("no_progress") and sys.stderr.isatty():

        def factory(stages):  # type: ignore[no-untyped-def]
            from turnbench.report.progress import LiveProgress

            return LiveProgress(console, stages)

    from turnbench.cli.output import print_warning

    result = asyncio.run(
        run_audit(options, warn=print_warning, progress_factory=factory, handle_signals=True)
    )
    print_audit(console, result.audit)
    if result.message:
        console.print(f"[red]{shown(result.message)}[/red]")
    state = "complete" if result.audit["complete"] else "[red]incomplete[/red]"
    console.print(f"Audit {state}: {shown(result.out / 'audit.json')}")
    if not result.audit["complete"]:
        console.print("Re-run the same command to resume; finished judgments are kept.")
    raise typer.Exit(result.exit_code)


audit_judge.__signature__ = flags_signature((*SHARED, *AUDIT_FLAGS))  # type: ignore[attr-defined]
app.command("audit-judge")(audit_judge)
