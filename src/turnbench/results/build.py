"""results.json: typed, rebuilt from the run log every time (never updated in place).

Three shapes, each a pydantic model (`docs/results.schema.json` is generated from them):
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

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from turnbench import SCHEMA_VERSION, __version__
from turnbench.benchmarks.base import JudgedTurn, Sample
from turnbench.engine.plan import NO_REQUEST, Game
from turnbench.engine.work import Work
from turnbench.journal.config import RunConfig
from turnbench.journal.logindex import (
    AnswerDone,
    JudgmentDone,
    LogIndex,
    RoleProvenance,
    RoleTotals,
    UserTurnDone,
    index_records,
)
from turnbench.journal.runlog import parse_record_bytes
from turnbench.judging.cleaning import UNCLOSED_REASON
from turnbench.judging.pairwise import PairOutcome, Tally, combine_games, game_winner
from turnbench.record_keys import answer_key, game_key, judgment_key, record_key, user_turn_key
from turnbench.results.stress import ArmResults, perturbations
from turnbench.trust import blocks as trust
from turnbench.trust.games import combine_game, judge_verdict
from turnbench.trust.length import fit_length_effect
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
from turnbench.types import AnswerRecord, ConfigRecord, LogRecord, SampleId


# -- the typed shapes -----------------------------------------------------------------------
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
    marker) and the turns that did (`turns_with`), the user model's re-asks
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
    stage: Literal["answer", "judgment", "user_turn"]
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
RESULTS_ADAPTER: TypeAdapter[ResultsFile] = TypeAdapter(ResultsFile)


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


# -- building -------------------------------------------------------------------------------
@dataclass
class Timing:
    started_at: float
    finished_at: float
    wall_seconds: float


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")


def timing(records: Sequence[LogRecord] | LogIndex, finished: float) -> Timing:
    """First start and last finish over every invocation, wall time summed: an invocation
    runs from its config record to its end record (the current one to `finished`); one
    killed before it wrote an end record counts to its last record, so its time counts too."""
    spans: list[list[float]] = []
    if isinstance(records, LogIndex):
        spans = [list(span) for span in records.spans]
    else:
        for record in records:
            if isinstance(record, ConfigRecord):
                spans.append([record.ts, record.ts])
            elif spans:
                spans[-1][1] = max(spans[-1][1], record.ts)
    if spans:
        spans[-1][1] = finished
    first = spans[0][0] if spans else finished
    return Timing(first, finished, round(sum(end - start for start, end in spans), 3))


def _usage(
    totals: RoleTotals, cost: float | None, as_of: str | None, unanswered: tuple[int, float | None]
) -> dict[str, Any]:
    usage, batch = totals.usage, totals.batch
    attempts, worst = unanswered
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "requests_logged": totals.requests_logged,
        "cached_prompt_tokens": usage.cached_prompt_tokens,
        "cache_creation_tokens": usage.cache_creation_tokens,
        "batch_prompt_tokens": batch.prompt_tokens,
        "batch_completion_tokens": batch.completion_tokens,
        "cost_usd": cost,
        "prices_as_of": as_of,
        "unanswered_attempts": attempts,
        "unanswered_cost_usd_worst_case": worst,
    }


def self_judging(config: RunConfig, provenance: Mapping[str, Any]) -> str | None:
    """A warning when the judge may have been the model under test: both roles reached one
    endpoint and the replies of both named the same model (a server that ignores the
    `model` field grades its own answers while results name another judge)."""
    from turnbench.backends.urls import same_endpoint

    model_urls = str(config.endpoints.get("model") or "").split(", ")
    judge_field = config.endpoints.get("judge")
    judge_urls = [
        url
        for item in (judge_field if isinstance(judge_field, list) else [judge_field])
        for url in str(item or "").split(", ")
    ]
    shared = [m for m in model_urls if m and any(same_endpoint(m, j) for j in judge_urls if j)]
    names = set(provenance.get("model_reported") or []) & set(
        provenance.get("judge_reported") or []
    )
    if not shared or not names:
        return None
    return (
        f"the judge ({config.judge}) and the model under test ({config.model}) reached the "
        f"same endpoint ({shared[0]}) and its replies named the same model "
        f"({', '.join(sorted(map(str, names)))}): the model may have judged its own answers. "
        "Check --judge-base-url and $OPENAI_BASE_URL (which moves every role without its own "
        "base URL)."
    )


def _role_cost(prices: Any, specs: Sequence[tuple[str, RoleTotals]]) -> float | None:
    """Dollars of a role's models (None when one that was used has no price)."""
    total = 0.0
    for spec, totals in specs:
        if not totals.requests_logged:
            continue
        cost = prices.role_cost(spec, totals.usage, totals.batch)
        if cost is None:
            return None
        total += cost
    return total


