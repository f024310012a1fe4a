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

from turnbench.backends import Backend, BackendOptions, make_backend
from turnbench.backends.fields import check_extra_fields
from turnbench.backends.preflight import preflight
from turnbench.backends.providers import display_endpoint, parse_model_spec, served_by_provider
from turnbench.backends.retry import RetryPolicy
from turnbench.benchmarks import benchmark_class
from turnbench.benchmarks.answers import load_answer_sets
from turnbench.benchmarks.base import Benchmark, BenchmarkSettings
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.engine.budget import Budget
from turnbench.engine.context import RunContext
from turnbench.engine.estimate import Estimate
from turnbench.engine.execute import RunOutcome, execute
from turnbench.engine.progress import Progress
from turnbench.engine.work import Work
from turnbench.errors import FatalBackendError, UserError
from turnbench.journal.config import LOG_SCHEMA_VERSION, RunConfig, check_resume, load_config
from turnbench.journal.runlog import RunLog, config_record
from turnbench.judging.config import (
    JudgeChoices,
    JudgeConfig,
    ModelConfig,
    UserConfig,
    UserSettings,
    build_judges,
)
from turnbench.judging.judge import Judge, JudgeSettings
from turnbench.options import EvalOptions
from turnbench.perturb.arms import Arm, build_arms
from turnbench.perturb.planted import load_planted
from turnbench.prices import PriceTable, load_prices
from turnbench.specs import ModelSpec
from turnbench.store.resultsfile import write_results
from turnbench.store.uptodate import (
    STATE_NAME,
    forget_state,
    input_digest,
    save_state,
    unchanged_results,
)
from turnbench.types import SamplingConfig

if TYPE_CHECKING:
    from turnbench.engine.batching import BatchQueue
    from turnbench.engine.costs import CostMeter

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
    # False when running the same command again cannot finish the pending work (an import:
    # the files hold what they hold); `pending_hint` then says why it is pending
    resumable: bool = True
    pending_hint: str | None = None

    @property
    def complete(self) -> bool:
        return bool(self.results.get("complete"))

    @property
    def overall(self) -> float | None:
        return self.results.get("overall")

    def typed(self) -> Any:
        """The results as their pydantic model (SingleRunResults, JudgeOnlyResults or
        PairwiseResults)."""
        from turnbench.results.build import RESULTS_ADAPTER

        return RESULTS_ADAPTER.validate_python(self.results)


