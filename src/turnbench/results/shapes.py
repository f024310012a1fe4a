"""The typed shapes of results.json (`docs/results.schema.json` is generated from them).

Three shapes, each a pydantic model:
- `SingleRunResults`: `turnbench run`, one model's results at the top level;
- `JudgeOnlyResults`: `turnbench judge --mode single`, one results object per model under
  `models` (with a single model the same keys also stand at the top level, shaped like a
  `run` result), plus a `ranking` when several models were judged;
- `PairwiseResults`: `turnbench judge --mode pairwise|pairwise-all`.
Every shape carries the run's common keys (`RunInfo`): usage, failing requests, provenance
and timing. A benchmark adds its own score tables (by category, by task, ...) to a model's
results; the model allows those extra keys and each built-in benchmark documents them.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model

from turnbench.results.stress import ArmResults
from turnbench.trust.models import (
    FlaggedAnswer,
    JudgeAgreement,
    JudgeScores,
    JudgmentCounts,
    LengthControl,
    LengthScores,
    PairwiseJudgeResults,
    PairwiseLength,
    PairwiseRepeats,
    RepeatSpread,
)


class Counts(BaseModel):
    """Judged turns of one model: every planned judgment ends scored, failed (unparseable
    after its re-asks) or pending (its request failed or the run stopped; re-run to finish)."""

    model_config = ConfigDict(extra="allow")

    expected: int
    judged: int
    failed: int
    pending: int
    reasks: int
    answers: int
    judgments: JudgmentCounts | None = None  # with a panel or repeats: single judgments


class SimulatorCounts(BaseModel):
    """The simulated user of a run's conversations, counted (results.json `simulator`):
    its turns by who wrote them (`template`, `user-model`), the conversations in which
    some turn broke each rule (`conversations_with`: "several_shards", "invented",
    "answered_itself", "role_switch", "ended_before_start": its first message only an end
    marker, "recited_instructions": its own instructions repeated; a benchmark lists the
    ones it checks) and the turns that did (`turns_with`), the user model's re-asks
    (--strict-user), and how conversations ended by the user's word."""

    user_turns: int
    by_origin: dict[str, int]
    conversations: int
    conversations_with: dict[str, int]
    turns_with: dict[str, int]
    reasks: int
    ended: dict[str, int]


class ModelResults(BaseModel):
    """One model's results. Benchmark score tables (`by_category`, `by_task`, ...) are extra
    keys; scores are unrounded and `null` where nothing was scored."""

    model_config = ConfigDict(extra="allow")

    benchmark: str
    model: str
    judge: str
    complete: bool
    overall: float | None
    overall_ci95: list[float] | None = None
    counts: Counts
    parse_failures: list[dict[str, Any]]
    #: answers that ended inside an unclosed <think> block (not judged: failed turns, see
    #: `counts.unclosed_think`)
    unclosed_think: list[dict[str, Any]] = []
    # judge trust (turnbench.trust): panels, repeats, length, injection flags
    by_judge: dict[str, JudgeScores] | None = None
    judge_agreement: JudgeAgreement | None = None
    repeats: RepeatSpread | None = None
    length: LengthScores | None = None
    flagged_answers: list[FlaggedAnswer] | None = None
    simulator: SimulatorCounts | None = None  # simulated conversations only


class RoleUsage(BaseModel):
    """Tokens of one role (the model's answers generated here, or the judges) over every
    record it logged, and what they cost at the price table's prices (`cost_usd` null when a
    model of the role has no price; `prices_as_of` the table's date). `unanswered_attempts`:
    attempts sent that returned nothing (a timeout, a dropped connection, a 5xx), counted
    whether their request later succeeded or not; `unanswered_cost_usd_worst_case`: their
    worst case in dollars (prompt at one token per UTF-8 byte plus chat overhead, the whole
    token limit), since a provider may bill them; null when unpriced."""

    model_config = ConfigDict(extra="allow")

    prompt_tokens: int
    completion_tokens: int
    requests_logged: int
    cached_prompt_tokens: int = 0
    cache_creation_tokens: int = 0
    batch_prompt_tokens: int = 0  # the part of prompt_tokens sent in provider batches
    batch_completion_tokens: int = 0
    cost_usd: float | None = None
    prices_as_of: str | None = None
    # attempts that were sent and returned nothing (timeouts, dropped connections, 5xx),
    # and their worst case in dollars: a provider may bill them (null when unpriced)
    unanswered_attempts: int = 0
    unanswered_cost_usd_worst_case: float | None = None