def role_usage(config: RunConfig, index: LogIndex, prices: Any = None) -> dict[str, Any]:
    """results.json's `usage`: tokens and dollars of the model under test and the judges."""
    if prices is None:
        from turnbench.prices import load_prices

        prices = load_prices()
    judges = [(judge.id, index.judge_usage.get(judge.id, RoleTotals())) for judge in config.judges]
    model = [(config.model, index.answer_usage)] if config.model else []
    unanswered_model = [(config.model, index.unanswered.get("model"))] if config.model else []
    unanswered_judges = [(judge.id, index.unanswered.get(judge.id)) for judge in config.judges]
    usage = {
        "model": _usage(
            index.answer_usage,
            _role_cost(prices, model),
            prices.as_of,
            _unanswered(prices, unanswered_model),
        ),
        "judge": _usage(
            index.judges_usage([j.id for j in config.judges]),
            _role_cost(prices, judges),
            prices.as_of,
            _unanswered(prices, unanswered_judges),
        ),
    }
    if config.user is not None:  # the simulated user's model
        spec = config.user.spec
        usage["user"] = _usage(
            index.user_usage,
            _role_cost(prices, [(spec, index.user_usage)]),
            prices.as_of,
            _unanswered(prices, [(spec, index.unanswered.get("user"))]),
        )
    return usage


def _unanswered(
    prices: Any, specs: Sequence[tuple[str, RoleTotals | None]]
) -> tuple[int, float | None]:
    """A role's attempts that returned nothing, and their worst case in dollars (None when
    a model that had some has no price)."""
    attempts, total = 0, 0.0
    priced = True
    for spec, totals in specs:
        if totals is None or not totals.requests_logged:
            continue
        attempts += totals.requests_logged
        worst = prices.bound(spec, totals.usage)
        priced = priced and worst is not None
        total += worst or 0.0
    return attempts, total if priced else None


def provenance(config: RunConfig, records: Sequence[LogRecord] | LogIndex) -> dict[str, Any]:
    index = records if isinstance(records, LogIndex) else index_records(list(records))
    answers: RoleProvenance = index.answer_provenance
    judgments = index.judges_provenance([judge.id for judge in config.judges])
    first = config.judges[0] if config.judges else None
    return {
        "turnbench_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "benchmark_ref": config.benchmark_ref,
        "mode": config.mode,
        "judging": config.judging,
        "parser": first.parser if first else None,
        "max_reasks": first.max_reasks if first else None,
        "prompt_versions": config.prompt_versions,
        "data_sha256": config.data_sha256,
        "reference_sha256": config.reference_sha256,
        "answers_sha256": config.answers_sha256,
        "options": config.options,
        "limit": config.limit,
        "demo": config.demo,
        "endpoints": config.endpoints,
        "strip_think": config.strip_think,
        "answer_sampling": config.answer_sampling.model_dump() if config.answer_sampling else None,
        "judge_sampling": first.sampling.model_dump() if first else None,
        "user": config.user.model_dump(mode="json") if config.user is not None else None,
        "judge_scoring": first.scoring if first else None,
        "judge_guard": any(judge.guard for judge in config.judges),
        "judge_repeats": config.judge_repeats,
        "repeat_aggregate": config.repeat_aggregate,
        "panel_aggregate": config.panel_aggregate,
        "answer_params_sent": answers.params.values(),
        "judge_params_sent": judgments.params.values(),
        "model_reported": answers.reported_model.values(),
        "model_system_fingerprints": answers.system_fingerprint.values(),
        "judge_reported": judgments.reported_model.values(),
        "judge_system_fingerprints": judgments.system_fingerprint.values(),
        "endpoint_requests": {
            "model": dict(answers.served),
            "judge": {
                judge.id: dict(index.judges_provenance([judge.id]).served)
                for judge in config.judges
            },
        },
    }


