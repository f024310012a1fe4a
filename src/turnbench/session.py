"""One evaluation from validated options to results: what the API and the CLI both run.

Order matters for the "bad input writes nothing" rule: every input (specs, data, answer
files, keys) is validated by `prepare` before the run directory is created or touched.
Nothing here prints: warnings go to the caller's `warn` callback and progress to its
`Progress` sink, so a notebook sees no output unless it asks for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from turnbench.answers import load_answer_sets
from turnbench.backends import Backend, BackendOptions, make_backend
from turnbench.backends.fields import check_extra_fields
from turnbench.backends.preflight import preflight
from turnbench.backends.providers import display_endpoint
from turnbench.backends.retry import RetryPolicy
from turnbench.benchmarks import benchmark_class
from turnbench.benchmarks.base import Benchmark, BenchmarkSettings
from turnbench.config import LOG_SCHEMA_VERSION, RunConfig, check_resume, load_config
from turnbench.data import DataLocator
from turnbench.dialogue import Estimate, Work
from turnbench.errors import FatalBackendError, UserError
from turnbench.gcpause import collector_paused
from turnbench.judging.judge import Judge, JudgeSettings
from turnbench.options import EvalOptions, JudgeOption
from turnbench.preload import call_in_background, import_in_background
from turnbench.prices import PriceTable, load_prices
from turnbench.resultsfile import write_results
from turnbench.runlog import RunLog, config_record
from turnbench.runner import Budget, Progress, RunContext, RunOutcome, execute
from turnbench.specs import parse_spec
from turnbench.types import SamplingConfig
from turnbench.uptodate import STATE_NAME, forget_state, input_digest, save_state, unchanged_results

if TYPE_CHECKING:
    from concurrent.futures import Future

    from turnbench.batching import BatchQueue
    from turnbench.costs import CostMeter

EXIT_OK, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 130
MIN_ACTIVE_JOBS = 1024  # sample jobs running at once (see Session._max_active)
Warn = Callable[[str], None]
Mode = Literal["run", "judge"]


def judge_warning(judges: list[str]) -> str | None:
    local = [spec for spec in judges if spec.startswith("local/")]
    if not local:
        return None
    return (
        f"The judge is {', '.join(local)}, a small embedded model: this run is a smoke test of "
        "the pipeline, not a measurement. Its ratings mean little: a grammar makes it give one, "
        "not judge well. For real scores use a "
        "strong judge, for example:\n  turnbench run --benchmark mt-bench --model "
        "openai/YOUR-MODEL --model-base-url URL --judge openai/gpt-4o --out runs/mine"
    )


@dataclass
class RunResult:
    """What one evaluation produced: results.json's content and how the invocation ended."""

    out: Path
    results: dict[str, Any]
    status: Literal["finished", "interrupted", "budget", "fatal"]
    message: str | None
    exit_code: int
    warnings: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return bool(self.results.get("complete"))

    @property
    def overall(self) -> float | None:
        return self.results.get("overall")

    def typed(self) -> Any:
        """The results as their pydantic model (SingleRunResults, JudgeOnlyResults or
        PairwiseResults)."""
        from turnbench.results import RESULTS_ADAPTER

        return RESULTS_ADAPTER.validate_python(self.results)


@dataclass
class Prepared:
    benchmark: Benchmark
    work: Work
    config: RunConfig
    judges: list[JudgeSettings]
    prices: PriceTable | None = None


def _policy(options: EvalOptions) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=options.max_attempts,
        max_total_seconds=options.retry_max_time,
        initial_wait=options.retry_initial_wait,
        max_wait=max(60.0, options.retry_initial_wait),
        request_timeout=options.request_timeout,
    )


