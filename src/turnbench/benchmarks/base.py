"""What every benchmark provides to the CLI and the runner.

A benchmark is rules (code) over content (data files). It plans work as one coroutine per
sample, interprets answer files for judge-only runs, and turns log records into
results.json. Everything else (resume, retries, logging, progress) is shared.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from turnbench.config import RunConfig, SamplingConfig
from turnbench.errors import UserError
from turnbench.judging.reask import Followup, followup
from turnbench.runner import RunContext
from turnbench.types import (
    JudgmentRecord,
    LogRecord,
    Message,
    ReplyConstraint,
    RequestParams,
    SampleId,
)

Job = Callable[[], Awaitable[None]]
CHARS_PER_TOKEN = 4  # rough estimate for --dry-run (no tokenizer download needed)


@dataclass
class Settings:
    """Choices that shape requests, resolved from flags before the run starts."""

    judge: str
    parser: str = "strict"  # "strict" or "compat"
    max_reasks: int = 2
    answer_sampling: SamplingConfig | None = None
    judge_sampling: SamplingConfig = field(
        default_factory=lambda: SamplingConfig(temperature=0.0, max_tokens=2048)
    )
    limit: int | None = None
    reference_file: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def judge_params(self, kind: str = "rating") -> RequestParams:
        """`kind`: "rating" (single grading) or "verdict" (pairwise)."""
        sampling = self.judge_sampling
        return RequestParams(
            temperature=sampling.temperature,
            max_tokens=sampling.max_tokens,
            n=1,
            extra=sampling.extra,
            constraint=local_judge_constraint(self.judge, kind),
        )

    def reask_params(self, kind: str = "rating") -> RequestParams:
        """A re-ask only needs the rating or verdict; its token limit can be lower."""
        limit = self.judge_sampling.reask_max_tokens
        params = self.judge_params(kind)
        return params if limit is None else params.model_copy(update={"max_tokens": limit})


def local_judge_constraint(judge: str, kind: str) -> ReplyConstraint | None:
    """The embedded judge decodes under a grammar that always ends in a valid rating or
    verdict (minimal hook until the judge-side code passes constraints itself)."""
    if not judge.startswith("local/"):
        return None
    if kind == "verdict":
        return ReplyConstraint(kind="verdict", choices=("A", "B", "C"), lead="Final verdict: ")
    return ReplyConstraint(kind="rating", choices=tuple(str(n) for n in range(1, 11)))


@dataclass
class AnswerSet:
    """Answers of one model read from a file: sample id -> one text per turn."""

    model: str
    path: Path
    sha256: str
    answers: dict[Any, list[str]]


@dataclass
class PlanEstimate:
    answers: int
    judgments: int
    answer_prompt_tokens: int
    answer_completion_tokens: int
    judge_prompt_tokens: int
    judge_completion_tokens: int
    notes: list[str] = field(default_factory=list)


class Benchmark(ABC):
    name: ClassVar[str]
    dataset: ClassVar[str]  # key of its data files in sources.json
    description: ClassVar[str]

    def __init__(self, files: dict[str, Path], settings: Settings) -> None:
        self.files = files
        self.settings = settings

    # -- what the run needs to know -------------------------------------------------------
    @abstractmethod
    def prompt_versions(self) -> dict[str, str]: ...

    @abstractmethod
    def config_options(self) -> dict[str, Any]:
        """Benchmark settings that must not change when a run is resumed."""

    def reference_sha256(self) -> str | None:
        return None

    def rating_followup(self) -> Followup:
        return followup("rating")

    #: registry names of the rating parser for `--parser strict` and `--parser compat`
    PARSERS: ClassVar[dict[str, str]]

    @property
    def parser_name(self) -> str:
        return self.PARSERS[self.settings.parser]

    async def rate(
        self,
        ctx: RunContext,
        *,
        key: str,
        model: str,
        sample_id: SampleId,
        turn: int,
        prompt_name: str,
        messages: list[Message],
        meta: dict[str, Any],
    ) -> JudgmentRecord | None:
        """One single-grading judgment with this run's judge, parser and re-ask settings."""
        return await ctx.judgment(
            key=key,
            judge=self.settings.judge,
            model=model,
            sample_id=sample_id,
            turn=turn,
            prompt_name=prompt_name,
            messages=messages,
            params=self.settings.judge_params(),
            parser=self.parser_name,
            max_reasks=self.settings.max_reasks,
            followup=self.rating_followup(),
            reask_params=self.settings.reask_params(),
            meta=meta,
        )

    # -- planning --------------------------------------------------------------------------
    @abstractmethod
    def run_jobs(self, ctx: RunContext, model: str) -> list[Job]:
        """Generate the model's answers and judge them."""

    @abstractmethod
    def judge_jobs(self, ctx: RunContext, answer_sets: list[AnswerSet]) -> list[Job]:
        """Judge answers read from files."""

    @abstractmethod
    def planned_keys(self, mode: str, models: list[str]) -> dict[str, set[str]]:
        """Log keys of the planned work per stage ("answers", "judgments")."""

    @abstractmethod
    def estimate(self, mode: str, models: int) -> PlanEstimate: ...

    @abstractmethod
    def load_answers(self, path: Path) -> list[AnswerSet]:
        """Answer files (a file or a folder of them), validated against the benchmark."""

    # -- results ---------------------------------------------------------------------------
    @abstractmethod
    def model_results(
        self, records: list[LogRecord], config: RunConfig, model: str
    ) -> dict[str, Any]:
        """The results object of one model, rebuilt from the log."""

    def render_table(self, results: dict[str, Any]) -> Any:
        """A rich renderable of one model's results."""
        raise NotImplementedError