class LogView:
    """The log's finished work by key (valid records only), and what was left out. `path`:
    the log file, for the answer texts the index does not keep (an imported answer's), read
    back when a benchmark's results need them (deterministic checks)."""

    def __init__(self, records: Sequence[LogRecord] | LogIndex, path: Path | None = None) -> None:
        self.path = path
        self.index = records if isinstance(records, LogIndex) else index_records(list(records))
        # records given in memory (tests, the API) keep their answer texts at hand
        self._held: dict[str, str] = (
            {}
            if isinstance(records, LogIndex)
            else {record_key(r): r.text for r in records if isinstance(r, AnswerRecord)}
        )
        self._texts: dict[str, dict[tuple[SampleId, int], str]] = {}
        self._lengths: dict[str, dict[tuple[SampleId, int], int]] = {}
        self.done = self.index.done
        self.invalid = self.index.invalid
        #: (model, judge, repeat, arm) -> items
        self.judged: dict[tuple[str, str, int, str | None], list[JudgedTurn]] = {}

    def judgment(self, key: str) -> JudgmentDone | None:
        record = self.done.get(key)
        return record if isinstance(record, JudgmentDone) else None

    def answered(self, model: str) -> set[tuple[Any, int]]:
        """(sample id, turn) of every answer of `model` in the log."""
        return self.index.answered.get(model, set())

    def answer(
        self,
        model: str,
        sample_id: SampleId,
        turn: int,
        *,
        read: bool = True,
        arm: str | None = None,
    ) -> str | None:
        """The recorded (cleaned) answer of a turn, if there is one. The index keeps the
        texts of generated answers; an imported one is read back from the log (`read`).
        `arm`: the answer given in that stress arm."""
        key = answer_key(model, sample_id, turn, arm)
        done = self.done.get(key)
        if not isinstance(done, AnswerDone):
            return None
        if done.text is None and key in self._held:
            return self._held[key]
        if read and done.text is None and self.path is not None and done.offset >= 0:
            with self.path.open("rb") as handle:
                handle.seek(done.offset)
                record = parse_record_bytes(handle.read(done.length))
            if isinstance(record, AnswerRecord):
                return record.text
        return done.text

    def answer_texts(self, model: str) -> dict[tuple[SampleId, int], str]:
        """Every recorded answer text of `model` (imported ones read back from the log in one
        pass, in file order), by (sample id, turn)."""
        cached = self._texts.get(model)
        if cached is not None:
            return cached
        texts: dict[tuple[SampleId, int], str] = {}
        unread: list[AnswerDone] = []
        for key, done in self.done.items():
            if not isinstance(done, AnswerDone) or done.model != model or done.arm is not None:
                continue
            text = done.text if done.text is not None else self._held.get(key)
            if text is not None:
                texts[(done.sample_id, done.turn)] = text
            elif done.offset >= 0:
                unread.append(done)
        if unread and self.path is not None:
            with self.path.open("rb") as handle:
                for done in sorted(unread, key=lambda d: d.offset):
                    handle.seek(done.offset)
                    record = parse_record_bytes(handle.read(done.length))
                    if isinstance(record, AnswerRecord):
                        texts[(done.sample_id, done.turn)] = record.text
        # one model's texts at a time: readers go model by model, and a run of 100 models
        # must not hold every answer of every model at once
        self._texts = {model: texts}
        return texts

    def answer_lookup(self, model: str) -> Callable[[SampleId, int], str | None]:
        """(sample id, turn) -> the model's recorded answer text, or None."""
        texts = self.answer_texts(model)
        return lambda sample_id, turn: texts.get((sample_id, turn))

    def answer_length_lookup(self, model: str) -> Callable[[SampleId, int], int | None]:
        """(sample id, turn) -> the length in characters of the model's answer, or None;
        kept for every model (a few bytes per answer), unlike the texts."""
        lengths = self._lengths.get(model)
        if lengths is None:
            # from the index: no answer text is read again
            lengths = {
                (done.sample_id, done.turn): done.chars
                for done in self.done.values()
                if isinstance(done, AnswerDone) and done.model == model and done.arm is None
            }
            self._lengths[model] = lengths
        return lambda sample_id, turn: lengths.get((sample_id, turn))

    def unclosed_think(self, model: str) -> list[tuple[SampleId, int]]:
        """(sample id, turn) of the answers of `model` cut off inside <think>."""
        found = [
            (d.sample_id, d.turn)
            for d in self.done.values()
            if isinstance(d, AnswerDone) and d.model == model and d.unclosed_think and d.arm is None
        ]
        return sorted(found, key=lambda item: (str(item[0]), item[1]))


