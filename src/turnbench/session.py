"""One invocation of `turnbench run` or `turnbench judge`, from validated request to exit code.

Order matters for the "bad input writes nothing" rule: every input (specs, data, answer
files, keys) is validated before the run directory is created or touched.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from turnbench import __version__
from turnbench.backends import Backend, BackendOptions, make_backend
from turnbench.backends.factory import display_url, resolve_base_url
from turnbench.benchmarks import Settings, benchmark_class
from turnbench.benchmarks.base import AnswerSet, Benchmark, Plan, SinglePlan
from turnbench.config import RunConfig, check_resume
from turnbench.data import DataLocator
from turnbench.errors import FatalBackendError, UserError
from turnbench.results import build_results, write_results
from turnbench.runlog import RunLog
from turnbench.runner import Budget, Progress, RunContext, RunOutcome, execute
from turnbench.specs import parse_spec
from turnbench.types import ConfigRecord

EXIT_OK, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 130


@dataclass
class RunRequest:
    benchmark: str
    mode: str  # "run" or "judge"
    out: Path
    judge: str
    settings: Settings
    model: str | None = None
    answers: Path | None = None
    judging: str = "single"
    model_options: BackendOptions = field(default_factory=BackendOptions)
    judge_options: BackendOptions = field(default_factory=BackendOptions)
    data_dir: Path | None = None
    allow_download: bool = True
    dry_run: bool = False
    allow_new_judge: bool = False
    budget: Budget = field(default_factory=Budget)
    show_progress: bool = True
    demo: bool = False


def judge_warning(judge: str) -> str | None:
    if judge.startswith("local/"):
        return (
            f"The judge is {judge}, a small embedded model: this run is a smoke test of the "
            "pipeline, not a measurement. Its ratings mean little: a grammar makes it give "
            "one, not judge well. For real scores use a strong judge, for example:\n  "
            "turnbench run --benchmark mt-bench --model openai/YOUR-MODEL --model-base-url URL "
            "--judge openai/gpt-4o --out runs/mine"
        )
    return None


class Session:
    def __init__(self, request: RunRequest, console: Console) -> None:
        self.request = request
        self.console = console

    # -- preparation (validates everything, writes nothing) -------------------------------
    def prepare(self) -> tuple[Benchmark, Plan, RunConfig]:
        request = self.request
        judge_spec = parse_spec(request.judge, "--judge")
        if request.mode == "run":
            if request.model is None:
                raise UserError("--model is required")
            parse_spec(request.model, "--model")
        cls = benchmark_class(request.benchmark)
        locator = DataLocator(request.data_dir, allow_download=request.allow_download)
        files = locator.require(cls.dataset)
        request.settings.judge = str(judge_spec)
        benchmark = cls(files, request.settings)
        answer_sets: list[AnswerSet] = []
        if request.mode == "judge":
            if request.answers is None:
                raise UserError("--answers is required")
            answer_sets = benchmark.load_answers(request.answers)
        plan: Plan
        if request.judging == "single":
            plan = SinglePlan(benchmark, request.mode, request.model, answer_sets)
        else:
            from turnbench.benchmarks.mt_bench_pairwise import pairwise_plan

            if request.mode != "judge":
                raise UserError(f"--mode {request.judging} is only available for turnbench judge")
            plan = pairwise_plan(
                benchmark, request.judging, request.settings.options.get("baseline"), answer_sets
            )
        settings = request.settings
        config = RunConfig(
            benchmark=cls.name,
            mode=request.mode,  # type: ignore[arg-type]
            judging=request.judging,  # type: ignore[arg-type]
            model=request.model,
            models=[s.model for s in answer_sets],
            judge=str(judge_spec),
            parser=settings.parser,  # type: ignore[arg-type]
            max_reasks=settings.max_reasks,
            answer_sampling=settings.answer_sampling if request.mode == "run" else None,
            judge_sampling=settings.judge_sampling,
            options={**benchmark.config_options(), **plan.config_options()},
            prompt_versions=plan.prompt_versions(),
            data_sha256=dict(sorted(locator.checksums.items())),
            reference_sha256=benchmark.reference_sha256(),
            answers_sha256={s.model: s.sha256 for s in answer_sets},
            limit=settings.limit,
            demo=request.demo,
            endpoints={
                "model": display_url(resolve_base_url(request.model_options.base_url))
                if request.mode == "run"
                else None,
                "judge": display_url(resolve_base_url(request.judge_options.base_url)),
            },
            concurrency=request.model_options.concurrency,
        )
        return benchmark, plan, config

    def build_backends(self) -> tuple[Backend | None, Backend]:
        request = self.request
        cache: dict[tuple, Backend] = {}
        model_backend = None
        if request.mode == "run":
            assert request.model is not None
            model_backend = make_backend(parse_spec(request.model), request.model_options, cache)
        judge_backend = make_backend(parse_spec(request.judge), request.judge_options, cache)
        return model_backend, judge_backend

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> int:
        benchmark, plan, config = self.prepare()
        if self.request.dry_run:
            self.print_estimate(plan, config)
            return EXIT_OK
        model_backend, judge_backend = self.build_backends()
        warning = judge_warning(config.judge)
        with RunLog(self.request.out, warn=self._warn) as log:
            self._record_config(log, config)
            planned = plan.planned_keys()
            progress = self._progress({"answers": model_backend, "judgments": judge_backend})
            ctx = RunContext(
                log,
                model_backend=model_backend,
                judge_backend=judge_backend,
                budget=self.request.budget,
                progress=progress,
            )
            jobs = plan.jobs(ctx)
            progress.start(
                {s: len(k) for s, k in planned.items()},
                {s: len(k & ctx.done.keys()) for s, k in planned.items()},
            )
            try:
                outcome = asyncio.run(self._execute(jobs, ctx, model_backend, judge_backend))
            finally:
                progress.stop()
            log.sync()
            results = build_results(benchmark, config, log.records)
            if warning:
                results["judge_warning"] = warning
            results["stopped"] = None if outcome.status == "finished" else outcome.status
            write_results(self.request.out, results)
        self.print_results(benchmark, results, outcome)
        if warning:
            self.console.print(f"\n[yellow]{warning}[/yellow]")
        return self.exit_code(results, outcome)

    async def _execute(self, jobs, ctx: RunContext, *backends: Backend | None) -> RunOutcome:
        try:
            return await execute(jobs, ctx)
        finally:
            for backend in {id(b): b for b in backends if b is not None}.values():
                await backend.aclose()

    def _record_config(self, log: RunLog, config: RunConfig) -> None:
        previous = log.configs()
        if previous:
            last = RunConfig.model_validate(previous[-1].config)
            check_resume(last, config, allow_new_judge=self.request.allow_new_judge)
            if last.model_dump() == config.model_dump():
                return
        log.append(ConfigRecord(turnbench_version=__version__, config=config.model_dump()))

    def _progress(self, backends: dict[str, Backend | None]) -> Progress:
        if not self.request.show_progress:
            return Progress()
        from turnbench.report.progress import LiveProgress

        return LiveProgress(self.console, {k: v for k, v in backends.items() if v is not None})

    def _warn(self, message: str) -> None:
        self.console.print(f"[yellow]warning:[/yellow] {message}")

    # -- output ----------------------------------------------------------------------------
    @staticmethod
    def exit_code(results: dict[str, Any], outcome: RunOutcome) -> int:
        if outcome.status == "interrupted":
            return EXIT_INTERRUPTED
        if outcome.status == "fatal":
            fatal = [e for e in outcome.errors if isinstance(e, FatalBackendError)]
            return fatal[0].exit_code if fatal else FatalBackendError.exit_code
        return EXIT_OK if results["complete"] else EXIT_INCOMPLETE

    def print_results(
        self, benchmark: Benchmark, results: dict[str, Any], outcome: RunOutcome
    ) -> None:
        from turnbench.report.terminal import counts_line

        per_model = list(results["models"].values()) if "models" in results else [results]
        if "position_consistency" in results:  # a pairwise run: one table for all models
            from turnbench.benchmarks.mt_bench_pairwise import render_pairwise

            per_model = []
            for renderable in render_pairwise(results):
                self.console.print(renderable)
        for model_results in per_model:
            self.console.print(benchmark.render_table(model_results))
            self.console.print(counts_line(model_results))
        if results.get("ranking"):
            from turnbench.ratings import ratings_table

            self.console.print(
                ratings_table(results["ranking"], "Ranking from per-turn score comparisons")
            )
        failures = results.get("request_failures") or []
        if failures:
            self.console.print(
                f"[red]{len(failures)} request(s) failed after all retries[/red]"
                f" (first: {failures[0]['error']})"
            )
        state = "complete" if results["complete"] else "[red]incomplete[/red]"
        if outcome.status == "fatal" and outcome.message:
            Console(stderr=True, highlight=False, soft_wrap=True).print(
                f"[bold red]error:[/bold red] {escape(outcome.message)}"
            )
        elif outcome.message:
            self.console.print(f"[red]{escape(outcome.message)}[/red]")
        self.console.print(f"Run {state}: results in {self.request.out / 'results.json'}")
        if not results["complete"]:
            self.console.print("Re-run the same command to resume; finished work is kept.")

    def print_estimate(self, plan: Plan, config: RunConfig) -> None:
        from rich.table import Table

        estimate = plan.estimate()
        table = Table(
            title=f"Dry run: {config.benchmark} (nothing will be sent)", title_justify="left"
        )
        for column in ("stage", "requests", "prompt tokens (est.)", "completion tokens (max)"):
            table.add_column(column, justify="left" if column == "stage" else "right")
        if estimate.answers:
            table.add_row(
                f"answers ({config.model})",
                str(estimate.answers),
                f"{estimate.answer_prompt_tokens:,}",
                f"{estimate.answer_completion_tokens:,}",
            )
        table.add_row(
            f"judgments ({config.judge})",
            str(estimate.judgments),
            f"{estimate.judge_prompt_tokens:,}",
            f"{estimate.judge_completion_tokens:,}",
        )
        self.console.print(table)
        for note in estimate.notes:
            self.console.print(note)
