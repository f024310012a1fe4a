"""The compact index of a run log: what a resume and results.json need, folded record by record.

A log grows with every answer and judgment, prompts included (a 8-model MT-Bench-101 run
writes well over 100 MB). Nothing that reads it keeps the records: `LogIndex.add` folds each
one into small summaries as it is read or appended, and the record is dropped:

- `done`: per key, the latest trusted finished work as a slotted `AnswerDone` /
  `JudgmentDone` (no messages, no judge replies; an imported answer keeps only a digest of
  its text, a generated one its text, which later turns of a self-history run are built on);
- `failures`: failures not followed by a success for the same work;
- `invalid`: records left out because they cannot be trusted (`record_problem`): of the
  finished work, and of the usage sums;
- usage per role by name ("model": answers generated here; each judge; "user"; any role a
  driver names), with the part paid at batch prices;
- attempts that returned nothing, per role ("model" or a judge id), in worst-case tokens;
- the distinct request parameters, reported models and fingerprints (provenance);
- the invocations' spans (timing) and every config record;
- batch records (`batches`): the provider batches of the run and their outcome.

Which records can be trusted is decided here too (`record_problem`), so the index, the
results and the readers of finished runs agree.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import operator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from turnbench.judging.cleaning import UNCLOSED_THINK
from turnbench.judging.parsers import SCORE_RANGES
from turnbench.record_keys import (
    batch_custom_id,
    key_matches,
    legacy_key,
    record_key,
    sample_key,
    tool_step_key,
    user_turn_key,
    with_legacy_fields,
)
from turnbench.types import (
    AnswerRecord,
    AttemptRecord,
    BatchRecord,
    ConfigRecord,
    EndRecord,
    FailureRecord,
    JudgmentRecord,
    LogRecord,
    NotAScore,
    ReplyRecord,
    SampleId,
    SampleRecord,
    StepRecord,
    Usage,
    UserTurnRecord,
)


def text_digest(text: str) -> bytes:
    """16 bytes that tell two answer texts apart (an imported answer is compared, not kept)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_D = TypeVar("_D")


# -- which records can be trusted ---------------------------------------------------------------
def _finite(value: float | None) -> bool:
    return value is None or value - value == 0  # False for NaN and both infinities


def usage_problem(usage: Usage | None, name: str = "usage") -> str | None:
    """Why a recorded usage cannot be trusted (None if it can): a count below 0, which is
    also how a count that was no number of tokens (NaN, infinite, a bool) is read
    (`types.INVALID_COUNT`)."""
    if usage is None or (
        usage.prompt_tokens >= 0
        and usage.completion_tokens >= 0
        and usage.cached_prompt_tokens >= 0
        and usage.cache_creation_tokens >= 0
    ):  # (every record of a log is checked: the usual case without building a tuple)
        return None
    for field_name, count in (
        ("prompt_tokens", usage.prompt_tokens),
        ("completion_tokens", usage.completion_tokens),
        ("cached_prompt_tokens", usage.cached_prompt_tokens),
        ("cache_creation_tokens", usage.cache_creation_tokens),
    ):
        if count < 0:
            return f"its {name}.{field_name} is negative or not a number of tokens"
    return None


def record_problem(record: AnswerRecord | JudgmentRecord, key: str | None = None) -> str | None:
    """Why a finished record cannot be trusted (None if it can): its key names other work,
    a number in it is NaN or infinite, a usage count is negative or no number, its score is
    no number (`true`, a string) or outside its parser's range. `key`: the record's
    `record_key`, when the caller has computed it already. A record refused here is left
    out of every score and of the usage sums, and its work is done again."""
    if key is not None:
        if record.key != key and record.key != legacy_key(record):
            return "its key does not match its fields"
    elif not key_matches(record):
        return "its key does not match its fields"
    if not _finite(record.latency_s):
        return "a non-finite number"
    problem = usage_problem(record.usage) or usage_problem(record.batch_usage, "batch_usage")
    if problem is not None:
        return problem
    if isinstance(record, JudgmentRecord):
        for score in (record.score, record.parsed_score):
            if isinstance(score, NotAScore):
                return score.describe()
        if not _finite(record.score):
            return "a non-finite score"
        low, high = SCORE_RANGES.get(record.parser, (-math.inf, math.inf))
        if record.score is not None and not low <= record.score <= high:
            return f"score {record.score:g} is outside {record.parser}'s range {low:g}-{high:g}"
        if record.status == "scored" and (
            record.score is None and record.verdict is None and record.checklist is None
        ):
            return "scored without a score, verdict or checklist"
    return None