@dataclass
class Prepared:
    benchmark: Benchmark
    work: Work
    config: RunConfig
    judges: list[JudgeConfig]
    prices: PriceTable | None = None
    model: ModelConfig | None = None
    user: UserConfig | None = None  # the simulated user's model, when one plays it


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
    def judge_configs(self, cls: type[Benchmark] | None = None) -> list[JudgeConfig]:
        """The judges, built once from their flags; without --judge-temperature the
        benchmark's default for the parser mode (0, or none sent where the reference sends
        none)."""
        options = self.options
        temperature = options.judge_temperature
        if temperature is None:
            temperature = (
                0.0 if cls is None else cls.default_judge_temperature.get(options.parser, 0.0)
            )
        choices = JudgeChoices(
            max_tokens=options.judge_max_tokens,
            max_reasks=options.max_reasks_or_default(),
            policy=RetryPolicy.from_flags(options),
            temperature=temperature,
            reask_max_tokens=options.reask_max_tokens,
            extra=options.judge_extra,
            token_param=options.judge_token_param,
            parser=options.parser,
            scoring=options.judge_scoring,
            guard=options.judge_guard,
            concurrency=options.judge_concurrency or options.concurrency,
        )
        return build_judges(options.judge, choices)

    def _judges(self, cls: type[Benchmark]) -> list[JudgeConfig]:
        """The run's judges; none for a benchmark scored without one (a --judge given for
        it is left out, with a warning: nothing would ask it)."""
        if cls.needs_judge:
            if not self.options.judge:
                raise UserError("--judge is required")
            return self.judge_configs(cls)
        if self.options.judge:
            self.warn(f"{cls.name} is scored without a judge: --judge is not used")
        return []

    def _user_config(self, cls: type[Benchmark]) -> UserConfig | None:
        """The simulated user, when --user-model names one: checked against what the
        benchmark's conversations take (none, optional, required)."""
        options = self.options
        if options.user_model is None:
            if cls.user_model == "required":
                raise UserError(f"{cls.name} needs --user-model (the simulated user)")
            if options.strict_user:
                raise UserError("--strict-user is only used with --user-model")
            return None
        if self.mode != "run":
            raise UserError("--user-model is only used with turnbench run")
        if cls.user_model == "no":
            raise UserError(f"{cls.name} has no simulated user: --user-model is not used")
        spec = parse_model_spec(options.user_model, "--user-model")
        temperature = 1.0 if options.user_temperature is None else options.user_temperature
        settings = UserSettings(
            spec=str(spec),
            sampling=SamplingConfig(temperature=temperature, max_tokens=options.user_max_tokens),
            strict=options.strict_user,
        )
        backend = BackendOptions(
            role="user",
            base_urls=tuple(options.user_base_url),
            api_key_env=options.user_api_key_env,
            concurrency=options.user_concurrency or options.concurrency,
            policy=RetryPolicy.from_flags(options),
        )
        return UserConfig(spec, settings, backend)

    def _model_config(self, spec: ModelSpec, cls: type[Benchmark]) -> ModelConfig:
        """The model under test of a `run`; without --max-new-tokens the benchmark's answer
        token limit."""
        options = self.options
        return ModelConfig(
            spec,
            self._answer_sampling(options.max_new_tokens or cls.default_max_new_tokens),
            BackendOptions(
                role="model",
                base_urls=tuple(options.model_base_url),
                api_key_env=options.model_api_key_env,
                concurrency=options.concurrency,
                token_param=options.model_token_param,
                policy=RetryPolicy.from_flags(options),
            ),
        )

    def _answer_sampling(self, max_tokens: int) -> SamplingConfig:
        options = self.options
        return SamplingConfig(
            temperature=options.temperature,
            max_tokens=max_tokens,
            system_prompt=options.system_prompt,
            extra=options.model_extra,
            token_param=options.model_token_param,
        )

    def prepare(self) -> Prepared:
        options = self.options
        check_extra_fields(options.model_extra, "--model-extra")
        check_extra_fields(options.judge_extra, "--judge-extra")
        model_spec = None
        if self.mode == "run":
            if options.model is None:
                raise UserError("--model is required")
            model_spec = parse_model_spec(options.model, "--model")  # parsed here, once
        elif options.answers is None:
            raise UserError("--answers is required")
        cls = benchmark_class(options.benchmark)
        model = None if model_spec is None else self._model_config(model_spec, cls)
        judges = self._judges(cls)
        user = self._user_config(cls)
        locator = DataLocator(options.data_dir, allow_download=options.download)
        files = cls.locate_files(locator)
        answer_sampling = model.sampling if model is not None else None
        benchmark = cls(
            files,
            BenchmarkSettings(
                parser=options.parser,
                limit=options.limit,
                answer=answer_sampling,
                options=dict(options.benchmark_options),
                user_model=user.spec if user is not None else None,
            ),
        )
        answer_sets = []
        if self.mode == "judge":
            assert options.answers is not None
            answer_sets = load_answer_sets(benchmark, options.answers)
        settings = [judge.settings for judge in judges]
        arms = self._arms(benchmark)
        work = Work(
            benchmark=benchmark,
            judges=settings,
            mode=self.mode,
            judging=options.mode if self.mode == "judge" else "single",
            model=options.model if self.mode == "run" else None,
            answer_sets=answer_sets,
            baseline=options.baseline,
            repeats=options.judge_repeats,
            arms=arms,
            shuffle_seed=options.perturb_seed,
        )
        config = RunConfig(
            benchmark=cls.name,
            benchmark_ref=cls.source_ref
            or (None if options.benchmark == cls.name else options.benchmark),
            mode=self.mode,
            judging=work.judging,
            model=work.model,
            models=[s.model for s in answer_sets],
            judges=settings,
            answer_sampling=answer_sampling,
            user=user.settings if user is not None else None,
            strip_think=options.strip_think,
            options=work.config_options(),
            prompt_versions=self._prompt_versions(work, settings, user),
            data_sha256=dict(sorted(locator.checksums.items())),
            reference_sha256=benchmark.reference_sha256(),
            answers_sha256={s.model: s.sha256 for s in answer_sets},
            limit=options.limit,
            demo=options.demo,
            endpoints=self._endpoints(model, judges, user),
            concurrency=options.concurrency,
            judge_repeats=options.judge_repeats,
            repeat_aggregate=options.repeat_aggregate,
            panel_aggregate=options.panel_aggregate,
            perturb={arm.kind: arm.settings() for arm in arms},
        )
        prices = load_prices(options.prices).off_list(self._served_elsewhere(model, judges, user))
        self._check_batch_and_cost(model, judges, prices, user)
        return Prepared(benchmark, work, config, judges, prices, model, user)

    def _arms(self, benchmark: Benchmark) -> list[Arm]:
        """The stress arms `--perturb` names (checked: nothing is written yet)."""
        options = self.options
        kinds = options.perturb
        planted_wanted = "planted-error" in kinds
        if options.planted_answers is not None and not planted_wanted:
            raise UserError("--planted-answers is only used with --perturb planted-error")
        if not kinds:
            return []
        if self.mode != "run":
            raise UserError("--perturb is only available for turnbench run")
        planted = None
        if planted_wanted:
            if options.planted_answers is None:
                raise UserError(
                    "--perturb planted-error needs --planted-answers FILE: the flawed earlier "
                    "answers (e.g. a weak model's FastChat answer file, or a run directory)"
                )
            samples = {sample.id: sample for sample in benchmark.all_samples()}
            planted = load_planted(options.planted_answers, samples)
        return build_arms(
            kinds,
            benchmark.samples,
            benchmark.history,  # type: ignore[arg-type]
            planted=planted,
            seed=options.perturb_seed,
        )

    @staticmethod
    def _served_elsewhere(
        model: ModelConfig | None, judges: list[JudgeConfig], user: UserConfig | None = None
    ) -> list[str]:
        """The specs some role reaches through an endpoint other than their provider's own
        API (a local server, a proxy): the shipped list prices do not price them."""
        roles = [*judges, *([model] if model is not None else []), *([user] if user else [])]
        return [
            role.spec for role in roles if not served_by_provider(role.model_spec, role.backend)
        ]

    def _check_batch_and_cost(
        self,
        model: ModelConfig | None,
        judges: list[JudgeConfig],
        prices: PriceTable,
        user: UserConfig | None = None,
    ) -> None:
        """--judge-batch / --model-batch need a provider with a batch API; --max-cost needs
        a price for every model that will be asked."""
        options = self.options
        batched = []
        if options.judge_batch:
            batched += [("--judge-batch", j.model_spec) for j in judges]
        if options.model_batch:
            if model is None:
                raise UserError("--model-batch is only used with turnbench run")
            batched.append(("--model-batch", model.model_spec))
        for flag, spec in batched:
            from turnbench.batch import batch_providers  # (only a batched run needs it)

            if spec.provider not in batch_providers():
                raise UserError(
                    f"{flag}: {spec} has no batch API; batches are available for "
                    f"{' and '.join(f'{p}/...' for p in batch_providers())} models"
                )
        if options.max_cost is not None:
            models = ([model.spec] if model is not None else []) + [j.spec for j in judges]
            models += [user.spec] if user is not None else []
            unknown = [m for m in dict.fromkeys(models) if m and prices.price_for(m) is None]
            elsewhere = [m for m in unknown if m in prices.unlisted]
            if elsewhere:
                raise UserError(
                    f"--max-cost needs the price of {', '.join(elsewhere)}: it is served by an "
                    "endpoint other than its provider's own API (a local server, a proxy), so "
                    "the price table's list price for its name does not apply; give its price "
                    "with --prices FILE"
                )
            if unknown:
                raise UserError(
                    f"--max-cost needs the price of {', '.join(unknown)}, which the price "
                    f"table (as of {prices.as_of}) does not list; add it with --prices FILE"
                )

    @staticmethod
    def _prompt_versions(
        work: Work, judges: list[JudgeSettings], user: UserConfig | None = None
    ) -> dict[str, str]:
        from turnbench.judging.formats import followup

        versions = dict(work.prompt_versions())
        if user is not None and user.settings.strict:
            from turnbench.engine.context import USER_REASK_LABEL

            versions["user_reask"] = USER_REASK_LABEL
        if any(j.parser == "strict" and j.max_reasks > 0 for j in judges):
            kind = "verdict" if work.pairwise else work.benchmark.verdict_kind
            versions["reask"] = followup(kind).label
        if any(j.guard for j in judges):
            from turnbench.judging.guard import guard_text

            versions["guard"] = guard_text().label
        return versions

    @staticmethod
    def _endpoints(
        model: ModelConfig | None, judges: list[JudgeConfig], user: UserConfig | None = None
    ) -> dict[str, Any]:
        """Every role's endpoints as recorded: redacted, comma-separated."""
        shown = [display_endpoint(judge.model_spec, judge.backend) for judge in judges]
        endpoints = {
            "model": None if model is None else display_endpoint(model.model_spec, model.backend),
            "judge": shown[0] if len(shown) == 1 else shown,
        }
        if user is not None:
            endpoints["user"] = display_endpoint(user.model_spec, user.backend)
        return endpoints

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
        if prepared.user is not None:
            lines.append(f"user {prepared.user.spec} {where(endpoints.get('user'))}")
        return "; ".join(lines)

    def estimate(self) -> tuple[Prepared, Estimate]:
        prepared = self.prepare()
        user = prepared.user
        user_limit = user.settings.sampling.max_tokens if user is not None else None
        return prepared, prepared.work.estimate(user_limit)

    # -- backends --------------------------------------------------------------------------
    def build_backends(
        self, prepared: Prepared, cache: dict[tuple, Backend] | None = None
    ) -> tuple[Backend | None, list[Judge]]:
        """The model's and the judges' backends; one per spec and endpoint (`cache`, shared
        with the user model's: an embedded model playing several roles runs once)."""
        cache = {} if cache is None else cache
        model = prepared.model
        model_backend = None
        if model is not None:
            model_backend = make_backend(model.model_spec, model.backend, cache)
        judges = [
            Judge(judge.settings, make_backend(judge.model_spec, judge.backend, cache))
            for judge in prepared.judges
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
        cache: dict[tuple, Backend] = {}
        model_backend, judges = self.build_backends(prepared, cache)
        user_backend = (
            make_backend(prepared.user.model_spec, prepared.user.backend, cache)
            if prepared.user is not None
            else None
        )
        backends = {
            id(b): b for b in [model_backend, *(j.backend for j in judges), user_backend] if b
        }
        queues: dict[str, BatchQueue] = {}
        started = time.time()
        try:
            # a dead endpoint or a refused key stops the run before anything is written
            for problem in await preflight(list(backends.values())):
                self.warn(problem)
            with RunLog(out, warn=self.warn) as log:
                self._record_config(log, prepared.config, started)
                queues.update(self._batch_queues(log, prepared))
                planned = prepared.work.planned_keys()
                stages: dict[str, Any] = {}
                if judges:
                    first = judges[0]
                    stages["judgments"] = queues.get(first.id, first.backend)
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
                    user_backend=user_backend,
                    user=prepared.user.settings if prepared.user is not None else None,
                )
                jobs = prepared.work.jobs(ctx, judges)
                progress.start(
                    {s: len(k) for s, k in planned.items()},
                    {s: len(k & ctx.done.keys()) for s, k in planned.items()},
                )
                cancelled = False
                # the digest of the inputs as the run begins (a run with provider batches
                # is never vouched for), kept for _finish
                digest = None if queues else self._inputs(prepared)
                try:
                    outcome = await execute(
                        jobs,
                        ctx,
                        handle_signals=self._handle_signals,
                        max_active=self._max_active(),
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

    def _batch_queues(self, log: RunLog, prepared: Prepared) -> dict[str, BatchQueue]:
        """A provider batch queue per batched role: "model" and judge ids."""
        options = self.options
        if not (options.judge_batch or options.model_batch):
            return {}
        from turnbench.batch import make_batch_client
        from turnbench.engine.batching import BatchQueue

        def queue(spec: ModelSpec, backend: BackendOptions, role: str, stage: str) -> BatchQueue:
            client = make_batch_client(spec, backend)
            return BatchQueue(
                client,
                log,
                role=role,
                stage=stage,
                poll_interval=options.batch_poll_interval,
                max_attempts=options.max_attempts,
            )

        queues: dict[str, BatchQueue] = {}
        model = prepared.model
        if options.model_batch and model is not None:
            queues["model"] = queue(model.model_spec, model.backend, "model", "answers")
        if options.judge_batch:
            for judge in prepared.judges:
                queues[judge.id] = queue(judge.model_spec, judge.backend, judge.id, "judgments")
        for item in queues.values():
            item.start()
        return queues

    def _cost_meter(self, prepared: Prepared, judges: list[Judge]) -> CostMeter | None:
        """Prices of the roles, for --max-cost (checked by `prepare`: every model has one)."""
        options = self.options
        if options.max_cost is None or prepared.prices is None:
            return None
        from turnbench.engine.costs import CostMeter, Role

        roles = {judge.id: Role(judge.settings.spec, options.judge_batch) for judge in judges}
        if self.mode == "run" and options.model is not None:
            roles["model"] = Role(options.model, options.model_batch)
        if prepared.user is not None:
            roles["user"] = Role(prepared.user.spec, False)
        return CostMeter(prepared.prices, roles)

    def _max_active(self) -> int | None:
        """How many sample jobs run at once: enough to keep every endpoint busy, few enough
        that the prompts waiting for a slot stay a small part of memory. With provider
        batches all of them start at once, so each batch holds every request it can."""
        options = self.options
        if options.judge_batch or options.model_batch:
            return None
        given = (options.concurrency, options.judge_concurrency, options.user_concurrency)
        sizes = [c for c in given if isinstance(c, int)]
        return max([MIN_ACTIVE_JOBS, *(4 * size for size in sizes)])

    def _finish(
        self,
        log: RunLog,
        prepared: Prepared,
        outcome: RunOutcome,
        cancelled: bool,
        *,
        inputs: str | None = None,
    ) -> RunResult:
        """Results from the log. `inputs` (the digest of the run's inputs as it began) is
        given when every planned item is done: if nothing went wrong
        either, the complete run's results.json is vouched for (`uptodate`)."""
        status = outcome.status
        finished = log.end_invocation(status)
        log.sync()
        notes: dict[str, Any] = {}
        warning = judge_warning([j.spec for j in prepared.judges])
        if warning:
            notes["judge_warning"] = warning
        from turnbench.results.build import build_results, timing

        results = build_results(
            prepared.work,
            prepared.config,
            log.index,
            when=timing(log.index, finished),
            log_path=log.path,
            stopped=None if status == "finished" else status,
            notes=notes,
            prices=prepared.prices,
            warnings=self.warnings,
        )
        write_results(log.directory, results)
        digest = None
        if inputs is not None and status == "finished" and results.get("complete"):
            digest = None if self.warnings else inputs
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