def require_distinct_models(path: Path, sets: list[AnswerSet]) -> list[AnswerSet]:
    """Two answer sources under one model name would silently merge; refuse them."""
    names = [s.model for s in sets]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"{path}: two answer sources name the same model ({', '.join(twice)})")
    return sets


def final_judgments(records: list[LogRecord], judge: str, model: str) -> dict[str, JudgmentRecord]:
    """Latest judgment per key by `judge` for `model`."""
    latest: dict[str, JudgmentRecord] = {}
    for record in records:
        if isinstance(record, JudgmentRecord) and record.judge == judge and record.model == model:
            latest[record.key] = record
    return latest


class Plan(Protocol):
    """What one invocation will do: its work, its identity for resuming, its estimate.

    Single grading (`SinglePlan`) and pairwise judging (`MTBenchPairwise`) both provide it,
    so the session runs either without knowing which.
    """

    def prompt_versions(self) -> dict[str, str]: ...

    def config_options(self) -> dict[str, Any]: ...

    def planned_keys(self) -> dict[str, set[str]]: ...

    def jobs(self, ctx: RunContext) -> list[Job]: ...

    def estimate(self) -> PlanEstimate: ...


class SinglePlan:
    """Single-answer grading: generate and judge (`run`), or judge answer files (`judge`)."""

    def __init__(
        self, benchmark: Benchmark, mode: str, model: str | None, answer_sets: list[AnswerSet]
    ) -> None:
        self.benchmark = benchmark
        self.mode = mode
        self.model = model
        self.answer_sets = answer_sets
        self.models = [model] if mode == "run" and model else [s.model for s in answer_sets]

    def prompt_versions(self) -> dict[str, str]:
        return self.benchmark.prompt_versions()

    def config_options(self) -> dict[str, Any]:
        return self.benchmark.config_options()

    def planned_keys(self) -> dict[str, set[str]]:
        return self.benchmark.planned_keys(self.mode, self.models)

    def jobs(self, ctx: RunContext) -> list[Job]:
        if self.mode == "run":
            assert self.model is not None
            return self.benchmark.run_jobs(ctx, self.model)
        return self.benchmark.judge_jobs(ctx, self.answer_sets)

    def estimate(self) -> PlanEstimate:
        return self.benchmark.estimate(self.mode, len(self.models) or 1)
