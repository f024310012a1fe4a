"""A large log is read in two parts at once, the second by a forked child (`store.rundir`):
for every place the log can be cut, merging the child's index into the parent's leaves
exactly what one pass leaves, and a child that fails, hangs or meets a batch run makes the
parent read on itself."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import pytest

from turnbench.errors import RunDirectoryError
from turnbench.journal.logindex import LogIndex
from turnbench.record_keys import answer_key, judgment_key, legacy_key, user_turn_key
from turnbench.store import parallel, rundir
from turnbench.store.rundir import RunRecords
from turnbench.types import (
    AnswerRecord,
    AttemptRecord,
    BatchRecord,
    ConfigRecord,
    EndRecord,
    FailureRecord,
    JudgmentRecord,
    Usage,
    UserTurnRecord,
)

pytestmark = pytest.mark.skipif(not parallel.can_fork(), reason="fork on Linux, 2+ CPUs")

JUDGE = "openai/judge"


def _config(ts: float) -> ConfigRecord:
    return ConfigRecord(ts=ts, turnbench_version="test", config={"benchmark": "mt-bench"})


def _answer(model: str, sample: int, ts: float, **fields: Any) -> AnswerRecord:
    return AnswerRecord(
        key=answer_key(model, sample, 1),
        model=model,
        sample_id=sample,
        turn=1,
        text=f"{model} answers {sample} at {ts}",
        messages=[{"role": "user", "content": f"question {sample} (seen at {ts})"}],
        usage=Usage(prompt_tokens=10, completion_tokens=int(ts)),
        ts=ts,
        **fields,
    )


def _judgment(model: str, sample: int, ts: float, **fields: Any) -> JudgmentRecord:
    values: dict[str, Any] = {
        "key": judgment_key(JUDGE, model, sample, 1),
        "judge": JUDGE,
        "model": model,
        "sample_id": sample,
        "turn": 1,
        "prompt_name": "single-v1",
        "messages": [{"role": "user", "content": "rate it"}],
        "outputs": ["Rating: [[7]]"],
        "parser": "rating-strict",
        "status": "scored",
        "score": 7.0,
        "usage": Usage(prompt_tokens=100, completion_tokens=5),
        "endpoints": [f"http://judge-{int(ts) % 2}/v1"],
        "params": {"temperature": 0.0 if ts < 200 else 0.5},
        "ts": ts,
    }
    values.update(fields)
    return JudgmentRecord(**values)


def _failure(key: str, stage: str, ts: float) -> FailureRecord:
    return FailureRecord(key=key, stage=stage, error=f"failed at {ts}", ts=ts)  # type: ignore[arg-type]


def _lines() -> list[bytes]:
    """Two invocations: failures closed and reopened across them, work done again, an
    untrustworthy record, a damaged line, a simulated user turn, an attempt that returned
    nothing, a record older than the one before, and a torn last line."""
    records = [
        _config(100.0),
        _answer("m1", 1, 101.0),
        _failure(judgment_key(JUDGE, "m1", 1, 1), "judgment", 102.0),
        AttemptRecord(
            key=judgment_key(JUDGE, "m1", 1, 1),
            stage="judgment",
            role=JUDGE,
            error="timeout",
            prompt_tokens=40,
            completion_tokens=9,
            ts=103.0,
        ),
        _judgment("m1", 1, 104.0),
        _failure(answer_key("m1", 2, 1), "answer", 105.0),
        _answer("m2", 1, 106.0, origin="imported"),
        _judgment("m2", 9, 107.0, key="not the key of its fields"),
        b'{"kind":"answer","key":"damaged',
        EndRecord(status="interrupted", ts=108.0),
        _config(200.0),
        _answer("m1", 2, 201.0),
        _failure(judgment_key(JUDGE, "m1", 2, 1), "judgment", 202.0),
        _judgment("m1", 2, 203.0, reported_model="judge-2026"),
        _failure(judgment_key(JUDGE, "m1", 1, 1), "judgment", 204.0),
        UserTurnRecord(
            key=user_turn_key("m1", 3, 2),
            model="m1",
            sample_id=3,
            turn=2,
            text="and then?",
            ts=205.0,
        ),
        _judgment("m2", 1, 206.0, score=9.0),
        _answer("m1", 1, 199.0),  # done again, with a clock that went back
        _failure(legacy_key(_judgment("m1", 3, 0.0)), "judgment", 207.0),
        _judgment("m1", 3, 208.0),  # closes the failure logged under its legacy key
        _failure(answer_key("m2", 4, 1), "answer", 209.0),
    ]
    lines = [r if isinstance(r, bytes) else r.model_dump_json().encode() for r in records]
    return [line + b"\n" for line in lines] + [b'{"kind":"judgment","key":"torn']


def _snapshot(records: RunRecords) -> dict[str, Any]:
    """Everything the readers of a run take from its log."""
    index = records.index
    return {
        "done": [(key, dataclasses.astuple(done)) for key, done in index.done.items()],
        "failures": [(k, f.model_dump()) for k, f in index.failures.items()],
        "invalid": index.invalid,
        "configs": [c.model_dump() for c in index.configs],
        "spans": index.spans,
        "records": index.records,
        "answered": {m: sorted(map(str, turns)) for m, turns in index.answered.items()},
        "usage": {role: (t.usage, t.requests_logged) for role, t in index.usage.items()},
        "unanswered": {r: (t.usage, t.requests_logged) for r, t in index.unanswered.items()},
        "provenance": [
            (name, p.params.values(), p.reported_model.values(), p.served)
            for name, p in index.provenance.items()
        ],
        "questions": records.questions,
        "warnings": records.warnings,
    }


@pytest.fixture
def log(tmp_path: Path) -> tuple[Path, list[int]]:
    lines = _lines()
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(lines))
    starts = [sum(map(len, lines[:n])) for n in range(1, len(lines))]
    return path, starts


def _split_at(monkeypatch: pytest.MonkeyPatch, offset: int) -> None:
    monkeypatch.setattr(rundir, "_split_point", lambda _path, _parallel: offset)


def test_every_cut_merges_to_what_one_pass_reads(log, monkeypatch):
    path, starts = log
    whole = _snapshot(RunRecords(path, parallel=False))
    assert whole["failures"] and whole["invalid"] and len(whole["spans"]) == 2
    assert any("unreadable record" in w for w in whole["warnings"])
    for start in starts:
        _split_at(monkeypatch, start)
        assert _snapshot(RunRecords(path, parallel=True)) == whole, f"cut at byte {start}"


def test_the_second_part_is_read_by_another_process(log, monkeypatch, tmp_path):
    path, starts = log
    readers = tmp_path / "readers.txt"
    real = RunRecords.later_part.__func__  # type: ignore[attr-defined]

    def recorded(cls, *args):
        with readers.open("a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        return real(cls, *args)

    monkeypatch.setattr(RunRecords, "later_part", classmethod(recorded))
    _split_at(monkeypatch, starts[len(starts) // 2])
    RunRecords(path, parallel=True)
    assert int(readers.read_text("utf-8")) != os.getpid()


def test_a_failing_child_makes_the_parent_read_the_part(log, monkeypatch):
    path, starts = log
    whole = _snapshot(RunRecords(path, parallel=False))
    parent, real = os.getpid(), RunRecords.later_part.__func__  # type: ignore[attr-defined]

    def fails_in_child(cls, *args):
        if os.getpid() != parent:
            os._exit(3)
        return real(cls, *args)

    monkeypatch.setattr(RunRecords, "later_part", classmethod(fails_in_child))
    _split_at(monkeypatch, starts[4])
    assert _snapshot(RunRecords(path, parallel=True)) == whole


def test_a_batch_run_is_read_on_in_one_pass(tmp_path, monkeypatch):
    batch = BatchRecord(
        key="batch-1", submission="s1", role="model", stage="answers", event="creating",
        batch={"provider": "openai", "custom_ids": {"c1": answer_key("m1", 1, 1)}}, ts=101.0,
    )  # fmt: skip
    lines = [r.model_dump_json().encode() + b"\n" for r in
             (_config(100.0), batch, _answer("m1", 1, 102.0), _answer("m1", 2, 103.0))]  # fmt: skip
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(lines))
    whole = _snapshot(RunRecords(path, parallel=False))
    merged: list[bool] = []
    real_merge = LogIndex.merge
    monkeypatch.setattr(LogIndex, "merge", lambda s, o: merged.append(True) or real_merge(s, o))
    _split_at(monkeypatch, len(lines[0]) + len(lines[1]) + len(lines[2]))
    assert _snapshot(RunRecords(path, parallel=True)) == whole
    assert merged == []  # (the batch items a provider still holds depend on the whole order)


def test_a_damaged_config_in_the_second_part_refuses_the_log_as_one_pass_does(
    tmp_path, monkeypatch
):
    lines = [
        _config(100.0).model_dump_json().encode() + b"\n",
        _answer("m1", 1, 101.0).model_dump_json().encode() + b"\n",
        b'{"kind":"config","ts":\n',
        _answer("m1", 2, 102.0).model_dump_json().encode() + b"\n",
    ]
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(lines))
    with pytest.raises(RunDirectoryError) as one_pass:
        RunRecords(path, parallel=False)
    _split_at(monkeypatch, len(lines[0]) + len(lines[1]))
    with pytest.raises(RunDirectoryError) as in_parts:
        RunRecords(path, parallel=True)
    assert str(in_parts.value) == str(one_pass.value)
    assert ":3:" in str(in_parts.value)  # numbered as in the whole file


def test_a_child_that_does_not_answer_in_time_is_stopped_and_the_work_done_here():
    parent = os.getpid()

    def stuck_in_child() -> str:
        if os.getpid() != parent:
            time.sleep(60)
        return "done here"

    started = time.monotonic()
    assert parallel.forked(stuck_in_child)(timeout=0.5) == "done here"
    assert time.monotonic() - started < 10


def test_small_logs_are_read_in_one_pass(log):
    path, _starts = log
    assert rundir._split_point(path, None) is None  # (below SPLIT_BYTES)
    assert rundir._split_point(path, False) is None
    split = rundir._split_point(path, True)
    assert split is not None and path.read_bytes()[split - 1 : split] == b"\n"


def test_a_log_refused_in_the_first_part_leaves_no_child_behind(tmp_path, monkeypatch):
    lines = [b'{"kind":"config","ts":\n'] + [
        _answer("m1", n, 101.0 + n).model_dump_json().encode() + b"\n" for n in range(4)
    ]
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(lines))
    started: list[Any] = []
    real = rundir.forked

    def recorded(work):
        pending = real(work)
        started.append(pending)
        return pending

    monkeypatch.setattr(rundir, "forked", recorded)
    _split_at(monkeypatch, len(lines[0]) + len(lines[1]))
    with pytest.raises(RunDirectoryError, match=":1:"):
        RunRecords(path, parallel=True)
    [pending] = started
    with pytest.raises(ChildProcessError):  # (reaped: no zombie left)
        os.waitpid(pending.pid, os.WNOHANG)
    with pytest.raises(OSError):  # (the pipe is closed)
        os.fstat(pending.read_end)