def completed_index(records: list[LogRecord]) -> dict[str, AnswerRecord | JudgmentRecord]:
    """key -> the latest final record (an answer, or a judgment with a final outcome), whole.

    Keyed by the key built from each record's own fields, so a log written with the older
    key scheme resumes; a record that cannot be trusted (`record_problem`) is left out, so
    its work is done again rather than averaged in. (`LogIndex.done` is the compact form.)
    """
    done: dict[str, AnswerRecord | JudgmentRecord] = {}
    for record in records:
        if isinstance(record, AnswerRecord | JudgmentRecord):
            key = record_key(record)
            if record_problem(record, key) is None:
                done[key] = record
    return done


def open_failures(records: list[LogRecord]) -> dict[str, FailureRecord]:
    """Failures not followed by a success for the same work (what is still outstanding),
    each naming its work by fields (schema-1 failures get them from their key)."""
    index = LogIndex()
    for record in records:
        if isinstance(record, FailureRecord | AnswerRecord | JudgmentRecord):
            index.add(record)
    return index.failures


# -- the compact forms of finished work -----------------------------------------------------------
def _pickled_by_fields(cls: type[_D]) -> type[_D]:
    """Pickle instances of a slotted dataclass as its class and the tuple of its fields: an
    index read in a second process (`store.rundir`) crosses a pipe with tens of thousands of
    them, and this takes a third of the time of pickle's default for slots."""
    values = operator.attrgetter(*(item.name for item in dataclasses.fields(cls)))  # type: ignore[arg-type]

    def __reduce__(self: _D) -> tuple[type[_D], tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign,assignment]
    return cls


@_pickled_by_fields
@dataclass(slots=True, eq=False)
class AnswerDone:
    """A finished answer as the index keeps it."""

    kind: ClassVar[str] = "answer"
    key: str
    model: str
    sample_id: SampleId
    turn: int
    group: str | None
    origin: str
    digest: bytes
    text: str | None  # generated answers only (later turns are built on them)
    chars: int = 0  # the answer's length in characters (length-aware scores need no text)
    finish_reason: str | None = None
    unclosed_think: bool = False  # cut off inside <think> (not judged; counted)
    offset: int = -1  # where its line starts in the log (readers fetch the record again)
    length: int = 0
    arm: str | None = None  # a stress arm's answer (readers of the unperturbed run skip it)
    #: the tool calls the reply made (an agent's step: the conversation goes on with them)
    tool_calls: list[dict[str, Any]] | None = None
    trial: int | None = None  # which of several runs of the same conversation
    at: int | None = None  # the reply's place in its conversation (`turnbench.conversation`)

    def same_text(self, text: str) -> bool:
        return self.digest == text_digest(text)


@_pickled_by_fields
@dataclass(slots=True, eq=False)
class JudgmentDone:
    """A finished judgment as the index keeps it: its outcome, not its prompt or replies."""

    kind: ClassVar[str] = "judgment"
    key: str
    judge: str
    model: str
    sample_id: SampleId
    turn: int
    group: str | None
    criterion: str | None
    repeat: int
    pair: tuple[str, str] | None
    order: str | None
    prompt_name: str
    parser: str
    status: str
    score: float | None
    verdict: str | None
    checklist: tuple[str, ...] | None
    parse_error: str | None
    reasks: int
    scoring: str | None = None  # --judge-scoring weighted: "weighted" or "parsed-fallback"
    origin: str = "judged"  # or "imported" (turnbench import)
    model_a: str | None = None  # pairwise: the models shown as A and B
    model_b: str | None = None
    offset: int = -1  # where its line starts in the log (readers fetch the record again)
    length: int = 0
    arm: str | None = None  # judged a stress arm's answer (readers of the unperturbed skip it)

    @property
    def is_game(self) -> bool:
        return self.pair is not None

    @property
    def meta(self) -> dict[str, Any]:
        """What a pairwise record keeps in `meta` (the readers of whole records use it)."""
        if self.pair is None:
            return {}
        shown = {"pair": list(self.pair), "order": self.order}
        for name, value in (("model_a", self.model_a), ("model_b", self.model_b)):
            if value is not None:
                shown[name] = value
        return shown


