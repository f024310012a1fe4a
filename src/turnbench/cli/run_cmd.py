"""`turnbench run` (generate answers, then judge them) and `turnbench judge` (judge only).

Both commands are generated from the one flag table (`cli/flags.py`), turn their flags into
`EvalOptions` and hand them to the API's session; this module only adds the demo defaults
and the terminal output.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from turnbench.api import new_session
from turnbench.backends.options import parse_concurrency
from turnbench.benchmarks.options import parse_assignments
from turnbench.cli.application import app
from turnbench.cli.flags import (
    BENCHMARK_FLAG_NAMES,
    FLAGS,
    group_judges,
    make_command,
    parse_json_object,
)
from turnbench.cli.output import named_class, print_estimate, print_results, print_warning
from turnbench.cli.terminal import console, shown
from turnbench.errors import UserError
from turnbench.options import EvalOptions, build_options

EMBEDDED = "local/smollm2"
# The demo's caps keep it within 3 minutes on 2 cores with the portable llama.cpp build in
# its worker process (measured 3:11 with 256-token answers on an idle AMD EPYC, 2:30 with
# 160: see README). Judge replies stay at 256: under the rating grammar they end after
# 50-110 tokens anyway.
DEMO_LIMIT, DEMO_REASKS, DEMO_REASK_TOKENS = 1, 1, 32
DEMO_ANSWER_TOKENS, DEMO_JUDGE_TOKENS = 160, 256
OPTION_FIELDS = {flag.name for flag in FLAGS if not flag.cli_only}


def demo_out_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("turnbench")) / "runs" / "demo"


def _console() -> Console:
    return console()


def _all_defaults(ctx: typer.Context) -> bool:
    return all(
        getattr(ctx.get_parameter_source(name), "name", "DEFAULT") == "DEFAULT"
        for name in ctx.params
    )


def _existing(path: Path | None, flag: str) -> None:
    if path is not None and not path.exists():
        raise UserError(f"{flag} {path}: no such file or folder")


def options_from_flags(ctx: typer.Context, params: dict[str, Any]) -> EvalOptions:
    """EvalOptions from a command's flag values (judge endpoints grouped by command line)."""
    argv = ctx.obj.get("argv") if isinstance(ctx.obj, dict) else None
    values = {name: value for name, value in params.items() if name in OPTION_FIELDS}
    values["judge"] = group_judges(
        params.get("judge") or [],
        params.get("judge_base_url") or [],
        params.get("judge_api_key_env") or [],
        argv,
    )
    values["model_base_url"] = params.get("model_base_url") or []
    values["user_base_url"] = params.get("user_base_url") or []
    for name in ("model_extra", "judge_extra"):
        if name in values:
            values[name] = parse_json_object(values[name], "--" + name.replace("_", "-"))
    for name in ("concurrency", "judge_concurrency", "user_concurrency"):
        if values.get(name) is not None:
            values[name] = parse_concurrency(values[name], "--" + name.replace("_", "-"))
    values["download"] = not params.get("no_download", False)
    values["benchmark_options"] = benchmark_options_from_flags(params)
    return build_options(**{k: v for k, v in values.items() if v is not None})


def benchmark_options_from_flags(params: dict[str, Any]) -> dict[str, Any]:
    """`-B key=value` and the benchmarks' own flags (`--context self`) as one dict."""
    options: dict[str, Any] = parse_assignments(params.get("benchmark_option") or [])
    for name in sorted(BENCHMARK_FLAG_NAMES):
        value = params.get(name)
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if name in options and str(options[name]) != str(value):
            raise UserError(f"{flag} {value} and -B {name}={options[name]} disagree")
        options[name] = value
    return options