class RequestFailure(BaseModel):
    model_config = ConfigDict(extra="allow")

    key: str
    stage: str  # "answer", "judgment", "user_turn" or "reply" (a role a driver names)
    error: str
    attempts: int


class InvalidRecord(BaseModel):
    key: str
    kind: str
    reason: str


class Provenance(BaseModel):
    """What produced the numbers: versions, data, prompts, parser, sampling, endpoints."""

    model_config = ConfigDict(extra="allow")

    turnbench_version: str
    schema_version: int
    benchmark_ref: str | None = None
    mode: Literal["run", "judge"]
    judging: str
    parser: str | None  # null (and max_reasks, judge_sampling): a run with no judge
    max_reasks: int | None
    prompt_versions: dict[str, str]
    data_sha256: dict[str, str]
    reference_sha256: str | None
    answers_sha256: dict[str, str]
    options: dict[str, Any]
    limit: int | None
    demo: bool
    endpoints: dict[str, Any]
    strip_think: bool = True
    answer_sampling: dict[str, Any] | None
    judge_sampling: dict[str, Any] | None
    judge_scoring: str | None = "parsed"
    answer_params_sent: list[Any]
    judge_params_sent: list[Any]
    model_reported: list[Any]
    model_system_fingerprints: list[Any]
    judge_reported: list[Any]
    judge_system_fingerprints: list[Any]
    #: replies each endpoint (redacted URL) gave, over every invocation of the run: answers
    #: under "model", judgments per judge under "judge" (re-asks count; in-process,
    #: imported and batch work is not counted)
    endpoint_requests: dict[str, Any] = Field(default_factory=dict)


class BatchInfo(BaseModel):
    """One provider batch of the run, as its log records tell it."""

    model_config = ConfigDict(extra="allow")

    batch_id: str | None  # null: the run stopped before the provider confirmed it
    provider: str
    role: str  # "model" or the judge
    stage: str
    items: int
    state: str | None  # the provider's final word, null while it was not seen to end
    counts: dict[str, int]


class RunInfo(BaseModel):
    """Keys every results.json has."""

    model_config = ConfigDict(extra="allow")

    schema_version: int
    benchmark: str
    judge: str  # the judge's spec (a panel's specs joined with " + ")
    judges: list[str]
    complete: bool
    usage: dict[str, RoleUsage]
    request_failures: list[RequestFailure]
    invalid_records: list[InvalidRecord] = []
    provenance: Provenance
    started_at: str  # ISO-8601 UTC: the first invocation's start
    finished_at: str  # the last invocation's end
    wall_seconds: float  # summed over invocations
    stopped: str | None = None
    judge_warning: str | None = None
    warnings: list[str] = []  # e.g. the judge answered from the model's own endpoint
    batches: list[BatchInfo] = []  # provider batches (--judge-batch, --model-batch)


class SingleRunResults(ModelResults, RunInfo):
    """`turnbench run`: the model's results at the top level."""

    #: --perturb: each stress arm against the unperturbed run (docs/stress.md)
    perturbations: dict[str, ArmResults] | None = None


class JudgeOnlyResults(RunInfo):
    """`turnbench judge --mode single`: one results object per model under `models`."""

    models: dict[str, ModelResults]
    ranking: dict[str, Any] | None = None
    length_control: LengthControl | None = None


class PairwiseRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str
    win: int
    loss: int
    tie: int
    inconsistent: int
    compared: int
    win_rate: float | None
    loss_rate: float | None
    win_rate_adjusted: float | None
    by_turn: dict[str, dict[str, Any]]
    versus: dict[str, dict[str, Any]]