@_pickled_by_fields
@dataclass(slots=True, eq=False)
class UserTurnDone:
    """A user turn made at run time (a simulated conversation), as the index keeps it: its
    text (the model's next request is built on it) and the shards it revealed."""

    kind: ClassVar[str] = "user_turn"
    key: str
    model: str
    sample_id: SampleId
    turn: int
    group: str | None
    origin: str
    text: str
    revealed: tuple[int, ...]
    problems: tuple[str, ...] = ()
    ended: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    trial: int | None = None  # which of several runs of the same conversation
    offset: int = -1
    length: int = 0
    at: int | None = None  # its place in the model's conversation, when its driver gave one


@_pickled_by_fields
@dataclass(slots=True, eq=False)
class StepDone:
    """A local step (a tool a driver ran) as the index keeps it: its output, which a
    resumed conversation reads back instead of running the step again. `call`: which of
    the step `turn`'s tool calls it ran (`call_id` the model's id for it)."""

    kind: ClassVar[str] = "step"
    key: str
    model: str
    sample_id: SampleId
    turn: int
    trial: int | None
    name: str
    output: str
    call: int = 0
    call_id: str | None = None
    at: int | None = None
    offset: int = -1
    length: int = 0


@_pickled_by_fields
@dataclass(slots=True, eq=False)
class ReplyDone:
    """A reply of a role a driver names (`ReplyRecord`) as the index keeps it: its text
    and tool calls, which a resumed conversation goes on with."""

    kind: ClassVar[str] = "reply"
    key: str
    role: str
    model: str
    sample_id: SampleId
    turn: int
    trial: int | None
    text: str
    tool_calls: list[dict[str, Any]] | None = None
    at: int | None = None
    offset: int = -1
    length: int = 0


@_pickled_by_fields
@dataclass(slots=True, eq=False)
class SampleDone:
    """A finished sample (a whole conversation) as its driver scored it."""

    kind: ClassVar[str] = "sample"
    key: str
    model: str
    sample_id: SampleId
    trial: int | None
    group: str | None
    score: float | None
    ended: str | None
    steps: int
    detail: dict[str, Any] = field(default_factory=dict)
    offset: int = -1
    length: int = 0


Done = AnswerDone | JudgmentDone | UserTurnDone | StepDone | SampleDone | ReplyDone


GROUP_META_KEYS = ("category", "task")


def record_group(record: AnswerRecord | JudgmentRecord | FailureRecord) -> str | None:
    """The sample's category or task (schema-1 records kept it in `meta`)."""
    if record.group:
        return record.group
    for name in GROUP_META_KEYS:
        value = record.meta.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def answer_done(record: AnswerRecord, key: str) -> AnswerDone:
    return AnswerDone(
        key=key,
        model=record.model,
        sample_id=record.sample_id,
        turn=record.turn,
        group=record_group(record),
        origin=record.origin,
        digest=text_digest(record.text),
        text=record.text if record.origin == "generated" else None,
        chars=len(record.text),
        finish_reason=record.finish_reason,
        unclosed_think=bool(record.meta.get(UNCLOSED_THINK)),
        arm=record.arm,
        tool_calls=record.tool_calls,
        trial=record.trial,
        at=record.at,
    )


def judgment_done(record: JudgmentRecord, key: str) -> JudgmentDone:
    meta = record.meta
    pair = record.pair if record.pair is not None or not meta else record.pair_models()
    return JudgmentDone(
        key=key,
        judge=record.judge,
        model=record.model,
        sample_id=record.sample_id,
        turn=record.turn,
        group=record_group(record),
        criterion=record.criterion,
        repeat=record.repeat,
        pair=pair,
        order=record.game_order() if pair is not None else None,
        prompt_name=record.prompt_name,
        parser=record.parser,
        status=record.status,
        score=record.score,
        verdict=record.verdict,
        checklist=tuple(record.checklist) if record.checklist is not None else None,
        parse_error=record.parse_error,
        reasks=record.reasks,
        scoring=record.scoring,
        origin=record.origin,
        model_a=meta.get("model_a") if pair is not None else None,
        model_b=meta.get("model_b") if pair is not None else None,
        arm=record.arm,
    )