def judged_turns(
    work: Work, view: LogView, model: str, judge: str, repeat: int = 0, arm: str | None = None
) -> list[JudgedTurn]:
    """Every planned judged turn (and criterion) of `model` by `judge`, as the log has it.

    A turn without judge requests is one item, scored once its answer is recorded. Answer
    texts the index does not hold are read back only for benchmarks that need them. `arm`:
    the items as that stress arm's keys have them (every planned turn: the caller keeps
    the arm's own)."""
    cached = view.judged.get((model, judge, repeat, arm))
    if cached is not None:
        return cached
    items: list[JudgedTurn] = []
    done = view.done
    with_text = work.benchmark.needs_answer_text
    simulated = work.benchmark.history == "simulated"
    for sample, turn, criterion in work.plan.items:
        answer = view.answer(model, sample.id, turn, read=with_text, arm=arm)
        answered_as = done.get(answer_key(model, sample.id, turn, arm))
        if answer is None and simulated and arm is None:  # the user ended before this turn
            final = ended_before(view, model, sample.id, turn)
            if final == 0:  # ... before the model's first answer: nothing can be judged
                reason = ENDED_BEFORE_START_REASON
                criterion = None if criterion is NO_REQUEST else criterion
                items.append(JudgedTurn(sample, turn, "failed", reason=reason, criterion=criterion))
                continue
            if final is not None:
                answer = view.answer(model, sample.id, final, read=with_text)
                answered_as = done.get(answer_key(model, sample.id, final))
        if isinstance(answered_as, AnswerDone) and answered_as.unclosed_think:
            # nothing to judge: never a judgment of the empty answer (older runs judged it)
            items.append(
                JudgedTurn(
                    sample,
                    turn,
                    "failed",
                    reason=UNCLOSED_REASON,
                    criterion=None if criterion is NO_REQUEST else criterion,
                    answer=answer,
                    unclosed_think=True,
                )
            )
            continue
        if criterion is NO_REQUEST:
            answered = answer is not None or (sample.id, turn) in view.answered(model)
            status: Literal["scored", "pending"] = "scored" if answered else "pending"
            items.append(JudgedTurn(sample, turn, status, answer=answer))
            continue
        key = judgment_key(
            judge, model, sample.id, turn, criterion=criterion, repeat=repeat, arm=arm
        )
        record = done.get(key)
        judgment = record if isinstance(record, JudgmentDone) else None
        items.append(_judged(sample, turn, criterion, judgment, answer))
    view.judged[(model, judge, repeat, arm)] = items
    return items


def ended_before(view: LogView, model: str, sample_id: SampleId, turn: int) -> int | None:
    """The last answered turn of a simulated conversation the user ended before `turn`
    (its final answer stands for the later judged turn: `Work._judge_at_end`), 0 when the
    user ended it before the model's first answer, or None (not ended)."""
    for number in range(turn, 0, -1):
        done = view.done.get(user_turn_key(model, sample_id, number))
        if isinstance(done, UserTurnDone) and done.ended:
            return number if done.text.strip() else number - 1
    return None


#: the failure of a judged turn whose conversation the simulated user ended with its first
#: message (only an end marker): not the model's fault, and not pending (a resume would
#: read the same logged turn back); `simulator.conversations_with.ended_before_start`
ENDED_BEFORE_START_REASON = (
    "the simulated user ended the conversation before the model's first answer"
)


#: the one column of a run with no judge: its items are all NO_REQUEST, scored from answers
NO_JUDGE = ""


def _judged(
    sample: Sample,
    turn: int,
    criterion: str | None,
    record: JudgmentDone | None,
    answer: str | None = None,
) -> JudgedTurn:
    if record is None:
        return JudgedTurn(sample, turn, "pending", criterion=criterion, answer=answer)
    if record.status == "scored":
        checklist = tuple(record.checklist) if record.checklist is not None else None
        return JudgedTurn(
            sample,
            turn,
            "scored",
            record.score,
            checklist,
            record.reasks,
            criterion=criterion,
            scoring=record.scoring,
            answer=answer,
        )
    return JudgedTurn(
        sample,
        turn,
        "failed",
        reasks=record.reasks,
        reason=record.parse_error,
        criterion=criterion,
        answer=answer,
    )