class PairwiseResults(RunInfo):
    """`turnbench judge --mode pairwise|pairwise-all`: win/loss/tie per model, the judge's
    position consistency, and Bradley-Terry ratings."""

    mode: Literal["pairwise", "pairwise-all"]
    baseline: str | None
    models: dict[str, PairwiseRow]
    position_consistency: float | None
    first_position_win_share: float | None
    verdicts: dict[str, int]
    ratings: dict[str, Any]
    counts: dict[str, Any]
    parse_failures: list[dict[str, Any]]
    by_judge: dict[str, PairwiseJudgeResults] | None = None
    judge_agreement: JudgeAgreement | None = None
    repeats: PairwiseRepeats | None = None
    length: PairwiseLength | None = None
    flagged_answers: list[FlaggedAnswer] | None = None


ResultsFile = SingleRunResults | JudgeOnlyResults | PairwiseResults
ResultsModel = SingleRunResults | JudgeOnlyResults | PairwiseResults
RESULTS_ADAPTER: TypeAdapter[ResultsFile] = TypeAdapter(ResultsFile)


def results_json(results: ResultsModel) -> dict[str, Any]:
    """What results.json holds of a results model: every key it was built with and no
    other (a default nobody set stays out, as it always has)."""
    return results.model_dump(mode="json", exclude_unset=True)


def results_schema() -> dict[str, Any]:
    """The JSON Schema of every results.json turnbench writes."""
    schema = RESULTS_ADAPTER.json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "turnbench results.json"
    schema["description"] = (
        "Written by `turnbench run` and `turnbench judge`; one of three shapes: a run of one "
        "model, judge-only results of several models, or pairwise results. Generated from "
        "turnbench.results.build (python -m turnbench.interop.schema)."
    )
    return schema


# -- results typed by their benchmark -------------------------------------------------------
class TypedShapes:
    """The shapes of one benchmark's results: a model's results (`model`), `turnbench run`'s
    file (`single`), `turnbench judge`'s (`judged`), and the reader of any of them
    (`adapter`). Each is built when first asked for: a run writes one shape and building
    the others (pydantic models and a union adapter) would cost every run for nothing."""

    def __init__(self, benchmark: type[Any] | None) -> None:
        self.benchmark = benchmark

    @functools.cached_property
    def model(self) -> type[ModelResults]:
        benchmark = self.benchmark
        if benchmark is None:
            return ModelResults
        fields: dict[str, Any] = {}
        tables = benchmark.results_model
        for model in (benchmark.header_model, tables):
            for name, info in model.model_fields.items() if model is not None else ():
                if info.exclude or name in ModelResults.model_fields:
                    continue
                fields[name] = (info.annotation | None, None)
        if tables is None or "by_group" in tables.model_fields:  # (the default tables)
            fields[f"by_{benchmark.group_kind}"] = (dict[str | None, float | None] | None, None)
        return create_model(f"{self._name}ModelResults", __base__=ModelResults, **fields)

    @functools.cached_property
    def single(self) -> type[SingleRunResults]:
        if self.benchmark is None:
            return SingleRunResults
        return create_model(f"{self._name}RunResults", __base__=(self.model, SingleRunResults))

    @functools.cached_property
    def judged(self) -> type[JudgeOnlyResults]:
        if self.benchmark is None:
            return JudgeOnlyResults
        return create_model(
            f"{self._name}JudgeOnlyResults",
            __base__=JudgeOnlyResults,
            models=(dict[str, self.model], ...),  # type: ignore[name-defined]
        )

    @functools.cached_property
    def adapter(self) -> TypeAdapter[Any]:
        if self.benchmark is None:
            return RESULTS_ADAPTER
        return TypeAdapter(self.single | self.judged | PairwiseResults)

    @property
    def _name(self) -> str:
        name = str(self.benchmark.name) if self.benchmark is not None else ""
        return "".join(part.title() for part in name.replace("-", "_").split("_"))


@functools.cache
def typed_shapes(benchmark: type[Any] | None) -> TypedShapes:
    """The results shapes typed by `benchmark` (a `Benchmark` class): its settings
    (`header_model`) and its score tables (`results_model`, or the default `by_<group_kind>`
    table) become typed fields of a model's results, so results.json is validated with them
    when it is written (`build_results`) and read back as them (`Run.typed`), up to the page.
    A field absent from an older file stays None; None for `benchmark`: a run of a
    benchmark the reader does not know, its tables left as they are (extra keys)."""
    return TypedShapes(benchmark)