# -- usage and provenance -----------------------------------------------------------------------
class RoleTotals:
    """Tokens one role used, over every record it logged (a redone item counts twice: it
    was paid twice). `batch` is the part of `usage` paid at batch prices. (Plain counters:
    one is added per record of a large log.)"""

    __slots__ = ("_batch", "_live", "requests_logged")

    def __init__(self) -> None:
        self._live = [0, 0, 0, 0]  # prompt, completion, cached prompt, cache creation
        self._batch = [0, 0, 0, 0]
        self.requests_logged = 0

    def add(self, usage: Usage, batch: Usage | None) -> None:
        live = self._live
        live[0] += usage.prompt_tokens
        live[1] += usage.completion_tokens
        live[2] += usage.cached_prompt_tokens
        live[3] += usage.cache_creation_tokens
        if batch is not None:
            part = self._batch
            part[0] += batch.prompt_tokens
            part[1] += batch.completion_tokens
            part[2] += batch.cached_prompt_tokens
            part[3] += batch.cache_creation_tokens
        self.requests_logged += 1

    @staticmethod
    def _usage(counts: list[int]) -> Usage:
        return Usage(
            prompt_tokens=counts[0],
            completion_tokens=counts[1],
            cached_prompt_tokens=counts[2],
            cache_creation_tokens=counts[3],
        )

    @property
    def usage(self) -> Usage:
        return self._usage(self._live)

    @property
    def batch(self) -> Usage:
        return self._usage(self._batch)

    def absorb(self, other: RoleTotals) -> None:
        """Add `other`'s counts to these."""
        for mine, theirs in ((self._live, other._live), (self._batch, other._batch)):
            for number, count in enumerate(theirs):
                mine[number] += count
        self.requests_logged += other.requests_logged

    def __add__(self, other: RoleTotals) -> RoleTotals:
        total = RoleTotals()
        total.absorb(self)
        total.absorb(other)
        return total


class Distinct:
    """The distinct values of one provenance field, in first-seen order."""

    __slots__ = ("_last", "_seen")

    def __init__(self) -> None:
        self._seen: dict[str, Any] = {}
        self._last: Any = None

    def add(self, value: Any) -> None:
        if value is None or value == self._last:  # (most records repeat the one before)
            return
        self._last = value
        key = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        self._seen.setdefault(key, value)

    def values(self) -> list[Any]:
        return list(self._seen.values())

    def merge(self, other: Distinct) -> None:
        for key, value in other._seen.items():
            self._seen.setdefault(key, value)


PROVENANCE_FIELDS = ("params", "reported_model", "system_fingerprint")


@dataclass
class RoleProvenance:
    params: Distinct = field(default_factory=Distinct)
    reported_model: Distinct = field(default_factory=Distinct)
    system_fingerprint: Distinct = field(default_factory=Distinct)
    served: dict[str, int] = field(default_factory=dict)  # endpoint -> replies it gave

    def absorb(self, other: RoleProvenance) -> None:
        """Add what `other` saw after what these saw."""
        for name in PROVENANCE_FIELDS:
            getattr(self, name).merge(getattr(other, name))
        for endpoint, count in other.served.items():
            self.served[endpoint] = self.served.get(endpoint, 0) + count

    def add(self, record: AnswerRecord | JudgmentRecord | UserTurnRecord | ReplyRecord) -> None:
        self.params.add(record.params)
        self.reported_model.add(getattr(record, "reported_model", None))
        self.system_fingerprint.add(getattr(record, "system_fingerprint", None))
        served = self.served
        for endpoint in record.endpoints:
            served[endpoint] = served.get(endpoint, 0) + 1


@dataclass
class BatchSubmission:
    """One provider batch of the run as the log tells it."""

    submission: str
    role: str
    stage: str
    intent: dict[str, Any]  # the BatchIntent: provider, endpoint, ids, sampling fields
    batch_id: str | None = None  # None: the process stopped before the provider answered
    state: str | None = None  # its final state, once it ended
    counts: dict[str, int] = field(default_factory=dict)


