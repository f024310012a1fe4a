"""The one reader of conversations (`journal.conversations`): a conversation comes back whole
from the records its driver logged, in the order it was held, each message with the role and
the record that produced it, by the places (`at`) the records carry; a log written before
records carried them is read by its turn numbers."""

from __future__ import annotations

from typing import Any

from turnbench.journal.conversations import conversations
from turnbench.journal.logindex import LogIndex
from turnbench.record_keys import answer_key, judgment_key, sample_key, tool_step_key, user_turn_key
from turnbench.types import (
    AnswerRecord,
    ConfigRecord,
    SampleRecord,
    StepRecord,
    UserTurnRecord,
)

M, S = "openai/agent", 7
SYSTEM = {"role": "system", "content": "policy"}
A1, A2 = answer_key(M, S, 1, trial=0), answer_key(M, S, 2, trial=0)
U1, U2 = user_turn_key(M, S, 1, 0), user_turn_key(M, S, 2, 0)
S1, S2 = tool_step_key(M, S, 1, 0, 0), tool_step_key(M, S, 1, 0, 1)


def call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def index_of(records: list[Any]) -> tuple[LogIndex, dict[int, Any]]:
    index = LogIndex()
    held = {}
    index.add(ConfigRecord(turnbench_version="t", config={}), -1, 0)
    for number, record in enumerate(records):
        index.add(record, number, 1)
        held[number] = record
    return index, held


def read(records: list[Any], **kwargs: Any):
    index, held = index_of(records)
    return conversations(index, lambda done: held[done.offset], "bench", **kwargs)


def agent_log(at: bool = True, stop: bool = True) -> list[Any]:
    """A user opens; the agent calls two tools in one reply, then speaks; the user stops."""
    place = (lambda n: n) if at else (lambda n: None)
    calls = [call("c1", "lookup", '{"id": 1}'), call("c2", "lookup", '{"id": 2}')]
    records: list[Any] = [
        UserTurnRecord(key=U1, model=M, sample_id=S, turn=1, trial=0, text="hi",
                       origin="user-model", at=place(1)),
        AnswerRecord(key=A1, model=M, sample_id=S, turn=1, trial=0, text="", tool_calls=calls,
                     messages=[SYSTEM, {"role": "user", "content": "hi"}], at=place(2)),
        StepRecord(key=S1, model=M, sample_id=S, turn=1, trial=0, call=0, name="lookup",
                   call_id="c1", output="one", at=place(3)),
        StepRecord(key=S2, model=M, sample_id=S, turn=1, trial=0, call=1, name="lookup",
                   call_id="c2", output="two", at=place(4)),
        AnswerRecord(key=A2, model=M, sample_id=S, turn=2, trial=0, text="done",
                     messages=[{"role": "tool", "tool_call_id": "c1", "content": "one"},
                               {"role": "tool", "tool_call_id": "c2", "content": "two"}],
                     after=A1, at=place(5)),
    ]  # fmt: skip
    if stop:
        records += [
            UserTurnRecord(key=U2, model=M, sample_id=S, turn=2, trial=0, text="###STOP###",
                           origin="user-model", ended="goal_met", at=place(6)),
            SampleRecord(key=sample_key(M, S, 0), model=M, sample_id=S, trial=0, score=1.0,
                         ended="user_stop", steps=2, detail={"ok": True}),
        ]  # fmt: skip
    return records


def test_a_conversation_reads_back_whole_with_who_said_each_message():
    (found,) = read(agent_log())
    assert [m.chat() for m in found.messages] == [
        SYSTEM,
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("c1", "lookup", '{"id": 1}'), call("c2", "lookup", '{"id": 2}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "###STOP###"},  # (the closing message it never answered)
    ]  # fmt: skip
    assert [(m.by, m.record) for m in found.messages] == [
        ("benchmark", A1), ("user", U1), ("model", A1), ("tool", S1), ("tool", S2),
        ("model", A2), ("user", U2),
    ]  # fmt: skip
    assert (found.finished, found.score, found.ended, found.outcome) == (
        True,
        1.0,
        "user_stop",
        {"ok": True},
    )
    assert (found.model, found.sample_id, found.trial, found.arm) == (M, S, 0, None)


def test_a_log_written_before_places_reads_the_same():
    """Records without `at` (an older log) are placed by their turn numbers."""
    old = read(agent_log(at=False))[0]
    new = read(agent_log())[0]
    assert [m.chat() for m in old.messages] == [m.chat() for m in new.messages]
    assert [m.by for m in old.messages] == [m.by for m in new.messages]


def test_a_partial_conversation_gives_what_happened_so_far():
    """Stopped after the tools ran: the results it never answered come after its reply."""
    (found,) = read(agent_log(stop=False)[:4])
    assert [m.role for m in found.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert not found.finished and found.score is None


def test_kept_calls_and_typed_outcomes():
    """A reply whose conversation kept only its first call (tau-bench) shows that one; the
    benchmark's outcome model types the outcome."""
    from pydantic import BaseModel

    class Outcome(BaseModel):
        ok: bool

    records = agent_log()
    records[1] = records[1].model_copy(update={"kept_calls": 1})
    (found,) = read(records, outcome_model=Outcome)
    assert [c.id for c in found.messages[2].tool_calls] == ["c1"]
    assert isinstance(found.outcome, Outcome) and found.outcome.ok


def test_turns_judged_one_by_one_carry_their_scores():
    """A self-history conversation: turn 2's request holds turn 1; the judged scores make
    the outcome, the benchmark's rule its score."""
    from turnbench.types import JudgmentRecord

    q1, q2 = {"role": "user", "content": "q1"}, {"role": "user", "content": "q2"}
    records = [
        AnswerRecord(key=answer_key(M, S, 1), model=M, sample_id=S, turn=1, text="r1",
                     messages=[q1], at=1),
        AnswerRecord(key=answer_key(M, S, 2), model=M, sample_id=S, turn=2, text="r2",
                     after=answer_key(M, S, 1), messages=[q2], at=3),
    ] + [
        JudgmentRecord(key=judgment_key("j", M, S, turn), judge="j", model=M,
                       sample_id=S, turn=turn, prompt_name="p", messages=[], outputs=["x"],
                       parser="rating-strict", status="scored", score=score)
        for turn, score in ((1, 8.0), (2, 4.0))
    ]  # fmt: skip
    (found,) = read(records, judge="j", turn_score=lambda turns: min(turns.values()))
    assert [m.content for m in found.messages] == ["q1", "r1", "q2", "r2"]
    assert [m.by for m in found.messages] == ["benchmark", "model", "benchmark", "model"]
    assert found.outcome == {"turns": {"1": 8.0, "2": 4.0}} and found.score == 4.0
