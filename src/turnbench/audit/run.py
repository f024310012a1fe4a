"""Running an audit: validate, open the audit directory's log, judge every probe, write
`audit.json`.

The audit directory is a run directory: an append-only `log.jsonl` (a config record per
invocation, one record per finished judgment) under the same lock, so an interrupted audit
resumes where it stopped and a finished one is rebuilt from its log without a request.
What identifies an audit (judge settings, benchmark prompts, probe version) must not change
between invocations; the number of questions and of stability repeats may (more only adds
the missing judgments).

An embedded judge (`local/...`) runs one generation at a time on the CPU, so its audit uses
smaller defaults (3 questions, 2 stability repeats, replies of at most 48 tokens, no
re-ask), like the demo does; explicit flags override them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from turnbench.audit.plan import (
    AuditPlan,
    PairProbe,
    SingleProbe,
    pair_task,
    probe_sample,
    single_task,
)
from turnbench.audit.probes import probe_suite
from turnbench.audit.results import AUDIT_KIND, build_audit, write_audit
from turnbench.audit.thresholds import Threshold
from turnbench.backends import Backend, BackendOptions, make_backend
from turnbench.backends.fields import check_extra_fields
from turnbench.backends.preflight import preflight
from turnbench.backends.providers import display_endpoint
from turnbench.backends.retry import RetryPolicy
from turnbench.benchmarks import benchmark_class
from turnbench.benchmarks.base import Benchmark, BenchmarkSettings
from turnbench.config import LOG_SCHEMA_VERSION, describe_differences
from turnbench.data import DataLocator
from turnbench.errors import ConfigDriftError, UserError
from turnbench.judging.guard import guard_text, guarded_format
from turnbench.judging.judge import Judge, JudgeSettings
from turnbench.options import JudgeOption
from turnbench.runlog import RunLog, config_record
from turnbench.runner import Progress, RunContext, RunOutcome, execute
from turnbench.specs import parse_spec
from turnbench.types import MAX_TOKEN_LIMIT, SamplingConfig

EXIT_OK, EXIT_INCOMPLETE, EXIT_THRESHOLD, EXIT_INTERRUPTED = 0, 1, 5, 130
DEFAULTS = {"questions": None, "repeats": 3, "judge_max_tokens": 2048, "max_reasks": None}
EMBEDDED_DEFAULTS = {"questions": 3, "repeats": 2, "judge_max_tokens": 48, "max_reasks": 0}
EMBEDDED_REASK_TOKENS = 16
Warn = Callable[[str], None]


class AuditOptions(BaseModel):
    """The options of `turnbench audit-judge` (None: the default, which for an embedded
    judge is smaller)."""

    model_config = ConfigDict(extra="forbid")

    judge: JudgeOption
    out: Path
    benchmark: str = "mt-bench"
    questions: int | None = Field(default=None, ge=2)
    repeats: int | None = Field(default=None, ge=2, le=20)
    parser: Literal["strict", "compat"] = "strict"
    max_reasks: int | None = Field(default=None, ge=0)
    judge_max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKEN_LIMIT)
    reask_max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKEN_LIMIT)
    judge_temperature: float = Field(default=0.0, ge=0)
    judge_extra: dict[str, Any] = Field(default_factory=dict)
    judge_token_param: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    concurrency: int | Literal["auto"] = 8
    request_timeout: float = Field(default=600.0, gt=0)
    max_attempts: int = Field(default=10, ge=1)
    retry_max_time: float = Field(default=900.0, ge=0)
    retry_initial_wait: float = Field(default=1.0, ge=0)
    data_dir: Path | None = None
    download: bool = True
    seed: int = 0
    resamples: int = Field(default=2000, ge=100)
    fail_if: list[str] = Field(default_factory=list)

    @property
    def embedded(self) -> bool:
        return self.judge.spec.startswith("local/")

    def resolved(self, name: str) -> Any:
        value = getattr(self, name)
        if value is not None:
            return value
        return (EMBEDDED_DEFAULTS if self.embedded else DEFAULTS)[name]


class AuditConfig(BaseModel):
    """An audit's configuration as its log records it."""

    kind: Literal["judge-audit"] = AUDIT_KIND
    benchmark: str
    judge: JudgeSettings
    probes: str
    prompt_versions: dict[str, str]
    # free to change between invocations:
    questions: list[str]
    repeats: int
    endpoints: dict[str, Any] = Field(default_factory=dict)
    concurrency: int | str = 8

    def identity(self) -> dict[str, Any]:
        return self.model_dump(
            mode="json", exclude={"questions", "repeats", "endpoints", "concurrency"}
        )