# -- the index ------------------------------------------------------------------------------------
class LogIndex:
    """Everything a resume and results.json read from a log, without its records."""

    def __init__(self) -> None:
        self.configs: list[ConfigRecord] = []
        self.spans: list[list[float]] = []  # [start, end or last record] of every invocation
        self.done: dict[str, Done] = {}
        self.failures: dict[str, FailureRecord] = {}
        self.invalid: list[dict[str, str]] = []
        self.answered: dict[str, set[tuple[SampleId, int]]] = {}  # model -> turns answered
        #: role -> the tokens of every record it logged: "model" (answers generated here),
        #: each judge's id, "user" (a user model's turns), any role a driver names
        self.usage: dict[str, RoleTotals] = {}
        #: role -> the distinct parameters, reported models and endpoints of its replies
        self.provenance: dict[str, RoleProvenance] = {}
        # role -> its attempts that returned nothing (`AttemptRecord`, in worst-case tokens;
        # `requests_logged` counts the attempts)
        self.unanswered: dict[str, RoleTotals] = {}
        self.submissions: dict[str, BatchSubmission] = {}  # provider batches, by submission
        self.batch_items: dict[str, str] = {}  # custom_id -> its latest unconsumed submission
        self.records = 0
        # -- kept only by the index of a later part of a log (`later_part`, `merge`) --------
        self.lead_ts: float | None = None  # the latest time of records before its first config
        self.cleared: set[str] | None = None  # the keys whose open failures its records close
        self.batch_records = 0

    @classmethod
    def later_part(cls) -> LogIndex:
        """An index of a log's later part, read apart from the earlier one (on another
        core) and then merged into it: it also remembers what would have changed the earlier
        part's summaries (the failures it closes, the time of its first records)."""
        index = cls()
        index.cleared = set()
        return index

    def add(self, record: LogRecord, offset: int = -1, length: int = 0) -> None:
        """Fold one record in; `offset`/`length`: where its line is in the log file, kept
        with finished work so a reader can fetch the whole record again."""
        self.records += 1
        if isinstance(record, ConfigRecord):
            self.configs.append(record)
            self.spans.append([record.ts, record.ts])
            return
        if self.spans:
            span = self.spans[-1]
            if record.ts > span[1]:
                span[1] = record.ts
        elif self.lead_ts is None or record.ts > self.lead_ts:
            self.lead_ts = record.ts
        kind = record.kind
        if kind == "judgment" or kind == "answer":  # (nearly every record: asked first)
            self._work(record, offset, length)  # type: ignore[arg-type]
            return
        if isinstance(record, EndRecord):  # (only its time counts)
            return
        if isinstance(record, FailureRecord):
            self.failures[record.key] = with_legacy_fields(record)
            if self.batch_items and record.meta.get("batch"):
                # the provider reported this item failed: that result has been used
                self.batch_items.pop(batch_custom_id(record.key), None)
            return
        if isinstance(record, BatchRecord):
            self.batch_records += 1
            self._batch(record)
            return
        if isinstance(record, UserTurnRecord):
            self._user_turn(record, offset, length)
            return
        if isinstance(record, StepRecord | SampleRecord):
            self._step(record, offset, length)
            return
        if isinstance(record, ReplyRecord):
            self._reply(record, offset, length)
            return
        if isinstance(record, AttemptRecord):
            totals = self.unanswered.get(record.role)
            if totals is None:
                totals = self.unanswered[record.role] = RoleTotals()
            tokens = Usage(
                prompt_tokens=record.prompt_tokens, completion_tokens=record.completion_tokens
            )
            totals.add(tokens, None)

    def _work(self, record: AnswerRecord | JudgmentRecord, offset: int, length: int) -> None:
        """A finished answer or judgment: done under its key unless it cannot be trusted."""
        key = record_key(record)
        if self.batch_items:  # (the batch's result for this work has been used either way)
            self.batch_items.pop(batch_custom_id(key), None)
        # checked before anything is counted: an untrustworthy record finishes nothing, and
        # its numbers (a negative usage, say) reach neither the usage sums nor the dollars
        problem = record_problem(record, key)
        if problem is not None:
            self.invalid.append({"key": record.key, "kind": record.kind, "reason": problem})
            return
        failures = self.failures
        if failures:
            failures.pop(record.key, None)
            failures.pop(key, None)
        if self.cleared is not None:
            self.cleared.update((record.key, key))
            if isinstance(record, JudgmentRecord):
                self.cleared.add(legacy_key(record))
        if isinstance(record, AnswerRecord):
            if record.arm is None:  # (a stress arm's answers are not the model's run)
                self.answered.setdefault(record.model, set()).add((record.sample_id, record.turn))
            if record.origin == "generated":
                self.spent("model", record, record.batch_usage)
        else:
            if failures:
                failures.pop(legacy_key(record), None)
            self.spent(record.judge, record, record.batch_usage)
        done = (
            answer_done(record, key)
            if isinstance(record, AnswerRecord)
            else judgment_done(record, key)
        )
        if offset >= 0:
            done.offset, done.length = offset, length
        self.done[key] = done

    def spent(
        self,
        role: str,
        record: AnswerRecord | JudgmentRecord | UserTurnRecord | ReplyRecord,
        batch: Usage | None = None,
    ) -> None:
        """Count what `role` spent on one record, and what its reply says of where it ran."""
        totals = self.usage.get(role)
        if totals is None:
            totals = self.usage[role] = RoleTotals()
            self.provenance[role] = RoleProvenance()
        totals.add(record.usage, batch)
        self.provenance[role].add(record)

    def role_usage(self, role: str) -> RoleTotals:
        """The tokens `role` used (none logged: zero)."""
        return self.usage.get(role) or RoleTotals()

    def role_provenance(self, role: str) -> RoleProvenance:
        return self.provenance.get(role) or RoleProvenance()

    def _reply(self, record: ReplyRecord, offset: int, length: int) -> None:
        """A reply of a driver's own role: done under its key once its usage is sound."""
        problem = usage_problem(record.usage)
        if problem is not None:
            self.invalid.append({"key": record.key, "kind": record.kind, "reason": problem})
            return
        self.failures.pop(record.key, None)
        if self.cleared is not None:
            self.cleared.add(record.key)
        self.spent(record.role, record)
        done = ReplyDone(
            key=record.key,
            role=record.role,
            model=record.model,
            sample_id=record.sample_id,
            turn=record.turn,
            trial=record.trial,
            text=record.text,
            tool_calls=record.tool_calls,
            at=record.at,
        )
        if offset >= 0:
            done.offset, done.length = offset, length
        self.done[record.key] = done

    def _step(self, record: StepRecord | SampleRecord, offset: int, length: int) -> None:
        """A local step or a finished sample: done under its key once its key names its
        fields and its numbers are sound (else left out, and done again on resume)."""
        done: StepDone | SampleDone
        if isinstance(record, StepRecord):
            key = tool_step_key(
                record.model, record.sample_id, record.turn, record.trial, record.call
            )
            done = StepDone(
                key=key,
                model=record.model,
                sample_id=record.sample_id,
                turn=record.turn,
                trial=record.trial,
                name=record.name,
                output=record.output,
                call=record.call,
                call_id=record.call_id,
                at=record.at,
            )
        else:
            key = sample_key(record.model, record.sample_id, record.trial)
            done = SampleDone(
                key=key,
                model=record.model,
                sample_id=record.sample_id,
                trial=record.trial,
                group=record.group,
                score=record.score,
                ended=record.ended,
                steps=record.steps,
                detail=dict(record.detail),
            )
        problem = None
        if record.key != key:
            problem = f"its key {record.key!r} does not name its fields"
        elif isinstance(record, SampleRecord) and not _finite(record.score):
            problem = "a non-finite score"
        if problem is not None:
            self.invalid.append({"key": record.key, "kind": record.kind, "reason": problem})
            return
        self.failures.pop(key, None)
        if self.cleared is not None:
            self.cleared.add(key)
        if offset >= 0:
            done.offset, done.length = offset, length
        self.done[key] = done

    def _user_turn(self, record: UserTurnRecord, offset: int, length: int) -> None:
        """A simulated user's turn: done under its key once its key names its fields and
        its usage is sound (else left out, and made again on resume)."""
        key = user_turn_key(record.model, record.sample_id, record.turn, record.trial)
        problem = (
            f"its key {record.key!r} does not name its fields"
            if record.key != key
            else usage_problem(record.usage)
        )
        if problem is not None:
            self.invalid.append({"key": record.key, "kind": record.kind, "reason": problem})
            return
        self.failures.pop(key, None)
        if self.cleared is not None:
            self.cleared.add(key)
        if record.origin == "user-model":
            self.spent("user", record)
        done = UserTurnDone(
            key=key,
            model=record.model,
            sample_id=record.sample_id,
            turn=record.turn,
            group=record.group,
            origin=record.origin,
            text=record.text,
            revealed=tuple(record.revealed),
            problems=tuple(record.problems),
            ended=record.ended,
            meta=dict(record.meta),
            trial=record.trial,
            at=record.at,
        )
        if offset >= 0:
            done.offset, done.length = offset, length
        self.done[key] = done

    def can_merge(self, later: LogIndex) -> bool:
        """Whether `merge(later)` gives what reading the two parts in one pass gives: not for
        batch runs (which item a provider batch still holds depends on the whole order), and
        only for an index made by `later_part`."""
        return (
            later.cleared is not None
            and not later.batch_records
            and not self.batch_records
            and not self.batch_items
        )

    def merge(self, later: LogIndex) -> None:
        """Fold in the index of the part of the log that follows this one's (`later_part`),
        leaving what one pass over both parts would have left (`can_merge` must hold)."""
        assert self.can_merge(later) and later.cleared is not None
        self.records += later.records
        if later.lead_ts is not None and self.spans and later.lead_ts > self.spans[-1][1]:
            self.spans[-1][1] = later.lead_ts
        self.configs.extend(later.configs)
        self.spans.extend(later.spans)
        self.done.update(later.done)  # (a key done again keeps its place, as in one pass)
        for key in later.cleared:
            self.failures.pop(key, None)
        self.failures.update(later.failures)
        self.invalid.extend(later.invalid)
        for model, turns in later.answered.items():
            self.answered.setdefault(model, set()).update(turns)
        for role, totals in later.usage.items():
            self.usage.setdefault(role, RoleTotals()).absorb(totals)
        for role, found in later.provenance.items():
            self.provenance.setdefault(role, RoleProvenance()).absorb(found)
        for role, totals in later.unanswered.items():
            self.unanswered.setdefault(role, RoleTotals()).absorb(totals)

    def _batch(self, record: BatchRecord) -> None:
        submission = self.submissions.get(record.submission)
        if record.event == "creating":
            if record.batch is None:
                return
            submission = BatchSubmission(record.submission, record.role, record.stage, record.batch)
            self.submissions[record.submission] = submission
            for custom_id in record.batch.get("custom_ids") or {}:
                self.batch_items[custom_id] = record.submission
        elif submission is None:
            return  # its creating record was unreadable: nothing to find it by
        elif record.event == "created":
            submission.batch_id = record.batch_id
        else:
            submission.state = record.state
            submission.counts = dict(record.counts)

    def open_submissions(self, role: str) -> dict[str, BatchSubmission]:
        """Submissions of `role` that still hold the latest result of some unfinished item."""
        latest = set(self.batch_items.values())
        return {
            name: submission
            for name, submission in self.submissions.items()
            if name in latest and submission.role == role
        }

    def roles_usage(self, roles: list[str]) -> RoleTotals:
        """The tokens of several roles together (a panel of judges)."""
        total = RoleTotals()
        for role in roles:
            if role in self.usage:
                total = total + self.usage[role]
        return total

    def roles_provenance(self, roles: list[str]) -> RoleProvenance:
        merged = RoleProvenance()
        for role in roles:
            found = self.provenance.get(role)
            if found is not None:
                merged.absorb(found)
        return merged

    def last_ts(self) -> float | None:
        return self.spans[-1][1] if self.spans else None


def index_records(records: list[LogRecord]) -> LogIndex:
    index = LogIndex()
    for record in records:
        index.add(record)
    return index
