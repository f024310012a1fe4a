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

from turnbench.audit.plan import (
    AuditPlan,
    PairProbe,
    SingleProbe,
    pair_task,
    probe_sample,
    single_task,
)
from turnbench.audit.probes import probe_suite
from turnbench.audit.results import build_audit, write_audit
from turnbench.audit.setup import (
    AUDIT_KIND,
    EMBEDDED_REASK_TOKENS,
    AuditConfig,
    AuditOptions,
    PreparedAudit,
)
from turnbench.audit.thresholds import Threshold
from turnbench.backends import Backend, make_backend
from turnbench.backends.fields import check_extra_fields
from turnbench.backends.preflight import preflight
from turnbench.backends.providers import display_endpoint
from turnbench.backends.retry import RetryPolicy
from turnbench.benchmarks import benchmark_class
from turnbench.benchmarks.base import BenchmarkSettings
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.engine.context import RunContext
from turnbench.engine.execute import RunOutcome, execute
from turnbench.engine.progress import Progress
from turnbench.errors import ConfigDriftError, UserError
from turnbench.journal.config import LOG_SCHEMA_VERSION, describe_differences
from turnbench.journal.runlog import RunLog, config_record
from turnbench.judging.config import JudgeChoices, JudgeConfig, build_judges
from turnbench.judging.guard import guard_text, guarded_format
from turnbench.judging.judge import Judge

Warn = Callable[[str], None]
EXIT_OK, EXIT_INCOMPLETE, EXIT_THRESHOLD, EXIT_INTERRUPTED = 0, 1, 5, 130


def judge_config(options: AuditOptions) -> JudgeConfig:
    """The audited judge, built as `run` and `judge` build theirs (`build_judges`), with the
    audit's own defaults (smaller for an embedded judge)."""
    max_reasks = options.resolved("max_reasks")
    if max_reasks is None:
        max_reasks = 2 if options.parser == "strict" else 0
    reask_tokens = options.reask_max_tokens
    if reask_tokens is None and options.embedded:
        reask_tokens = EMBEDDED_REASK_TOKENS
    choices = JudgeChoices(
        max_tokens=options.resolved("judge_max_tokens"),
        max_reasks=max_reasks,
        policy=RetryPolicy.from_flags(options),
        temperature=options.judge_temperature,
        reask_max_tokens=reask_tokens,
        extra=options.judge_extra,
        token_param=options.judge_token_param,
        parser=options.parser,
        concurrency=options.concurrency,
    )
    (judge,) = build_judges([options.judge], choices)
    return judge


def prepare(options: AuditOptions) -> PreparedAudit:
    """Validate everything (write nothing): the judge spec, the benchmark and its data, the
    probe requests, the thresholds."""
    judge = judge_config(options)
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
    settings = judge.settings
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
        endpoints={"judge": display_endpoint(judge.model_spec, judge.backend)},
        concurrency=options.concurrency,
    )
    return PreparedAudit(options, benchmark, plan, judge, config, thresholds)


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
    backend = make_backend(prepared.judge.model_spec, prepared.judge.backend)
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
            ctx = RunContext(log, progress=progress)
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