def panel_items(
    work: Work, config: RunConfig, view: LogView, model: str, arm: str | None = None
) -> trust.PanelItems:
    """Every judgment of `model`'s items: per judge, per repeat (combined as configured);
    `arm`: of that stress arm. A run with no judge (every turn scored from its answer) has its
    items under NO_JUDGE."""
    judges = [judge.id for judge in config.judges] or [NO_JUDGE]
    return trust.PanelItems(
        {
            judge: [
                judged_turns(work, view, model, judge, repeat, arm)
                for repeat in range(config.judge_repeats)
            ]
            for judge in judges
        },
        config.repeat_aggregate,
        config.panel_aggregate,
    )


def model_results(
    work: Work,
    config: RunConfig,
    view: LogView,
    model: str,
    panel: trust.PanelItems | None = None,
) -> dict[str, Any]:
    benchmark = work.benchmark
    panel = panel or panel_items(work, config, view, model)
    items = panel.combined  # one item per planned judgment: repeats, then judges, combined
    tables = benchmark.aggregate(items)
    judged = sum(item.status == "scored" for item in items)
    failures = [
        {**benchmark.describe(item.sample), "turn": item.turn, "reason": item.reason}
        for item in items
        if item.status == "failed"
    ]
    pending = len(items) - judged - len(failures)
    answers = view.answered(model)
    unclosed = view.unclosed_think(model)
    judgments = panel.judgment_counts()
    results = {
        "benchmark": benchmark.name,
        "model": model,
        "judge": config.judge,
        "complete": pending == 0 and judgments["pending"] == 0,
        **benchmark.results_header(),
    }
    results.update(tables.results_fields())
    results["counts"] = {
        "expected": len(items),
        "judged": judged,
        "failed": len(failures),
        "pending": pending,
        "reasks": sum(item.reasks for item in items),
        "answers": len(answers),
        "unclosed_think": len(unclosed),
        **tables.counts,
    }
    if config.judges and config.judges[0].scoring == "weighted":
        results["counts"]["weighted_fallbacks"] = sum(
            item.scoring == "parsed-fallback" for item in items
        )
    results["parse_failures"] = failures
    results["unclosed_think"] = [{"sample_id": s, "turn": t} for s, t in unclosed]
    if panel.is_panel or panel.repeats > 1:
        results["counts"]["judgments"] = judgments
    lookup = view.answer_lookup(model)
    if panel.is_panel:
        results["by_judge"] = trust.by_judge(benchmark, panel)
        results["judge_agreement"] = trust.panel_agreement(panel)
    if panel.repeats > 1:
        results["repeats"] = trust.repeat_spread(benchmark, panel)
    planned = [(sample, turn) for sample in benchmark.samples for turn in sample.judged_turns()]
    results["flagged_answers"] = trust.flagged_answers(benchmark, planned, lookup)
    if benchmark.history == "simulated":
        results["simulator"] = simulator_counts(work, view, model)
    return results


SIMULATOR_PROBLEMS = (
    "several_shards",
    "invented",
    "answered_itself",
    "role_switch",
    "ended_before_start",
)


def simulator_counts(work: Work, view: LogView, model: str) -> dict[str, Any]:
    """`simulator`: the user turns of `model`'s planned conversations, as the log has them."""
    planned = {sample.id for sample in work.benchmark.samples}
    turns = [
        done
        for done in view.done.values()
        if isinstance(done, UserTurnDone) and done.model == model and done.sample_id in planned
    ]
    by_origin: dict[str, int] = {}
    with_problem: dict[str, set[SampleId]] = {code: set() for code in SIMULATOR_PROBLEMS}
    turns_with = dict.fromkeys(SIMULATOR_PROBLEMS, 0)
    ended: dict[str, int] = {}
    reasks = 0
    for done in turns:
        by_origin[done.origin] = by_origin.get(done.origin, 0) + 1
        for code in done.problems:
            with_problem.setdefault(code, set()).add(done.sample_id)
            turns_with[code] = turns_with.get(code, 0) + 1
        if done.ended:
            ended[done.ended] = ended.get(done.ended, 0) + 1
        count = done.meta.get("reasks")
        reasks += count if type(count) is int and count > 0 else 0
    return {
        "user_turns": len(turns),
        "by_origin": by_origin,
        "conversations": len({done.sample_id for done in turns}),
        "conversations_with": {code: len(ids) for code, ids in with_problem.items()},
        "turns_with": turns_with,
        "reasks": reasks,
        "ended": ended,
    }


