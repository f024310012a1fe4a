"""The one way a conversation is read back from a run: `conversations(index, load, ...)`.

A driver logs a conversation as it goes: the model's answers (each keeping only what its
request appended to the one before: `after`, `engine.history.Thread`), the user's turns,
the tools it ran (`step` records), the replies of its own roles, and finally how the
driver scored it (`sample`). Every record that adds a message to the conversation carries
its place in it (`at`: the message's index in the model's view). This module puts them
together as one `turnbench.conversation.Conversation`; results, the report, the viewer,
exports, importers and the Python API all read conversations here, and nothing else
rebuilds the order.

The messages are those of the model's latest request (its thread's chain, oldest first),
its reply, then what came after that it never answered (a closing user message, the
results of tool calls a stopped run made), by `at`. Each message says who produced it:
the record whose `at` names its place, else the benchmark (its own text: a system message,
a dataset's turn), the record being the request that first carried it.

Logs written before records carried `at` are read by their turn numbers instead
(`_legacy_at`): the one place an order is derived, kept for old run directories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from turnbench.conversation import BENCHMARK, TOOL, Conversation, Said
from turnbench.journal.logindex import (
    AnswerDone,
    Done,
    JudgmentDone,
    LogIndex,
    ReplyDone,
    SampleDone,
    StepDone,
    UserTurnDone,
)
from turnbench.types import AnswerRecord, LogRecord, SampleId, ToolCall

#: (model, sample id as text, trial, stress arm): which conversation a record belongs to
ConversationId = tuple[str, str, int | None, str | None]
Loader = Callable[[Done], LogRecord]
#: a turn-by-turn conversation's score from its judged turns' scores (the benchmark's rule)
TurnScore = Callable[[Mapping[int, float]], float | None]


@dataclass(slots=True)
class Parts:
    """The index entries of one conversation."""

    sample_id: SampleId
    answers: list[AnswerDone] = field(default_factory=list)
    users: list[UserTurnDone] = field(default_factory=list)
    steps: list[StepDone] = field(default_factory=list)
    replies: list[ReplyDone] = field(default_factory=list)
    judged: dict[int, float] = field(default_factory=dict)  # turn -> the first judge's score
    sample: SampleDone | None = None

    @property
    def producers(self) -> list[UserTurnDone | StepDone | ReplyDone]:
        return [*self.users, *self.steps, *self.replies]


def conversation_parts(index: LogIndex, judge: str | None = None) -> dict[ConversationId, Parts]:
    """Every conversation of the index by its id, in the order its records were logged;
    `judge`: whose single-grading scores a turn-by-turn conversation keeps."""
    found: dict[ConversationId, Parts] = {}

    def parts(done: Done, arm: str | None, trial: int | None) -> Parts:
        ident = (done.model, str(done.sample_id), trial, arm)
        part = found.get(ident)
        if part is None:
            part = found[ident] = Parts(done.sample_id)
        return part

    for done in index.done.values():
        if isinstance(done, JudgmentDone):
            if (
                done.judge == judge
                and done.pair is None
                and done.criterion is None
                and done.repeat == 0
                and done.score is not None
            ):
                parts(done, done.arm, None).judged[done.turn] = done.score
        elif isinstance(done, AnswerDone):
            parts(done, done.arm, done.trial).answers.append(done)
        elif isinstance(done, UserTurnDone):
            parts(done, None, done.trial).users.append(done)
        elif isinstance(done, StepDone):
            parts(done, None, done.trial).steps.append(done)
        elif isinstance(done, ReplyDone):
            parts(done, None, done.trial).replies.append(done)
        elif isinstance(done, SampleDone):
            parts(done, None, done.trial).sample = done
    return {ident: part for ident, part in found.items() if part.answers or part.producers}


def conversations(
    index: LogIndex,
    load: Loader,
    benchmark: str,
    *,
    judge: str | None = None,
    outcome_model: type[BaseModel] | None = None,
    turn_score: TurnScore | None = None,
    only: Callable[[ConversationId], bool] | None = None,
    messages: bool = True,
) -> list[Conversation]:
    """Every conversation of a run (those `only` accepts), each whole as far as the log
    holds it; `outcome_model` types a scored conversation's outcome, `turn_score` scores a
    turn-by-turn one from its judged turns (`judge`'s); without `messages`, only how each
    came out (nothing is read from the log)."""
    found = conversation_parts(index, judge)
    return [
        read_conversation(
            ident, found[ident], load, benchmark, outcome_model, turn_score, messages=messages
        )
        for ident in found
        if only is None or only(ident)
    ]


def read_conversation(
    ident: ConversationId,
    parts: Parts,
    load: Loader,
    benchmark: str,
    outcome_model: type[BaseModel] | None = None,
    turn_score: TurnScore | None = None,
    *,
    messages: bool = True,
) -> Conversation:
    """One conversation from its parts (`conversation_parts`); without `messages`, only
    how it came out."""
    model, _, trial, arm = ident
    said: list[Said] = []
    recorded = True
    if messages:
        said, recorded = _messages(parts, load, _legacy_at(parts) if _is_legacy(parts) else {})
    conversation = Conversation(
        benchmark=benchmark,
        sample_id=parts.sample_id,
        model=model,
        trial=trial,
        arm=arm,
        messages=said,
        requests_recorded=recorded,
    )
    done = parts.sample
    if done is not None:
        conversation.finished = True
        conversation.score = done.score
        conversation.ended = done.ended
        conversation.outcome = _typed(done.detail, outcome_model)
    elif parts.judged:
        turns = dict(sorted(parts.judged.items()))
        conversation.outcome = {"turns": {str(turn): score for turn, score in turns.items()}}
        conversation.score = turn_score(turns) if turn_score is not None else None
    return conversation


def _typed(detail: Any, outcome_model: type[BaseModel] | None) -> Any:
    """The outcome as the benchmark's model when it reads (else the JSON as logged)."""
    if outcome_model is None or not isinstance(detail, Mapping):
        return detail
    try:
        return outcome_model.model_validate(detail)
    except ValidationError:
        return dict(detail)


# -- the messages ---------------------------------------------------------------------------
def _messages(parts: Parts, load: Loader, legacy: Mapping[str, int]) -> tuple[list[Said], bool]:
    """The conversation's messages, and whether the model's requests are in the log."""

    def place(done: AnswerDone | UserTurnDone | StepDone | ReplyDone) -> int | None:
        return done.at if done.at is not None else legacy.get(done.key)

    producers = {}
    for done in parts.producers:
        where = place(done)
        if where is not None:
            producers.setdefault(where, done)
    messages: list[Said] = []
    recorded = True
    answers = [a for a in parts.answers if place(a) is not None]
    if answers:
        latest = max(answers, key=lambda a: (place(a), a.turn))
        messages, recorded = _chain(latest, parts, load, producers)
    for where in sorted(w for w in producers if w >= len(messages)):
        messages.append(_produced(producers[where], load))
    return messages, recorded


def _chain(
    latest: AnswerDone,
    parts: Parts,
    load: Loader,
    producers: Mapping[int, UserTurnDone | StepDone | ReplyDone],
) -> tuple[list[Said], bool]:
    """The latest request's messages, oldest first, then its reply; each message said by
    the producer whose place it is, else by the benchmark (in the request that carried it);
    and whether the request was recorded (an imported answer keeps none)."""
    by_key = {answer.key: answer for answer in parts.answers}
    chain: list[AnswerRecord] = []
    seen: set[str] = set()
    current: AnswerDone | None = latest
    while current is not None and current.key not in seen:
        seen.add(current.key)
        record = load(current)
        if not isinstance(record, AnswerRecord):
            break
        chain.append(record)
        current = by_key.get(record.after) if record.after is not None else None
    messages: list[Said] = []
    for record in reversed(chain):
        for message in record.messages or []:
            producer = producers.get(len(messages))
            said = _said(message, BENCHMARK, record.key)
            if producer is not None and _fits(producer, said):
                said = said.model_copy(update={"by": _by(producer), "record": producer.key})
            messages.append(said)
        messages.append(_reply(record))
    return messages, bool(chain) and chain[-1].messages is not None


def _fits(done: UserTurnDone | StepDone | ReplyDone, said: Said) -> bool:
    """Whether the message at a producer's place is of its kind (a tool's result is a tool
    message, a user turn a user message; a driver's role may speak as any)."""
    if isinstance(done, StepDone):
        return said.role == "tool"
    if isinstance(done, UserTurnDone):
        return said.role == "user"
    return True


def _by(done: UserTurnDone | StepDone | ReplyDone) -> str:
    if isinstance(done, StepDone):
        return TOOL
    if isinstance(done, ReplyDone):
        return done.role
    return BENCHMARK if done.origin == "template" else "user"


def _calls(raw: Iterable[Any] | None) -> tuple[ToolCall, ...]:
    calls = []
    for part in raw or ():
        try:
            calls.append(ToolCall.from_part(part))
        except (KeyError, TypeError, ValueError):
            continue  # (a damaged call in an old or hostile log: left out, not a crash)
    return tuple(calls)


def _said(message: Mapping[str, Any], by: str, record: str | None) -> Said:
    role = message.get("role")
    content = message.get("content")
    return Said(
        role=role if role in ("system", "developer", "user", "assistant", "tool") else "user",
        content=content if isinstance(content, str) else "",
        tool_calls=_calls(message.get("tool_calls")),
        tool_call_id=message.get("tool_call_id"),
        name=message.get("name"),
        by=by,
        record=record,
    )


def _reply(record: AnswerRecord) -> Said:
    calls = record.tool_calls or []
    if record.kept_calls is not None:
        calls = calls[: record.kept_calls]
    return Said(
        role="assistant",
        content=record.text,
        tool_calls=_calls(calls),
        by="model",
        record=record.key,
    )


def _produced(done: UserTurnDone | StepDone | ReplyDone, load: Loader) -> Said:
    """A message no answer's request holds yet (it came after the model's last reply)."""
    if isinstance(done, StepDone):
        return Said(
            role="tool",
            content=done.output,
            tool_call_id=done.call_id or "",
            name=done.name,
            by=TOOL,
            record=done.key,
        )
    if isinstance(done, ReplyDone):
        return Said(role="user", content=done.text, by=done.role, record=done.key)
    return Said(role="user", content=done.text, by=_by(done), record=done.key)


# -- logs written before records carried their place ------------------------------------------
def _is_legacy(parts: Parts) -> bool:
    return any(done.at is None for done in (*parts.answers, *parts.producers))


def _legacy_at(parts: Parts) -> dict[str, int]:
    """Places for records logged without `at`, from their turn numbers as the drivers of
    that time logged them: the user opens (turn 1), each answer (turn k) follows the
    messages before it, a tool's step follows the answer of its turn, and a user turn
    follows the answer that went to the user. Only the reader of such logs uses this."""
    answers = sorted(parts.answers, key=lambda d: d.turn)
    steps: dict[int, list[StepDone]] = {}
    for step in sorted(parts.steps, key=lambda d: (d.turn, d.call)):
        steps.setdefault(step.turn, []).append(step)
    users = {user.turn: user for user in parts.users}
    found: dict[str, int] = {}
    position = 0
    user_turn = 1
    if users.get(1) is not None:
        found[users[1].key] = position = 1  # (after the system message)
    for answer in answers:
        position += 1
        found[answer.key] = position
        taken = steps.get(answer.turn)
        if taken:
            for step in taken:
                position += 1
                found[step.key] = position
            continue
        if answer.tool_calls:
            continue
        user_turn += 1
        user = users.get(user_turn)
        if user is not None:
            position += 1
            found[user.key] = position
    return found
