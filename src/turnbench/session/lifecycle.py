"""One evaluation's life: prepare, build each role's backend, check the endpoints, open the
run, run the plan's jobs, rebuild the results from the log. Nothing here prints: warnings go
to the caller's `warn` callback and progress to its `Progress` sink, so a notebook sees no
output unless it asks for it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from turnbench.backends import Backend, BackendOptions, make_backend
from turnbench.backends.preflight import preflight
from turnbench.backends.roles import MODEL, RoleConfig
from turnbench.benchmarks import benchmark_class
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.engine.estimate import Estimate
from turnbench.engine.execute import RunOutcome, execute
from turnbench.engine.progress import Progress
from turnbench.errors import UserError
from turnbench.journal.runlog import RunLog
from turnbench.judging.config import JudgeConfig
from turnbench.judging.judge import Judge
from turnbench.options import EvalOptions
from turnbench.session.prepare import Prepared, prepare
from turnbench.session.result import RunResult, exit_code, judge_warning
from turnbench.session.roles import judge_configs
from turnbench.specs import ModelSpec
from turnbench.store.uptodate import (
    STATE_NAME,
    forget_state,
    input_digest,
    save_state,
    unchanged_results,
)

if TYPE_CHECKING:
    from turnbench.benchmarks.base import Benchmark
    from turnbench.engine.batching import BatchQueue
    from turnbench.engine.costs import CostMeter
    from turnbench.engine.requests import Role

MIN_ACTIVE_JOBS = 1024  # sample jobs running at once (see Session._max_active)
Warn = Callable[[str], None]
Mode = Literal["run", "judge"]


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
        return judge_configs(self.options, cls)

    def prepare(self) -> Prepared:
        return prepare(self.options, self.mode, self.warn)

    def header(self, prepared: Prepared) -> str:
        return prepared.header()

    def estimate(self) -> tuple[Prepared, Estimate]:
        prepared = self.prepare()
        limits = {
            name: role.sampling.max_tokens
            for name, role in prepared.roles.items()
            if role.sampling is not None and name != MODEL
        }
        return prepared, prepared.work.estimate(limits)

    # -- backends --------------------------------------------------------------------------
    def build_backends(
        self, prepared: Prepared, cache: dict[tuple[ModelSpec, BackendOptions], Backend]
    ) -> tuple[dict[str, Backend], list[Judge]]:
        """Every role's backend by name, and the judges; one backend per spec and endpoint
        (`cache`: an embedded model playing several roles runs once)."""
        backends = {
            name: make_backend(role.model_spec, role.backend, cache)
            for name, role in prepared.roles.items()
        }
        judges = [Judge(judge.settings, backends[judge.id]) for judge in prepared.judges]
        return backends, judges

    # -- the run ---------------------------------------------------------------------------
    async def run(self) -> RunResult:
        unchanged = self._unchanged_run()
        if unchanged is not None:
            return unchanged
        # (imported here: a run that nothing changed since it finished answers without them)
        from turnbench.engine.budget import Budget
        from turnbench.engine.context import RunContext
        from turnbench.invocation import invocation

        prepared = self.prepare()
        out = self.options.out
        if out is None:
            raise UserError("--out is required")
        if self._announce is not None:
            self._announce(prepared.header())
        cache: dict[Any, Backend] = {}
        by_role, judges = self.build_backends(prepared, cache)
        backends = {id(b): b for b in by_role.values()}
        queues: dict[str, BatchQueue] = {}
        started = time.time()
        try:
            # a dead endpoint or a refused key stops the run before anything is written
            for problem in await preflight(list(backends.values())):
                self.warn(problem)
            with invocation(
                out, prepared.config, self.warn, started=started,
                allow_new_judge=self.options.allow_new_judge,
            ) as log:  # fmt: skip
                queues.update(self._batch_queues(log, prepared))
                planned = prepared.work.planned_keys()
                stages: dict[str, Any] = {}
                if judges:
                    first = judges[0]
                    stages["judgments"] = queues.get(first.id, first.backend)
                if MODEL in by_role:
                    stages["answers"] = queues.get(MODEL, by_role[MODEL])
                progress = self._progress or (
                    self._progress_factory(stages) if self._progress_factory else Progress()
                )
                for queue in queues.values():
                    queue.progress = progress
                ctx = RunContext(
                    log,
                    budget=Budget(
                        max_requests=self.options.max_requests,
                        max_tokens=self.options.max_tokens_total,
                        max_cost=self.options.max_cost,
                    ),
                    progress=progress,
                    warn=self.warn,
                    strip_think=prepared.config.strip_think,
                    costs=self._cost_meter(prepared, judges),
                    roles=self._roles(prepared.roles, by_role, queues),
                    judges=judges,
                )
                jobs = prepared.work.jobs(ctx)
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

    @staticmethod
    def _roles(
        configs: dict[str, RoleConfig], backends: dict[str, Backend], queues: dict[str, Any]
    ) -> dict[str, Role]:
        """The roles as the engine asks them: by name, each with its backend, its batch
        queue, and what identifies its requests."""
        from turnbench.engine.requests import Role

        return {
            name: Role(name, backends[name], queues.get(name), config.settings)
            for name, config in configs.items()
        }

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
            exit_code=exit_code(results, outcome),
        )

    def _batch_queues(self, log: RunLog, prepared: Prepared) -> dict[str, BatchQueue]:
        """A provider batch queue per batched role: "model" and judge ids."""
        options = self.options
        if not (options.judge_batch or options.model_batch):
            return {}
        from turnbench.batch import make_batch_client
        from turnbench.engine.batching import BatchQueue

        def queue(role: RoleConfig, stage: str) -> BatchQueue:
            client = make_batch_client(role.model_spec, role.backend)
            return BatchQueue(
                client,
                log,
                role=role.name,
                stage=stage,
                poll_interval=options.batch_poll_interval,
                max_attempts=options.max_attempts,
            )

        queues: dict[str, BatchQueue] = {}
        model = prepared.model
        if options.model_batch and model is not None:
            queues[MODEL] = queue(model, "answers")
        if options.judge_batch:
            for judge in prepared.judges:
                queues[judge.id] = queue(judge, "judgments")
        for item in queues.values():
            item.start()
        return queues

    def _cost_meter(self, prepared: Prepared, judges: list[Judge]) -> CostMeter | None:
        """Prices of the roles, for --max-cost (checked by `prepare`: every model has one)."""
        options = self.options
        if options.max_cost is None or prepared.prices is None:
            return None
        from turnbench.engine.costs import CostMeter

        batched = {judge.id for judge in judges} if options.judge_batch else set()
        if options.model_batch:
            batched.add(MODEL)
        specs = {name: role.spec for name, role in prepared.roles.items()}
        return CostMeter(prepared.prices, specs, frozenset(batched))

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
        notes: dict[str, Any] = {}
        warning = judge_warning([j.spec for j in prepared.judges])
        if warning:
            notes["judge_warning"] = warning
        from turnbench.invocation import finish
        from turnbench.results.build import build_results

        typed, results = finish(
            log,
            status,
            lambda when: build_results(
                prepared.work,
                prepared.config,
                log.index,
                when=when,
                log_path=log.path,
                stopped=None if status == "finished" else status,
                notes=notes,
                prices=prepared.prices,
                warnings=self.warnings,
            ),
        )
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
            exit_code=exit_code(results, outcome),
            warnings=self.warnings,
            model=typed,
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

    @staticmethod
    def exit_code(results: dict[str, Any], outcome: RunOutcome) -> int:
        return exit_code(results, outcome)