def game_cells(
    work: Work, config: RunConfig, view: LogView, game: Game
) -> dict[str, list[JudgmentDone | None]]:
    """judge -> the game's records per repeat (None: not finished)."""
    return {
        judge.id: [
            view.judgment(
                game_key(
                    judge.id,
                    game.model_1,
                    game.model_2,
                    game.sample.id,
                    game.turn,
                    game.order,
                    repeat=repeat,
                )
            )
            for repeat in range(config.judge_repeats)
        ]
        for judge in config.judges
    }


def pairwise_results(work: Work, config: RunConfig, view: LogView) -> dict[str, Any]:
    played: dict[tuple[Any, int, str, str], dict[str, tuple[Game, JudgmentDone | None]]] = {}
    reasks = pending_judgments = 0
    for game in work.games():
        combined, game_reasks, game_pending = combine_game(game_cells(work, config, view, game))
        reasks += game_reasks
        pending_judgments += game_pending
        pair = (game.sample.id, game.turn, game.model_1, game.model_2)
        played.setdefault(pair, {})[game.order] = (game, combined)
    compared: list[tuple[Game, PairOutcome, tuple[str, str]]] = []
    failures: list[dict[str, Any]] = []
    pending_pairs = excluded_pairs = judged = failed = 0
    describe = work.benchmark.describe
    for games in played.values():
        done = [(g, r) for g, r in games.values() if r is not None]
        judged += sum(r.status == "scored" for _, r in done)
        for game, record in done:
            if record.status != "scored":
                failed += 1
                model_a, model_b = (record.meta.get("model_a"), record.meta.get("model_b"))
                failures.append(
                    {
                        **describe(game.sample),
                        "turn": game.turn,
                        "model_a": model_a,
                        "model_b": model_b,
                        "order": game.order,
                        "reason": record.parse_error,
                    }
                )
        if len(done) < len(games):
            pending_pairs += 1
        elif any(r.status != "scored" or r.verdict is None for _, r in done):
            excluded_pairs += 1
        else:
            (game, ab), (_, ba) = games["AB"], games["BA"]
            assert ab is not None and ba is not None and ab.verdict and ba.verdict
            outcome = combine_games(game_winner(ab.verdict, "AB"), game_winner(ba.verdict, "BA"))
            compared.append((game, outcome, (ab.verdict, ba.verdict)))
    expected = 2 * len(played)
    pending = expected - judged - failed
    inconsistent = sum(outcome.inconsistent for _, outcome, _ in compared)
    verdicts = {"A": 0, "B": 0, "tie": 0}
    for _, _, pair_verdicts in compared:
        for verdict in pair_verdicts:
            verdicts[verdict] += 1
    decisive = verdicts["A"] + verdicts["B"]
    models = set(work.models)
    answers = {(model, *turn) for model in models for turn in view.answered(model)}
    from turnbench.stats.ratings import Battle, bradley_terry

    return {
        "benchmark": work.benchmark.name,
        "judge": config.judge,
        "mode": work.judging,
        "baseline": work.baseline,
        "complete": pending == 0 and pending_judgments == 0,
        "models": _pairwise_rows(work, compared),
        "position_consistency": 1 - inconsistent / len(compared) if compared else None,
        "first_position_win_share": verdicts["A"] / decisive if decisive else None,
        "verdicts": verdicts,
        "ratings": bradley_terry(
            [
                Battle(game.sample.id, game.model_1, game.model_2, outcome.points_of_model_1)
                for game, outcome, _ in compared
            ],
            models=work.models,
        ),
        "counts": {
            "expected": expected,
            "judged": judged,
            "failed": failed,
            "pending": pending,
            "reasks": reasks,
            "answers": len(answers),
            "pairs": {
                "expected": len(played),
                "compared": len(compared),
                "inconsistent": inconsistent,
                "excluded": excluded_pairs,
                "pending": pending_pairs,
            },
        },
        "parse_failures": failures,
        **_pairwise_trust(work, config, view, compared),
    }


