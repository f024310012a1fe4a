"""`turnbench run` (generate answers, then judge them) and `turnbench judge` (judge only)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from turnbench.backends import BackendOptions
from turnbench.backends.factory import parse_concurrency
from turnbench.backends.fields import check_extra_fields
from turnbench.backends.retry import RetryPolicy
from turnbench.benchmarks import Settings
from turnbench.cli.app import app
from turnbench.cli.options import demo_out_dir, existing_path, parse_json_object
from turnbench.config import SamplingConfig
from turnbench.errors import UserError
from turnbench.runner import Budget
from turnbench.session import RunRequest, Session

EMBEDDED = "local/smollm2"
DEMO_LIMIT, DEMO_TOKENS, DEMO_REASKS, DEMO_REASK_TOKENS = 1, 256, 1, 32

Benchmark = Annotated[str, typer.Option("--benchmark", "-b", help="mt-bench or mt-bench-101.")]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out", "-o", help="Run directory (created; re-running the same command resumes it)."
    ),
]
Judge = Annotated[
    str | None, typer.Option("--judge", help="Judge spec, e.g. openai/gpt-4o or local/smollm2.")
]
JudgeBaseUrl = Annotated[
    list[str] | None,
    typer.Option(
        "--judge-base-url",
        help="Judge endpoint (default: $OPENAI_BASE_URL or OpenAI); repeat for replicas.",
    ),
]
JudgeKeyEnv = Annotated[
    str | None, typer.Option("--judge-api-key-env", help="Variable holding the judge's API key.")
]
Limit = Annotated[
    int | None,
    typer.Option(
        "--limit",
        min=1,
        help="Smoke run: the first N samples of every category (MT-Bench) or task (MT-Bench-101).",
    ),
]
Concurrency = Annotated[
    str,
    typer.Option(
        "--concurrency",
        "-c",
        help="Requests in flight per endpoint, or auto (adapts to the server's rate limits).",
    ),
]
JudgeConcurrency = Annotated[
    str | None,
    typer.Option(
        "--judge-concurrency",
        help="Judge requests in flight per endpoint, or auto (default: --concurrency).",
    ),
]
DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Folder with the benchmark "
        "data files (else $TURNBENCH_DATA_DIR, then "
        "the user cache).",
    ),
]
Parser = Annotated[
    Literal["strict", "compat"],
    typer.Option(
        "--parser",
        help="strict: exactly one valid rating, else re-ask; "
        "compat: the reference implementation's regex.",
    ),
]
MaxReasks = Annotated[
    int | None,
    typer.Option(
        "--max-reasks",
        min=0,
        help="Re-asks after an unreadable judge reply (default 2 strict, 0 compat).",
    ),
]
JudgeMaxTokens = Annotated[int, typer.Option("--judge-max-tokens", min=1)]
ReaskMaxTokens = Annotated[
    int | None,
    typer.Option(
        "--reask-max-tokens",
        min=1,
        help="Token limit of a judge re-ask, which only needs the rating "
        "(default: --judge-max-tokens).",
    ),
]
JudgeTemperature = Annotated[float, typer.Option("--judge-temperature", min=0.0)]
JudgeExtra = Annotated[
    str | None,
    typer.Option(
        "--judge-extra", help="Extra JSON fields for judge requests, e.g. '{\"seed\": 1}'."
    ),
]
JudgeTokenParam = Annotated[
    Literal["auto", "max_tokens", "max_completion_tokens"],
    typer.Option(
        "--judge-token-param",
        help="auto: max_completion_tokens and no temperature for OpenAI reasoning models.",
    ),
]
Context = Annotated[
    Literal["golden", "self"] | None,
    typer.Option("--context", help="MT-Bench-101: history the model sees (default golden)."),
]
ReferenceMode = Annotated[
    Literal["compat", "golden-answer"] | None,
    typer.Option("--reference-mode", help="MT-Bench-101 MR/GR reference (default compat)."),
]
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Print what would be requested (counts, estimated tokens) and send nothing.",
    ),
]
AllowNewJudge = Annotated[
    bool,
    typer.Option("--allow-new-judge", help="Resume with a different judge, keeping old judgments."),
]
MaxRequests = Annotated[
    int | None,
    typer.Option(
        "--max-requests",
        min=1,
        help="Start at most this many answers and judgments in this invocation (their retries "
        "and re-asks included), let them finish, then stop cleanly; re-run to continue.",
    ),
]
MaxTokensTotal = Annotated[
    int | None,
    typer.Option(
        "--max-tokens-total",
        min=1,
        help="Start no new request once this invocation has logged this many tokens (prompt + "
        "completion, all endpoints); requests in flight finish, then the run stops cleanly.",
    ),
]
RequestTimeout = Annotated[
    float, typer.Option("--request-timeout", min=0.1, help="Seconds before one request times out.")
]
MaxAttempts = Annotated[
    int, typer.Option("--max-attempts", min=1, help="Attempts per request (retries + 1).")
]
RetryMaxTime = Annotated[
    float, typer.Option("--retry-max-time", min=0.0, help="Seconds one request may spend retrying.")
]
RetryInitialWait = Annotated[
    float,
    typer.Option(
        "--retry-initial-wait",
        min=0.0,
        help="First backoff in seconds (doubles, jittered, capped at 60).",
    ),
]
NoProgress = Annotated[bool, typer.Option("--no-progress", help="No live progress bars.")]
NoDownload = Annotated[bool, typer.Option("--no-download", help="Never fetch data files.")]


def _console() -> Console:
    return Console(highlight=False)


def _policy(timeout: float, attempts: int, max_time: float, initial: float) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=attempts,
        max_total_seconds=max_time,
        initial_wait=initial,
        max_wait=max(60.0, initial),
        request_timeout=timeout,
    )


def _benchmark_options(context: str | None, reference_mode: str | None) -> dict:
    options = {}
    if context is not None:
        options["context"] = context
    if reference_mode is not None:
        options["reference_mode"] = reference_mode
    return options


def _finish(request: RunRequest) -> None:
    code = Session(request, _console()).run()
    raise typer.Exit(code)


def _all_defaults(ctx: typer.Context) -> bool:
    return all(
        getattr(ctx.get_parameter_source(name), "name", "DEFAULT") == "DEFAULT"
        for name in ctx.params
    )


@app.command()
def run(
    ctx: typer.Context,
    benchmark: Benchmark = "mt-bench",
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Model under test, e.g. openai/NAME or local/smollm2."),
    ] = None,
    model_base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--model-base-url",
            help="Model endpoint (default: $OPENAI_BASE_URL or OpenAI); repeat for replicas.",
        ),
    ] = None,
    model_api_key_env: Annotated[
        str | None,
        typer.Option("--model-api-key-env", help="Variable holding the model's API key."),
    ] = None,
    judge: Judge = None,
    judge_base_url: JudgeBaseUrl = None,
    judge_api_key_env: JudgeKeyEnv = None,
    out: Out = None,
    limit: Limit = None,
    concurrency: Concurrency = "8",
    judge_concurrency: JudgeConcurrency = None,
    data_dir: DataDir = None,
    parser: Parser = "strict",
    max_reasks: MaxReasks = None,
    system_prompt: Annotated[
        str | None,
        typer.Option(
            "--system-prompt",
            help="System message for the model (default: none; the server "
            "applies the model's chat template).",
        ),
    ] = None,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1)] = 1024,
    temperature: Annotated[
        float | None,
        typer.Option(
            "--temperature",
            min=0.0,
            help="Answer temperature for every sample (default: the benchmark's own table).",
        ),
    ] = None,
    model_extra: Annotated[
        str | None, typer.Option("--model-extra", help="Extra JSON fields for answer requests.")
    ] = None,
    model_token_param: Annotated[
        Literal["auto", "max_tokens", "max_completion_tokens"], typer.Option("--model-token-param")
    ] = "auto",
    judge_max_tokens: JudgeMaxTokens = 2048,
    reask_max_tokens: ReaskMaxTokens = None,
    judge_temperature: JudgeTemperature = 0.0,
    judge_extra: JudgeExtra = None,
    judge_token_param: JudgeTokenParam = "auto",
    context: Context = None,
    reference_mode: ReferenceMode = None,
    reference_file: Annotated[
        Path | None,
        typer.Option(
            "--reference-file",
            help="MT-Bench: answer file whose entries replace the official reference answers.",
        ),
    ] = None,
    dry_run: DryRun = False,
    allow_new_judge: AllowNewJudge = False,
    max_requests: MaxRequests = None,
    max_tokens_total: MaxTokensTotal = None,
    request_timeout: RequestTimeout = 600.0,
    max_attempts: MaxAttempts = 10,
    retry_max_time: RetryMaxTime = 900.0,
    retry_initial_wait: RetryInitialWait = 1.0,
    no_progress: NoProgress = False,
    no_download: NoDownload = False,
    demo: Annotated[
        bool,
        typer.Option("--demo", help="The embedded demo (what `turnbench run` with no flags does)."),
    ] = False,
) -> None:
    """Generate a model's answers and judge them. With no flags: the embedded demo."""
    demo = demo or _all_defaults(ctx)
    answer_tokens, judge_tokens, reasks = max_new_tokens, judge_max_tokens, max_reasks
    if demo:
        model = model or EMBEDDED
        judge = judge or EMBEDDED
        out = out or demo_out_dir()
        limit = limit or DEMO_LIMIT
        answer_tokens = min(answer_tokens, DEMO_TOKENS)
        judge_tokens = min(judge_tokens, DEMO_TOKENS)
        reasks = DEMO_REASKS if reasks is None else min(reasks, DEMO_REASKS)
        reask_max_tokens = reask_max_tokens or DEMO_REASK_TOKENS
        _console().print(
            f"[bold]turnbench demo[/bold]: {EMBEDDED} answers one MT-Bench question per "
            f"category and judges itself (answers and judgments capped at {DEMO_TOKENS} "
            f"tokens, at most {DEMO_REASKS} re-ask of {reask_max_tokens} tokens). "
            f"Run directory: {out}"
        )
    missing = [
        flag
        for flag, value in (("--model", model), ("--judge", judge), ("--out", out))
        if value is None
    ]
    if missing:
        raise UserError(
            f"missing {', '.join(missing)} (or run `turnbench run` with no flags "
            "for the embedded demo)"
        )
    existing_path(reference_file, "--reference-file")
    assert out is not None and judge is not None
    settings = Settings(
        judge=judge,
        parser=parser,
        max_reasks=reasks if reasks is not None else (2 if parser == "strict" else 0),
        answer_sampling=SamplingConfig(
            temperature=temperature,
            max_tokens=answer_tokens,
            system_prompt=system_prompt,
            extra=check_extra_fields(
                parse_json_object(model_extra, "--model-extra"), "--model-extra"
            ),
            token_param=model_token_param,
        ),
        judge_sampling=SamplingConfig(
            temperature=judge_temperature,
            max_tokens=judge_tokens,
            extra=check_extra_fields(
                parse_json_object(judge_extra, "--judge-extra"), "--judge-extra"
            ),
            token_param=judge_token_param,
            reask_max_tokens=reask_max_tokens,
        ),
        limit=limit,
        reference_file=reference_file,
        options=_benchmark_options(context, reference_mode),
    )
    policy = _policy(request_timeout, max_attempts, retry_max_time, retry_initial_wait)
    _finish(
        RunRequest(
            benchmark=benchmark,
            mode="run",
            out=out,
            judge=judge,
            model=model,
            settings=settings,
            model_options=BackendOptions(
                role="model",
                base_urls=tuple(model_base_url or ()),
                api_key_env=model_api_key_env,
                concurrency=parse_concurrency(concurrency, "--concurrency"),
                token_param=model_token_param,
                policy=policy,
            ),
            judge_options=BackendOptions(
                role="judge",
                base_urls=tuple(judge_base_url or ()),
                api_key_env=judge_api_key_env,
                concurrency=parse_concurrency(
                    judge_concurrency or concurrency,
                    "--judge-concurrency" if judge_concurrency else "--concurrency",
                ),
                token_param=judge_token_param,
                policy=policy,
            ),
            data_dir=data_dir,
            allow_download=not no_download,
            dry_run=dry_run,
            allow_new_judge=allow_new_judge,
            budget=Budget(max_requests=max_requests, max_tokens=max_tokens_total),
            show_progress=not no_progress and sys.stderr.isatty(),
            demo=demo,
        )
    )