class Session:
    """One invocation of `run` (mode "run") or `judge` (mode "judge")."""

    def __init__(
        self,
        options: EvalOptions,
        mode: Mode,
        *,
        warn: Warn | None = None,
        progress: Progress | None = None,
        progress_factory: Callable[[dict[str, Backend]], Progress] | None = None,
        handle_signals: bool = False,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        self.options = options
        self.mode = mode
        self.warnings: list[str] = []
        self._warn_callback = warn
        self._progress = progress
        self._progress_factory = progress_factory
        self._handle_signals = handle_signals
        self._announce = announce

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        if self._warn_callback is not None:
            self._warn_callback(message)

    # -- preparation (validates everything, writes nothing) -------------------------------
    def judge_settings(self, cls: type[Benchmark] | None = None) -> list[JudgeSettings]:
        """The judges' settings; without --judge-temperature the benchmark's default for the
        parser mode (0, or none sent where the reference sends none)."""
        options = self.options
        if not options.judge:
            raise UserError("--judge is required")
        temperature = options.judge_temperature
        if temperature is None and cls is not None:
            temperature = cls.default_judge_temperature.get(options.parser, 0.0)
        elif temperature is None:
            temperature = 0.0
        sampling = SamplingConfig(
            temperature=temperature,
            max_tokens=options.judge_max_tokens,
            extra=options.judge_extra,
            token_param=options.judge_token_param,
            reask_max_tokens=options.reask_max_tokens,
        )
        settings = []
        for judge in options.judge:
            spec = str(parse_spec(judge.spec, "--judge"))
            settings.append(
                JudgeSettings(
                    spec=spec,
                    sampling=sampling,
                    parser=options.parser,
                    max_reasks=options.max_reasks_or_default(),
                    scoring=options.judge_scoring,
                    guard=options.judge_guard,
                )
            )
        specs = [s.spec for s in settings]
        if len(set(specs)) != len(specs):
            raise UserError(f"the same --judge is given twice ({', '.join(specs)})")
        return settings

    def prepare(self) -> Prepared:
        options = self.options
        check_extra_fields(options.model_extra, "--model-extra")
        check_extra_fields(options.judge_extra, "--judge-extra")
        if not options.judge:
            raise UserError("--judge is required")
        if self.mode == "run":
            if options.model is None:
                raise UserError("--model is required")
            parse_spec(options.model, "--model")
        elif options.answers is None:
            raise UserError("--answers is required")
        cls = benchmark_class(options.benchmark)
        judges = self.judge_settings(cls)
        locator = DataLocator(options.data_dir, allow_download=options.download)
        files = cls.locate_files(locator)
        answer_sampling = None
        if self.mode == "run":
            answer_sampling = SamplingConfig(
                temperature=options.temperature,
                max_tokens=options.max_new_tokens or cls.default_max_new_tokens,
                system_prompt=options.system_prompt,
                extra=options.model_extra,
                token_param=options.model_token_param,
            )
        benchmark = cls(
            files,
            BenchmarkSettings(
                parser=options.parser,
                limit=options.limit,
                answer=answer_sampling,
                options=options.benchmark_options(),
            ),
        )
        answer_sets = []
        if self.mode == "judge":
            assert options.answers is not None
            with collector_paused():  # many answers, no cycles
                answer_sets = load_answer_sets(benchmark, options.answers)
        work = Work(
            benchmark=benchmark,
            judges=judges,
            mode=self.mode,
            judging=options.mode if self.mode == "judge" else "single",
            model=options.model if self.mode == "run" else None,
            answer_sets=answer_sets,
            baseline=options.baseline,
            repeats=options.judge_repeats,
        )
        config = RunConfig(
            benchmark=cls.name,
            benchmark_ref=cls.source_ref
            or (None if options.benchmark == cls.name else options.benchmark),
            mode=self.mode,
            judging=work.judging,
            model=work.model,
            models=[s.model for s in answer_sets],
            judges=judges,
            answer_sampling=answer_sampling,
            strip_think=options.strip_think,
            options=work.config_options(),
            prompt_versions=self._prompt_versions(work, judges),
            data_sha256=dict(sorted(locator.checksums.items())),
            reference_sha256=benchmark.reference_sha256(),
            answers_sha256={s.model: s.sha256 for s in answer_sets},
            limit=options.limit,
            demo=options.demo,
            endpoints=self._endpoints(),
            concurrency=options.concurrency,
            judge_repeats=options.judge_repeats,
            repeat_aggregate=options.repeat_aggregate,
            panel_aggregate=options.panel_aggregate,
        )
        prices = load_prices(options.prices)
        self._check_batch_and_cost(work, judges, prices)
        return Prepared(benchmark, work, config, judges, prices)

    def _check_batch_and_cost(
        self, work: Work, judges: list[JudgeSettings], prices: PriceTable
    ) -> None:
        """--judge-batch / --model-batch need a provider with a batch API; --max-cost needs
        a price for every model that will be asked."""
        options = self.options
        batched = []
        if options.judge_batch:
            batched += [("--judge-batch", j.spec) for j in judges]
        if options.model_batch:
            if self.mode != "run":
                raise UserError("--model-batch is only used with turnbench run")
            assert options.model is not None
            batched.append(("--model-batch", options.model))
        for flag, spec in batched:
            from turnbench.batch import BATCH_PROVIDERS  # (only a batched run needs it)

            if parse_spec(spec).provider not in BATCH_PROVIDERS:
                raise UserError(
                    f"{flag}: {spec} has no batch API; batches are available for "
                    f"{' and '.join(f'{p}/...' for p in BATCH_PROVIDERS)} models"
                )
        if options.max_cost is not None:
            models = ([options.model] if self.mode == "run" else []) + [j.spec for j in judges]
            unknown = [m for m in models if m and prices.price_for(m) is None]
            if unknown:
                raise UserError(
                    f"--max-cost needs the price of {', '.join(unknown)}, which the price "
                    f"table (as of {prices.as_of}) does not list; add it with --prices FILE"
                )

    @staticmethod
    def _prompt_versions(work: Work, judges: list[JudgeSettings]) -> dict[str, str]:
        from turnbench.judging.formats import followup

        versions = dict(work.prompt_versions())
        if any(j.parser == "strict" and j.max_reasks > 0 for j in judges):
            kind = "verdict" if work.pairwise else work.benchmark.verdict_kind
            versions["reask"] = followup(kind).label
        if any(j.guard for j in judges):
            from turnbench.judging.guard import guard_text

            versions["guard"] = guard_text().label
        return versions

    def _endpoints(self) -> dict[str, Any]:
        """Every role's endpoints as recorded: redacted, comma-separated."""
        options = self.options
        judges = [
            display_endpoint(parse_spec(j.spec), self._judge_backend_options(j))
            for j in options.judge
        ]
        model = None
        if self.mode == "run" and options.model is not None:
            model = display_endpoint(parse_spec(options.model), self._model_backend_options())
        return {"model": model, "judge": judges[0] if len(judges) == 1 else judges}

    def header(self, prepared: Prepared) -> str:
        """Who is asked where: each role's spec and endpoint (redacted)."""
        config = prepared.config
        endpoints = config.endpoints
        lines = []

        def where(url: str | None) -> str:
            return f"at {url}" if url else "(in process)"

        if config.model is not None:
            lines.append(f"model {config.model} {where(endpoints.get('model'))}")
        judges = endpoints.get("judge")
        judge_urls = judges if isinstance(judges, list) else [judges]
        for judge, url in zip(prepared.judges, judge_urls, strict=False):
            lines.append(f"judge {judge.spec} {where(url)}")
        return "; ".join(lines)

    def estimate(self) -> tuple[Prepared, Estimate]:
        prepared = self.prepare()
        return prepared, prepared.work.estimate()

    # -- backends --------------------------------------------------------------------------
    def _judge_backend_options(self, judge: JudgeOption) -> BackendOptions:
        options = self.options
        return BackendOptions(
            role="judge",
            base_urls=judge.base_urls,
            api_key_env=judge.api_key_env,
            concurrency=options.judge_concurrency or options.concurrency,
            token_param=options.judge_token_param,
            policy=_policy(options),
        )

    def _model_backend_options(self) -> BackendOptions:
        options = self.options
        return BackendOptions(
            role="model",
            base_urls=tuple(options.model_base_url),
            api_key_env=options.model_api_key_env,
            concurrency=options.concurrency,
            token_param=options.model_token_param,
            policy=_policy(options),
        )

    def build_backends(self, prepared: Prepared) -> tuple[Backend | None, list[Judge]]:
        options = self.options
        cache: dict[tuple, Backend] = {}
        model_backend = None
        if self.mode == "run":
            assert options.model is not None
            model_backend = make_backend(
                parse_spec(options.model), self._model_backend_options(), cache
            )
        judges = [
            Judge(
                settings,
                make_backend(parse_spec(settings.spec), self._judge_backend_options(given), cache),
            )
            for settings, given in zip(prepared.judges, options.judge, strict=True)
        ]
        return model_backend, judges

    # -- the run ---------------------------------------------------------------------------
    async def run(self) -> RunResult:
        unchanged = self._unchanged_run()
        if unchanged is not None:
            return unchanged
        prepared = self.prepare()
        out = self.options.out
        if out is None:
            raise UserError("--out is required")
        if self._announce is not None:
            self._announce(self.header(prepared))
        model_backend, judges = self.build_backends(prepared)
        backends = {id(b): b for b in [model_backend, *(j.backend for j in judges)] if b}
        queues: dict[str, BatchQueue] = {}
        started = time.time()
        try:
            # a dead endpoint or a refused key stops the run before anything is written
            for problem in await preflight(list(backends.values())):
                self.warn(problem)
            with RunLog(out, warn=self.warn) as log:
                self._record_config(log, prepared.config, started)
                queues.update(self._batch_queues(log, judges))
                planned = prepared.work.planned_keys()
                first = judges[0]
                stages: dict[str, Any] = {"judgments": queues.get(first.id, first.backend)}
                if model_backend is not None:
                    stages["answers"] = queues.get("model", model_backend)
                progress = self._progress or (
                    self._progress_factory(stages) if self._progress_factory else Progress()
                )
                for queue in queues.values():
                    queue.progress = progress
                ctx = RunContext(
                    log,
                    model_backend=model_backend,
                    budget=Budget(
                        max_requests=self.options.max_requests,
                        max_tokens=self.options.max_tokens_total,
                        max_cost=self.options.max_cost,
                    ),
                    progress=progress,
                    warn=self.warn,
                    strip_think=prepared.config.strip_think,
                    batches=queues,
                    costs=self._cost_meter(prepared, judges),
                )
                jobs = prepared.work.jobs(ctx, judges)
                progress.start(
                    {s: len(k) for s, k in planned.items()},
                    {s: len(k & ctx.done.keys()) for s, k in planned.items()},
                )
                cancelled = False
                digest: Future[str | None] | None = None  # of the inputs, for _finish

                def on_started() -> None:  # while the first replies are awaited
                    nonlocal digest
                    import_in_background()  # the results' libraries
                    if not queues:  # a run with provider batches is never vouched for
                        digest = call_in_background(lambda: self._inputs(prepared))

                try:
                    outcome = await execute(
                        jobs,
                        ctx,
                        handle_signals=self._handle_signals,
                        max_active=self._max_active(),
                        on_started=on_started,
                    )
                except asyncio.CancelledError:
                    cancelled = True
                    outcome = RunOutcome("interrupted", "interrupted: the run was cancelled")
                finally:
                    progress.stop()
                # (a judgment not requested, the answer cut off inside <think>, is as done)
                done_all = all(
                    keys - ctx.not_judged <= ctx.done.keys() for keys in planned.values()
                )
                vouched = digest if done_all else None
                return self._finish(log, prepared, outcome, cancelled, inputs=vouched)
        finally:
            for queue in queues.values():
                await queue.aclose()
            for backend in backends.values():
                await backend.aclose()

    def _unchanged_run(self) -> RunResult | None:
        """The results of a complete run that nothing has changed since, without reading
        its log (`uptodate`); None when there is anything to (re)compute or send."""
        options = self.options
        if options.out is None or options.judge_batch or options.model_batch:
            return None
        if not (options.out / STATE_NAME).exists():
            return None
        try:
            cls = benchmark_class(options.benchmark)
            locator = DataLocator(options.data_dir, allow_download=False)
            cls.locate_files(locator)
        except (UserError, OSError):
            return None  # the full path says what is wrong
        inputs = input_digest(options, self.mode, cls.__module__, locator.checksums)
        results = unchanged_results(options.out, inputs)
        if results is None:
            return None
        if self._announce is not None:
            self._announce(
                f"{options.out}: complete, and nothing has changed since (settings, data, "
                "answers, log); its results are as written then"
            )
        outcome = RunOutcome("finished", None)
        return RunResult(
            out=options.out,
            results=results,
            status="finished",
            message=outcome.message,
            exit_code=self.exit_code(results, outcome),
        )

    def _batch_queues(self, log: RunLog, judges: list[Judge]) -> dict[str, BatchQueue]:
        """A provider batch queue per batched role: "model" and judge ids."""
        options = self.options
        if not (options.judge_batch or options.model_batch):
            return {}
        from turnbench.batch import make_batch_client
        from turnbench.batching import BatchQueue

        def queue(spec: str, backend_options: BackendOptions, role: str, stage: str) -> BatchQueue:
            client = make_batch_client(parse_spec(spec), backend_options)
            return BatchQueue(
                client,
                log,
                role=role,
                stage=stage,
                poll_interval=options.batch_poll_interval,
                max_attempts=options.max_attempts,
            )

        queues: dict[str, BatchQueue] = {}
        if options.model_batch and options.model is not None:
            queues["model"] = queue(
                options.model, self._model_backend_options(), "model", "answers"
            )
        if options.judge_batch:
            for judge, given in zip(judges, options.judge, strict=True):
                queues[judge.id] = queue(
                    judge.settings.spec, self._judge_backend_options(given), judge.id, "judgments"
                )
        for item in queues.values():
            item.start()
        return queues

    def _cost_meter(self, prepared: Prepared, judges: list[Judge]) -> CostMeter | None:
        """Prices of the roles, for --max-cost (checked by `prepare`: every model has one)."""
        options = self.options
        if options.max_cost is None or prepared.prices is None:
            return None
        from turnbench.costs import CostMeter, Role

        roles = {judge.id: Role(judge.settings.spec, options.judge_batch) for judge in judges}
        if self.mode == "run" and options.model is not None:
            roles["model"] = Role(options.model, options.model_batch)
        return CostMeter(prepared.prices, roles)

    def _max_active(self) -> int | None:
        """How many sample jobs run at once: enough to keep every endpoint busy, few enough
        that the prompts waiting for a slot stay a small part of memory. With provider
        batches all of them start at once, so each batch holds every request it can."""
        options = self.options
        if options.judge_batch or options.model_batch:
            return None
        sizes = [c for c in (options.concurrency, options.judge_concurrency) if isinstance(c, int)]
        return max([MIN_ACTIVE_JOBS, *(4 * size for size in sizes)])

    def _finish(
        self,
        log: RunLog,
        prepared: Prepared,
        outcome: RunOutcome,
        cancelled: bool,
        *,
        inputs: Future[str | None] | None = None,
    ) -> RunResult:
        """Results from the log. `inputs` (the digest of the run's inputs, computed while
        the requests ran) is given when every planned item is done: if nothing went wrong
        either, the complete run's results.json is vouched for (`uptodate`)."""
        status = outcome.status
        finished = log.end_invocation(status)
        log.sync()
        notes: dict[str, Any] = {}
        warning = judge_warning([j.spec for j in prepared.judges])
        if warning:
            notes["judge_warning"] = warning
        from turnbench.results import build_results, timing  # (preloaded while requests ran)

        with collector_paused():
            results = build_results(
                prepared.work,
                prepared.config,
                log.index,
                when=timing(log.index, finished),
                log_path=log.path,
                stopped=None if status == "finished" else status,
                notes=notes,
                prices=prepared.prices,
            )
        write_results(log.directory, results)
        digest = None
        if inputs is not None and status == "finished" and results.get("complete"):
            digest = None if self.warnings else inputs.result()  # (ready long before now)
        if digest is not None:
            save_state(log.directory, digest)
        else:
            forget_state(log.directory)
        result = RunResult(
            out=log.directory,
            results=results,
            status=status,
            message=outcome.message,
            exit_code=self.exit_code(results, outcome),
            warnings=self.warnings,
        )
        if cancelled:
            raise asyncio.CancelledError
        return result

    def _inputs(self, prepared: Prepared) -> str | None:
        """The digest of this run's inputs (`uptodate.input_digest`)."""
        return input_digest(
            self.options,
            self.mode,
            type(prepared.benchmark).__module__,
            prepared.config.data_sha256,
        )

    def _record_config(self, log: RunLog, config: RunConfig, started: float) -> None:
        """Check the run's identity, then record this invocation's configuration (its `ts`
        is the invocation's start)."""
        previous = log.configs()
        if previous:
            last = previous[-1]
            old = load_config(last.config, last.schema_version, str(log.path))
            check_resume(old, config, allow_new_judge=self.options.allow_new_judge)
        log.append(config_record(started, config.model_dump(mode="json"), LOG_SCHEMA_VERSION))

    @staticmethod
    def exit_code(results: dict[str, Any], outcome: RunOutcome) -> int:
        if outcome.status == "interrupted":
            return EXIT_INTERRUPTED
        if outcome.status == "fatal":
            fatal = [e for e in outcome.errors if isinstance(e, FatalBackendError)]
            return fatal[0].exit_code if fatal else FatalBackendError.exit_code
        return EXIT_OK if results["complete"] else EXIT_INCOMPLETE
