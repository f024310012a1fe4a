"""Every log key, built in one place from typed fields.

A key names one piece of work (an answer, a judgment, a pairwise game) so that a resumed run
can tell what is already done. Keys are JSON arrays of the work's identifying fields, so any
model name, judge spec or sample id (with `|`, `/`, spaces, quotes or any other character)
yields a distinct key, and `81` and `"81"` stay different. Nothing reads a key back into
fields: readers use the record's own fields, and the done-index is built from those fields
too (`record_key`), which is also how a log written before this scheme (schema version 1,
`answer|MODEL|ID|TURN`-style keys) still resumes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from turnbench.types import AnswerRecord, FailureRecord, JudgmentRecord, SampleId

Order = Literal["AB", "BA"]


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_STRING = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes for a str


def _part(value: Any) -> str:
    if value.__class__ is str:
        return _STRING(value)
    if value.__class__ is int:
        return str(value)
    if value is None:
        return "null"
    return _ENCODE(value)


def _key(*parts: Any) -> str:
    """The JSON array of `parts`, exactly as json.dumps writes it (built part by part: keys
    are made for every planned item of a run, several times over)."""
    return "[" + ",".join(map(_part, parts)) + "]"


def step_key(*path: Any) -> str:
    """The key of any step: the JSON array of its path (its kind, then the fields that name
    it). Every key of a log is one of these; the functions below fix each kind's path."""
    return _key(*path)


def answer_key(
    model: str, sample_id: SampleId, turn: int, arm: str | None = None, trial: int | None = None
) -> str:
    """One answer (one step of the model under test); `arm` (a stress arm, `--perturb`) and
    `trial` (one of several runs of the same conversation) are last parts only when given,
    so the keys of a run with neither are what they always were."""
    if trial is not None:
        return _key("answer", model, sample_id, turn, arm, trial)
    if arm is None:
        return _key("answer", model, sample_id, turn)
    return _key("answer", model, sample_id, turn, arm)


def user_turn_key(model: str, sample_id: SampleId, turn: int, trial: int | None = None) -> str:
    """One user turn of a simulated conversation with `model` (it depends on the model's
    earlier answers, so each model has its own); `trial` as for `answer_key`."""
    if trial is not None:
        return _key("user_turn", model, sample_id, turn, trial)
    return _key("user_turn", model, sample_id, turn)


def tool_step_key(
    model: str, sample_id: SampleId, turn: int, trial: int | None = None, call: int = 0
) -> str:
    """A local step (a tool call a driver ran) of the conversation with `model`: the
    `call`-th of the model's step `turn`."""
    return _key("step", model, sample_id, turn, trial, call)


def sample_key(model: str, sample_id: SampleId, trial: int | None = None) -> str:
    """The finished sample (a whole conversation) of `model`, as its driver scored it."""
    return _key("sample", model, sample_id, trial)


def config_key(started: float, invocation: str) -> str:
    """One invocation's config record: when it started and a random id (two invocations can
    start in the same millisecond)."""
    return _key("config", started, invocation)


def end_key(config_key: str) -> str:
    """The end of the invocation that `config_key` opened."""
    return _key("end", config_key)


def batch_event_key(submission: str, event: str) -> str:
    """One step (creating, created, ended) of one provider batch submission."""
    return _key("batch", submission, event)


def judgment_key(
    judge: str,
    model: str,
    sample_id: SampleId,
    turn: int,
    *,
    criterion: str | None = None,
    repeat: int = 0,
    arm: str | None = None,
) -> str:
    """One single-grading judgment; `criterion` tells apart several judge requests of one
    turn (a custom benchmark's rubric and checklist), `repeat` the repeats of one item,
    `arm` the stress arm of the answer judged (a last part only when given)."""
    part = _part
    if arm is not None:
        return (
            f'["judgment",{part(judge)},{part(model)},{part(sample_id)},{part(turn)},'
            f"{part(criterion)},{part(repeat)},{part(arm)}]"
        )
    return (
        f'["judgment",{part(judge)},{part(model)},{part(sample_id)},{part(turn)},'
        f"{part(criterion)},{part(repeat)}]"
    )


def game_key(
    judge: str,
    model_1: str,
    model_2: str,
    sample_id: SampleId,
    turn: int,
    order: Order,
    *,
    repeat: int = 0,
) -> str:
    """One pairwise game; `order` says which model the judge saw as assistant A."""
    return _key("game", judge, model_1, model_2, sample_id, turn, order, repeat)


def record_key(record: AnswerRecord | JudgmentRecord) -> str:
    """The key of the work a record finished, from its own fields."""
    if isinstance(record, AnswerRecord):
        return answer_key(record.model, record.sample_id, record.turn, record.arm, record.trial)
    pair = record.pair_models()
    if pair is not None:
        order = record.game_order()
        assert order is not None
        return game_key(
            record.judge,
            pair[0],
            pair[1],
            record.sample_id,
            record.turn,
            order,
            repeat=record.repeat,
        )
    return judgment_key(
        record.judge,
        record.model,
        record.sample_id,
        record.turn,
        criterion=record.criterion,
        repeat=record.repeat,
        arm=record.arm,
    )


def legacy_key(record: AnswerRecord | JudgmentRecord) -> str:
    """The key a schema-1 log wrote for this record (`|`-joined, ambiguous for names with
    `|`). Used only to check that an old record's key belongs to its fields. A stress
    arm's record has no such older form: its own key."""
    if record.arm is not None or getattr(record, "trial", None) is not None:
        return record_key(record)
    if isinstance(record, AnswerRecord):
        return f"answer|{record.model}|{record.sample_id}|{record.turn}"
    pair = record.pair_models()
    if pair is not None:
        return (
            f"pair|{record.judge}|{pair[0]}|{pair[1]}|{record.sample_id}|{record.turn}|"
            f"{record.game_order()}"
        )
    return f"judgment|{record.judge}|{record.model}|{record.sample_id}|{record.turn}"


def key_matches(record: AnswerRecord | JudgmentRecord) -> bool:
    """Whether a record's stored key names the work its fields describe."""
    return record.key in (record_key(record), legacy_key(record))


def with_legacy_fields(record: FailureRecord) -> FailureRecord:
    """A schema-1 failure named its work only in its `|`-joined key; this is the one place
    that reads such a key back (answer and single-judgment keys; pairwise ones are too
    ambiguous and stay as they are). Records that name their work by fields pass through."""
    if record.model is not None:
        return record
    parts = record.key.split("|")
    if len(parts) < 4 or not parts[-1].isdigit():
        return record
    sample: SampleId = int(parts[-2]) if parts[-2].lstrip("-").isdigit() else parts[-2]
    if parts[0] == "answer":
        fields = {"model": "|".join(parts[1:-2]), "judge": None}
    elif parts[0] == "judgment" and len(parts) >= 5:
        fields = {"model": "|".join(parts[2:-2]), "judge": parts[1]}
    else:
        return record
    return record.model_copy(update={**fields, "sample_id": sample, "turn": int(parts[-1])})


def batch_custom_id(key: str) -> str:
    """A custom_id every provider accepts for any engine key (stable, 40 characters).
    The engine keeps its own map from this id back to its key."""
    return "tb-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:37]