def _pairwise_trust(
    work: Work,
    config: RunConfig,
    view: LogView,
    compared: list[tuple[Game, PairOutcome, tuple[str, str]]],
) -> dict[str, Any]:
    """Panel, length and injection keys of pairwise results."""
    extra: dict[str, Any] = {}
    if len(config.judges) > 1:
        extra["by_judge"] = {}
        for judge in config.judges:
            alone = pairwise_results(work, config.model_copy(update={"judges": [judge]}), view)
            extra["by_judge"][judge.id] = {
                k: alone[k]
                for k in ("position_consistency", "first_position_win_share", "verdicts", "models")
            }
        table: dict[str, list[str | None]] = {judge.id: [] for judge in config.judges}
        for game in work.games():
            for judge_id, records in game_cells(work, config, view, game).items():
                table[judge_id].append(judge_verdict(records))
        extra["judge_agreement"] = trust.label_agreement(table, "verdicts")
    if config.judge_repeats > 1:
        repeated = varying = 0
        for game in work.games():
            for records in game_cells(work, config, view, game).values():
                verdicts = [r.verdict for r in records if r is not None and r.verdict]
                if len(verdicts) >= 2:
                    repeated += 1
                    varying += len(set(verdicts)) > 1
        extra["repeats"] = {
            "k": config.judge_repeats,
            "games": repeated,
            "games_varying": varying,
            "share_varying": varying / repeated if repeated else None,
        }
    decisive = longer_won = 0
    for game, outcome, _ in compared:
        if outcome.winner == "tie":
            continue
        lengths = [
            view.answer_length_lookup(m)(game.sample.id, game.turn)
            for m in (game.model_1, game.model_2)
        ]
        if lengths[0] is None or lengths[1] is None or lengths[0] == lengths[1]:
            continue
        decisive += 1
        longer = "model_1" if lengths[0] > lengths[1] else "model_2"
        longer_won += outcome.winner == longer
    extra["length"] = {
        "decisive_pairs": decisive,
        "longer_answer_win_share": longer_won / decisive if decisive else None,
    }
    planned = [(s, t) for s in work.benchmark.samples for t in s.judged_turns()]
    extra["flagged_answers"] = [
        row
        for model in work.models
        for row in trust.flagged_answers(work.benchmark, planned, view.answer_lookup(model), model)
    ]
    return extra


def _pairwise_rows(
    work: Work, compared: list[tuple[Game, PairOutcome, tuple[str, str]]]
) -> dict[str, Any]:
    benchmark = work.benchmark
    groups = list(dict.fromkeys(s.group for s in benchmark.samples if s.group is not None))
    turns = sorted({str(t) for s in benchmark.samples for t in s.judged_turns()}, key=int)
    overall: dict[str, Tally] = defaultdict(Tally)
    by_turn: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    by_group: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    versus: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    for game, outcome, _ in compared:
        sides: tuple[tuple[str, Literal["model_1", "model_2"], str], ...] = (
            (game.model_1, "model_1", game.model_2),
            (game.model_2, "model_2", game.model_1),
        )
        for model, side, opponent in sides:
            overall[model].add(outcome, side)
            by_turn[model][str(game.turn)].add(outcome, side)
            if game.sample.group is not None:
                by_group[model][game.sample.group].add(outcome, side)
            versus[model][opponent].add(outcome, side)
    rows = {}
    for model in work.models:
        if work.judging == "pairwise" and model == work.baseline:
            continue
        opponents = (
            [work.baseline or ""]
            if work.judging == "pairwise"
            else [m for m in work.models if m != model]
        )
        rows[model] = {
            "model": model,
            **overall[model].as_dict(),
            "by_turn": {t: by_turn[model][t].as_dict() for t in turns},
            f"by_{benchmark.group_kind}": {g: by_group[model][g].as_dict() for g in groups},
            "versus": {o: versus[model][o].as_dict() for o in opponents},
        }
    return rows


def single_grading_ranking(work: Work, config: RunConfig, view: LogView) -> dict[str, Any]:
    """Bradley-Terry ratings of several single-graded models from per-turn score comparisons."""
    from turnbench.stats.ratings import bradley_terry, score_battles

    scores: dict[tuple[str, Any, int], float] = {}
    for model in work.models:
        for item in panel_items(work, config, view, model).combined:
            if item.status == "scored" and item.score is not None and item.criterion is None:
                scores[(model, item.sample.id, item.turn)] = item.score
    return bradley_terry(score_battles(scores, work.models), models=work.models)


