"""A record of a growing conversation keeps only what its step appended; readers get the whole
request back (`engine.history.Thread` writes, `journal.threads` reads)."""

from __future__ import annotations

import json

from turnbench.engine.history import Thread
from turnbench.journal.threads import whole_request, with_whole_requests
from turnbench.record_keys import answer_key
from turnbench.store.rundir import RunRecords
from turnbench.types import AnswerRecord, Message


def _user(text: str) -> Message:
    return {"role": "user", "content": text}


def _assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


def _conversation(turns: int) -> tuple[list[dict], list[list[Message]]]:
    """The answer records of a self-history conversation of `turns` turns, as a Thread has
    them written, and the whole request of each turn."""
    thread = Thread()
    sent: list[list[Message]] = []
    records = []
    history: list[Message] = [{"role": "system", "content": "Be brief."}]
    for turn in range(1, turns + 1):
        messages = [*history, _user(f"question {turn}")]
        after, kept = thread.appended(messages)
        key = answer_key("m", "s1", turn)
        record = AnswerRecord(
            key=key,
            model="m",
            sample_id="s1",
            turn=turn,
            text=f"answer {turn}",
            messages=kept,
            after=after,
        )
        records.append(json.loads(record.model_dump_json(exclude_none=True)))
        thread.logged(key, messages, _assistant(record.text))
        sent.append(messages)
        history = [*messages, _assistant(record.text)]
    return records, sent


def test_each_record_keeps_only_its_turn_and_reads_back_whole():
    records, sent = _conversation(4)
    assert records[0]["messages"] == sent[0] and "after" not in records[0]
    for turn, record in enumerate(records[1:], start=2):
        assert record["messages"] == [_user(f"question {turn}")]
        assert record["after"] == answer_key("m", "s1", turn - 1)
    whole = with_whole_requests(records)
    assert [record["messages"] for record in whole] == sent


def test_the_log_grows_with_the_conversation_not_its_square():
    sizes = {}
    for turns in (4, 8, 16):
        records, sent = _conversation(turns)
        sizes[turns] = sum(len(json.dumps(r["messages"])) for r in records)
        whole = sum(len(json.dumps(m)) for m in sent)
        assert sizes[turns] < whole
    # twice the turns, about twice the size (whole requests: about four times)
    assert sizes[16] / sizes[8] < 2.5 and sizes[8] / sizes[4] < 2.5


def test_a_request_that_does_not_extend_its_thread_is_kept_whole():
    thread = Thread()
    first = [_user("a")]
    thread.logged("k1", first, _assistant("b"))
    rewritten = [_user("a, said otherwise"), _assistant("b"), _user("c")]
    assert thread.appended(rewritten) == (None, rewritten)
    extended = [*first, _assistant("b"), _user("c")]
    assert thread.appended(extended) == ("k1", [_user("c")])


def test_a_broken_or_cyclic_chain_gives_no_request():
    records, _ = _conversation(3)
    by_key = {r["key"]: r for r in records}
    assert whole_request(records[2], {records[1]["key"]: records[1]}.get) is None  # turn 1 gone
    looped = dict(records[0], after=records[2]["key"])
    by_key[looped["key"]] = looped
    assert whole_request(records[2], by_key.get) is None
    kept = with_whole_requests([records[1]])  # its turn 1 is not in the log: kept as it was
    assert kept[0]["messages"] == records[1]["messages"]


def test_the_questions_of_a_thread_belong_to_their_turns():
    records, _ = _conversation(3)
    read = RunRecords(None, [AnswerRecord.model_validate(r) for r in records])
    assert read.questions == {"s1": {1: "question 1", 2: "question 2", 3: "question 3"}}


def test_a_list_grown_in_place_keeps_only_what_each_step_appended():
    """The importer hands its thread one list that only grows (issue 44: a copy per message
    made a trajectory of n messages cost n squared); each record still keeps only its step's
    messages, and the chain reads back whole."""
    thread = Thread()
    sent: list[Message] = [{"role": "system", "content": "Be brief."}]
    records, whole = [], []
    for turn in range(1, 5):
        sent.append(_user(f"question {turn}"))
        after, kept = thread.appended(sent)
        key = answer_key("m", "s1", turn)
        record = AnswerRecord(key=key, model="m", sample_id="s1", turn=turn,
                              text=f"answer {turn}", messages=list(kept), after=after)  # fmt: skip
        records.append(json.loads(record.model_dump_json(exclude_none=True)))
        whole.append(list(sent))
        reply = _assistant(record.text)
        thread.logged(key, sent, reply)
        sent.append(reply)
    assert [r["messages"] for r in records[1:]] == [[_user(f"question {t}")] for t in (2, 3, 4)]
    assert [r["messages"] for r in with_whole_requests(records)] == whole


def test_a_new_list_is_still_compared_with_the_thread():
    """A caller that passes a new list each step is compared message by message: a list whose
    start was rewritten, or whose reply is not the one logged, is kept whole."""
    thread = Thread()
    first = [_user("a")]
    thread.logged("k1", first, _assistant("b"))
    assert thread.appended([_user("a"), _assistant("not b"), _user("c")])[0] is None
    assert thread.appended([_user("A"), _assistant("b"), _user("c")])[0] is None
    assert thread.appended([_user("a"), _assistant("b"), _user("c")]) == ("k1", [_user("c")])


def test_a_thread_step_costs_the_same_however_long_the_conversation():
    """Steps on a list grown in place take constant time: 8 times the steps, about 8 times
    the time (6f7f1ce copied and compared the whole conversation at every step: 64 times)."""
    import time

    def seconds(steps: int) -> float:
        thread, sent = Thread(), [_user("start")]
        started = time.process_time()
        for step in range(steps):
            thread.appended(sent)
            reply = _assistant(f"answer {step}")
            thread.logged(f"k{step}", sent, reply)
            sent += [reply, _user(f"question {step}")]
        return time.process_time() - started

    short = min(seconds(2000) for _ in range(3))
    long = min(seconds(16000) for _ in range(3))
    assert long / short < 20, (short, long)