def _execute(options: EvalOptions, mode: str, params: dict[str, Any]) -> None:
    console = _console()
    live = not params.get("no_progress") and sys.stderr.isatty()
    plain = None
    if not live and (options.judge_batch or options.model_batch):
        from turnbench.report.progress import BatchLines

        plain = BatchLines(console)  # batches take long: say what they do, line by line
    session = new_session(
        options,
        mode,  # type: ignore[arg-type]
        warn=print_warning,
        progress=plain,
        progress_factory=_live_progress(console) if live else None,
        handle_signals=True,
        announce=lambda header: console.print(shown(header)),
    )
    if params.get("dry_run"):
        prepared, estimate = session.estimate()
        print_estimate(
            console,
            prepared,
            estimate,
            judge_batch=options.judge_batch,
            model_batch=options.model_batch,
        )
        raise typer.Exit(0)
    result = asyncio.run(session.run())
    print_results(console, result, named_class(options.benchmark))
    raise typer.Exit(result.exit_code)


def _live_progress(console: Console):
    def factory(stages):
        from turnbench.report.progress import LiveProgress

        return LiveProgress(console, stages)

    return factory


def run(ctx: typer.Context, params: dict[str, Any]) -> None:
    """Generate a model's answers and judge them. With no flags: the embedded demo."""
    demo = params.get("demo") or _all_defaults(ctx)
    if demo:
        params["demo"] = True
        params["model"] = params.get("model") or EMBEDDED
        params["judge"] = params.get("judge") or [EMBEDDED]
        params["out"] = params.get("out") or demo_out_dir()
        params["limit"] = params.get("limit") or DEMO_LIMIT
        answer_cap = params.get("max_new_tokens") or DEMO_ANSWER_TOKENS
        params["max_new_tokens"] = min(answer_cap, DEMO_ANSWER_TOKENS)
        params["judge_max_tokens"] = min(params["judge_max_tokens"], DEMO_JUDGE_TOKENS)
        reasks = params.get("max_reasks")
        params["max_reasks"] = DEMO_REASKS if reasks is None else min(reasks, DEMO_REASKS)
        params["reask_max_tokens"] = params.get("reask_max_tokens") or DEMO_REASK_TOKENS
        _console().print(
            f"[bold]turnbench demo[/bold]: {EMBEDDED} answers one MT-Bench question per "
            f"category and judges itself (answers capped at {params['max_new_tokens']} "
            f"tokens, judgments at {params['judge_max_tokens']}, at most {DEMO_REASKS} "
            f"re-ask of {params['reask_max_tokens']} tokens). "
            f"Run directory: {shown(params['out'])}",
            markup=True,
        )
    named = named_class(params.get("benchmark") or "")
    judged = named is None or named.needs_judge  # (one scored without a judge needs none)
    missing = [
        flag
        for flag, value in (("--model", params.get("model")),
                            ("--judge", params.get("judge") if judged else True),
                            ("--out", params.get("out")))
        if not value
    ]  # fmt: skip
    if missing:
        raise UserError(
            f"missing {', '.join(missing)} (or run `turnbench run` with no flags "
            "for the embedded demo)"
        )
    _existing(params.get("reference_file"), "--reference-file")
    _execute(options_from_flags(ctx, params), "run", params)


def judge(ctx: typer.Context, params: dict[str, Any]) -> None:
    """Judge answers that already exist (FastChat answer files, or turnbench JSONL)."""
    missing = [
        flag
        for flag, value in (("--answers", params.get("answers")), ("--judge", params.get("judge")),
                            ("--out", params.get("out")))
        if not value
    ]  # fmt: skip
    if missing:
        raise UserError(f"turnbench judge needs {', '.join(missing)}")
    mode, baseline = params.get("mode"), params.get("baseline")
    if mode == "pairwise" and baseline is None:
        raise UserError("--mode pairwise needs --baseline NAME (a model of --answers)")
    if mode != "pairwise" and baseline is not None:
        raise UserError("--baseline is only used with --mode pairwise")
    for answers in params.get("answers") or []:
        _existing(answers, "--answers")
    _existing(params.get("reference_file"), "--reference-file")
    _execute(options_from_flags(ctx, params), "judge", params)


app.command("run")(make_command("run", run))
app.command("judge")(make_command("judge", judge))