# -- preparation ----------------------------------------------------------------------------
@dataclass
class PreparedAudit:
    options: AuditOptions
    benchmark: Benchmark
    plan: AuditPlan
    settings: JudgeSettings
    config: AuditConfig
    thresholds: list[Threshold] = field(default_factory=list)


def _policy(options: AuditOptions) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=options.max_attempts,
        max_total_seconds=options.retry_max_time,
        initial_wait=options.retry_initial_wait,
        max_wait=max(60.0, options.retry_initial_wait),
        request_timeout=options.request_timeout,
    )


def backend_options(options: AuditOptions) -> BackendOptions:
    return BackendOptions(
        role="judge",
        base_urls=options.judge.base_urls,
        api_key_env=options.judge.api_key_env,
        concurrency=options.concurrency,
        token_param=options.judge_token_param,
        policy=_policy(options),
    )


def prepare(options: AuditOptions) -> PreparedAudit:
    """Validate everything (write nothing): the judge spec, the benchmark and its data, the
    probe requests, the thresholds."""
    spec = parse_spec(options.judge.spec, "--judge")
    check_extra_fields(options.judge_extra, "--judge-extra")
    thresholds = [Threshold.parse(text) for text in options.fail_if]
    cls = benchmark_class(options.benchmark)
    locator = DataLocator(options.data_dir, allow_download=options.download)
    files = locator.require_files(cls.name, cls.data_files()) if cls.data_files() else {}
    benchmark = cls(files, BenchmarkSettings(parser=options.parser, limit=1, answer=None))
    pairwise = True
    try:
        benchmark.check_pairwise()
    except UserError:
        pairwise = False
    suite = probe_suite()
    count = options.resolved("questions") or len(suite.questions)
    if count > len(suite.questions):
        raise UserError(f"--questions: the probe suite has {len(suite.questions)} questions")
    plan = AuditPlan(suite, suite.questions[:count], options.resolved("repeats"), pairwise)
    max_reasks = options.resolved("max_reasks")
    if max_reasks is None:
        max_reasks = 2 if options.parser == "strict" else 0
    reask_tokens = options.reask_max_tokens
    if reask_tokens is None and options.embedded:
        reask_tokens = EMBEDDED_REASK_TOKENS
    settings = JudgeSettings(
        spec=str(spec),
        sampling=SamplingConfig(
            temperature=options.judge_temperature,
            max_tokens=options.resolved("judge_max_tokens"),
            extra=options.judge_extra,
            token_param=options.judge_token_param,
            reask_max_tokens=reask_tokens,
        ),
        parser=options.parser,
        max_reasks=max_reasks,
    )
    names: set[str] = set()
    for question in plan.questions:  # every request renders before anything is written
        for probe in plan.singles(question):
            names.add(single_task(benchmark, suite, probe)[0].prompt_name)
        for pair in plan.pairs(question):
            names.add(pair_task(benchmark, suite, pair)[0].prompt_name)
    versions = {
        **benchmark.prompt_versions(),
        "audit_prompts": ",".join(sorted(names)),
        "guard": guard_text().label,
    }
    if pairwise:
        versions["pairwise_parser"] = benchmark.pairwise_prompt_versions().get("parser", "")
    config = AuditConfig(
        benchmark=cls.name,
        judge=settings,
        probes=suite.label,
        prompt_versions=versions,
        questions=[q.id for q in plan.questions],
        repeats=plan.repeats,
        endpoints={"judge": display_endpoint(spec, backend_options(options))},
        concurrency=options.concurrency,
    )
    return PreparedAudit(options, benchmark, plan, settings, config, thresholds)


# -- execution ------------------------------------------------------------------------------
@dataclass
class AuditResult:
    out: Path
    audit: dict[str, Any]
    status: Literal["finished", "interrupted", "budget", "fatal"]
    message: str | None
    exit_code: int
    warnings: list[str] = field(default_factory=list)