def build_results(
    work: Work,
    config: RunConfig,
    records: Sequence[LogRecord] | LogIndex,
    *,
    when: Timing,
    stopped: str | None = None,
    notes: Mapping[str, Any] | None = None,
    prices: Any = None,
    log_path: Path | None = None,
    warnings: Sequence[str] = (),
) -> dict[str, Any]:
    """The results object of a run, validated against its typed shape. `records`: the log's
    index (what a run holds) or its records; `prices`: a PriceTable (default: the shipped
    table) for the dollars under `usage`; `log_path`: the log, for answer texts the index
    does not keep; `warnings`: what the invocation warned the user of (a replica set aside,
    no logprobs for weighted scoring...), kept under `warnings` beside those the log itself
    gives, so the file says everything the terminal said."""
    view = LogView(records, log_path)
    index = view.index
    origin = provenance(config, index)
    warning = self_judging(config, origin)
    common: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "benchmark": config.benchmark,
        "judge": config.judge,
        "judges": [judge.spec for judge in config.judges],
        "usage": role_usage(config, index, prices),
        "request_failures": [
            {"key": f.key, "stage": f.stage, "error": f.error, "attempts": f.attempts}
            for f in index.failures.values()
        ],
        "invalid_records": view.invalid,
        "provenance": origin,
        "warnings": list(dict.fromkeys([*([warning] if warning else []), *warnings])),
        "started_at": iso(when.started_at),
        "finished_at": iso(when.finished_at),
        "wall_seconds": when.wall_seconds,
        "stopped": stopped,
        "batches": [
            {
                "batch_id": b.batch_id,
                "provider": str(b.intent.get("provider")),
                "role": b.role,
                "stage": b.stage,
                "items": len(b.intent.get("custom_ids") or {}),
                "state": b.state,
                "counts": b.counts,
            }
            for b in index.submissions.values()
        ],
        **(notes or {}),
    }
    results: dict[str, Any]
    if work.pairwise:
        results = {**common, **pairwise_results(work, config, view)}
    elif config.mode == "run":
        assert config.model is not None
        panels = {config.model: panel_items(work, config, view, config.model)}
        single = model_results(work, config, view, config.model, panels[config.model])
        _add_length(work, view, panels, {config.model: single})
        if work.arms:  # --perturb: each stress arm against the unperturbed run
            model = config.model
            arm_items = {
                arm.kind: panel_items(work, config, view, model, arm.kind).combined
                for arm in work.arms
            }
            single["perturbations"] = perturbations(
                work,
                panels[model].combined,
                arm_items,
                lambda sample_id, turn, arm: view.answer(model, sample_id, turn, arm=arm),
            )
        results = {**single, **common}
    else:
        panels = {name: panel_items(work, config, view, name) for name in work.models}
        models = {
            name: model_results(work, config, view, name, panels[name]) for name in work.models
        }
        control = _add_length(work, view, panels, models)
        if len(models) >= 2:
            common["length_control"] = control
        results = {}
        if len(models) == 1:
            # One model: its object also stands at the top level, shaped like a `run` result,
            # so either reading of "the same object" finds it; `models` stays authoritative.
            results.update(next(iter(models.values())))
        results.update(
            {**common, "complete": all(m["complete"] for m in models.values()), "models": models}
        )
        if len(models) >= 2:
            results["ranking"] = single_grading_ranking(work, config, view)
    RESULTS_ADAPTER.validate_python(results)
    return results


def _add_length(
    work: Work,
    view: LogView,
    panels: Mapping[str, trust.PanelItems],
    models: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """Add each model's `length` block (one length fit pooled over the run's models); returns
    the run's `length_control` summary."""
    rows = {
        name: trust.length_rows(name, panels[name].combined, view.answer_length_lookup(name))
        for name in models
    }
    fit = fit_length_effect([row for found in rows.values() for row in found])
    for name, results in models.items():
        results["length"] = trust.length_scores(
            work.benchmark, panels[name].combined, rows[name], fit, results.get("overall")
        )
    return {
        "method": fit.method,
        "slope_per_doubling": fit.slope_per_doubling,
        "items": fit.items,
        "models": {n: r["length"]["length_controlled_overall"] for n, r in models.items()},
    }