@app.command()
def judge(
    benchmark: Benchmark = "mt-bench",
    answers: Annotated[
        Path | None,
        typer.Option(
            "--answers",
            help="Answer file, or a folder of them (one per model; the model is "
            "named after the file).",
        ),
    ] = None,
    judge: Judge = None,
    judge_base_url: JudgeBaseUrl = None,
    judge_api_key_env: JudgeKeyEnv = None,
    out: Out = None,
    mode: Annotated[
        Literal["single", "pairwise", "pairwise-all"],
        typer.Option("--mode", help="single ratings, pairwise against --baseline, or all pairs."),
    ] = "single",
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="Baseline model name for --mode pairwise.")
    ] = None,
    limit: Limit = None,
    concurrency: Concurrency = "8",
    data_dir: DataDir = None,
    parser: Parser = "strict",
    max_reasks: MaxReasks = None,
    judge_max_tokens: JudgeMaxTokens = 2048,
    reask_max_tokens: ReaskMaxTokens = None,
    judge_temperature: JudgeTemperature = 0.0,
    judge_extra: JudgeExtra = None,
    judge_token_param: JudgeTokenParam = "auto",
    context: Context = None,
    reference_mode: ReferenceMode = None,
    reference_file: Annotated[Path | None, typer.Option("--reference-file")] = None,
    dry_run: DryRun = False,
    allow_new_judge: AllowNewJudge = False,
    max_requests: MaxRequests = None,
    max_tokens_total: MaxTokensTotal = None,
    request_timeout: RequestTimeout = 600.0,
    max_attempts: MaxAttempts = 10,
    retry_max_time: RetryMaxTime = 900.0,
    retry_initial_wait: RetryInitialWait = 1.0,
    no_progress: NoProgress = False,
    no_download: NoDownload = False,
) -> None:
    """Judge answers that already exist (FastChat answer files, or turnbench JSONL)."""
    missing = [
        flag
        for flag, value in (("--answers", answers), ("--judge", judge), ("--out", out))
        if value is None
    ]
    if missing:
        raise UserError(f"turnbench judge needs {', '.join(missing)}")
    if mode == "pairwise" and baseline is None:
        raise UserError("--mode pairwise needs --baseline NAME (a model of --answers)")
    if mode != "pairwise" and baseline is not None:
        raise UserError("--baseline is only used with --mode pairwise")
    existing_path(answers, "--answers")
    existing_path(reference_file, "--reference-file")
    assert out is not None and judge is not None
    options = _benchmark_options(context, reference_mode)
    if baseline is not None:
        options["baseline"] = baseline
    settings = Settings(
        judge=judge,
        parser=parser,
        max_reasks=max_reasks if max_reasks is not None else (2 if parser == "strict" else 0),
        judge_sampling=SamplingConfig(
            temperature=judge_temperature,
            max_tokens=judge_max_tokens,
            extra=check_extra_fields(
                parse_json_object(judge_extra, "--judge-extra"), "--judge-extra"
            ),
            token_param=judge_token_param,
            reask_max_tokens=reask_max_tokens,
        ),
        limit=limit,
        reference_file=reference_file,
        options=options,
    )
    _finish(
        RunRequest(
            benchmark=benchmark,
            mode="judge",
            out=out,
            judge=judge,
            answers=answers,
            judging=mode,
            settings=settings,
            judge_options=BackendOptions(
                role="judge",
                base_urls=tuple(judge_base_url or ()),
                api_key_env=judge_api_key_env,
                concurrency=parse_concurrency(concurrency, "--concurrency"),
                token_param=judge_token_param,
                policy=_policy(request_timeout, max_attempts, retry_max_time, retry_initial_wait),
            ),
            data_dir=data_dir,
            allow_download=not no_download,
            dry_run=dry_run,
            allow_new_judge=allow_new_judge,
            budget=Budget(max_requests=max_requests, max_tokens=max_tokens_total),
            show_progress=not no_progress and sys.stderr.isatty(),
        )
    )