def _jobs(prepared: PreparedAudit, ctx: RunContext, judge: Judge) -> list[Callable[[], Any]]:
    benchmark, plan, suite = prepared.benchmark, prepared.plan, prepared.plan.suite

    async def single(probe: SingleProbe) -> None:
        task, boundary = single_task(benchmark, suite, probe)
        reply = benchmark.reply_format(task)
        await ctx.judgment(
            judge,
            task,
            reply if boundary is None else guarded_format(reply, boundary),
            key=probe.key(judge.id),
            model=probe.model,
            sample=probe_sample(probe.question),
            turn=1,
            repeat=probe.repeat,
            meta={"audit": True, **({"guard": boundary.record()} if boundary else {})},
        )

    async def pair(probe: PairProbe) -> None:
        task, shown_a = pair_task(benchmark, suite, probe)
        await ctx.judgment(
            judge,
            task,
            benchmark.reply_format(task),
            key=probe.key(judge.id),
            model=shown_a,
            sample=probe_sample(probe.question),
            turn=1,
            pair=probe.models,
            order=probe.order,
            meta={"audit": True},
        )

    async def question_jobs(question: Any) -> None:
        # one question's requests share their prompt's beginning: sent together, an
        # embedded judge reuses its cache
        await asyncio.gather(
            *(single(p) for p in plan.singles(question)),
            *(pair(p) for p in plan.pairs(question)),
        )

    return [lambda q=q: question_jobs(q) for q in plan.questions]


def _check_resume(log: RunLog, config: AuditConfig) -> None:
    previous = log.configs()
    if not previous:
        return
    raw = previous[-1].config
    if raw.get("kind") != AUDIT_KIND:
        raise UserError(
            f"{log.directory} is a turnbench run directory, not an audit; use another --out"
        )
    try:
        old = AuditConfig.model_validate(raw)
    except ValueError:
        raise UserError(f"{log.path}: the audit's config record cannot be read") from None
    lines = describe_differences(old.identity(), config.identity())
    if lines:
        raise ConfigDriftError(
            "this audit directory was started with different settings, and resuming would mix "
            "incompatible judgments:\n" + "\n".join(lines) + "\nUse a new --out directory."
        )


async def run_audit(
    options: AuditOptions,
    *,
    warn: Warn | None = None,
    progress_factory: Callable[[dict[str, Backend]], Progress] | None = None,
    handle_signals: bool = False,
) -> AuditResult:
    warnings: list[str] = []

    def note(message: str) -> None:
        warnings.append(message)
        if warn is not None:
            warn(message)

    prepared = prepare(options)
    backend = make_backend(parse_spec(prepared.settings.spec), backend_options(options))
    judge = Judge(prepared.settings, backend)
    started = time.time()
    try:
        for problem in await preflight([backend]):
            note(problem)
        with RunLog(options.out, warn=note) as log:
            _check_resume(log, prepared.config)
            log.append(
                config_record(started, prepared.config.model_dump(mode="json"), LOG_SCHEMA_VERSION)
            )
            progress = progress_factory({"judgments": backend}) if progress_factory else Progress()
            ctx = RunContext(log, model_backend=None, progress=progress)
            planned = prepared.plan.keys(judge.id)
            progress.start(
                {"judgments": len(planned)}, {"judgments": len(planned & ctx.done.keys())}
            )
            cancelled = False
            try:
                outcome = await execute(
                    _jobs(prepared, ctx, judge), ctx, handle_signals=handle_signals
                )
            except asyncio.CancelledError:
                cancelled = True
                outcome = RunOutcome("interrupted", "interrupted: the audit was cancelled")
            finally:
                progress.stop()
            finished = log.end_invocation(outcome.status)
            log.sync()
            audit = build_audit(prepared, log, outcome.status, finished)
            write_audit(log.directory, audit)
            if cancelled:
                raise asyncio.CancelledError
    finally:
        await backend.aclose()
    if outcome.status == "interrupted":
        code = EXIT_INTERRUPTED
    elif outcome.status == "fatal":
        from turnbench.errors import FatalBackendError

        code = FatalBackendError.exit_code
    elif not audit["complete"]:
        code = EXIT_INCOMPLETE
    elif any(t["failed"] for t in audit.get("thresholds", [])):
        code = EXIT_THRESHOLD
    else:
        code = EXIT_OK
    return AuditResult(options.out, audit, outcome.status, outcome.message, code, warnings)
