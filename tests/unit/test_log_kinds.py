"""Record kinds: local steps and finished samples are indexed like other finished work, and a
kind this version does not know (a newer version's) is ignored, said once, not treated as
damage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnbench.journal.logindex import LogIndex, SampleDone, StepDone
from turnbench.journal.runlog import parse_record_bytes, scan_records
from turnbench.record_keys import sample_key, tool_step_key
from turnbench.types import AnswerRecord, SampleRecord, StepRecord

CONFIG = {"kind": "config", "ts": 1.0, "turnbench_version": "0", "config": {}}


def _scan(path: Path, lines: list[dict | str]) -> tuple[LogIndex, list[str]]:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        "utf-8",
    )
    index, warnings = LogIndex(), []
    scan_records(path, index.add, warnings.append)
    return index, warnings


def _step(**changes: object) -> dict:
    record = StepRecord(
        key=tool_step_key("m", 3, 2, 1), model="m", sample_id=3, turn=2, trial=1,
        name="get_user_details", arguments='{"user_id": "u"}', output='{"name": "x"}',
    )  # fmt: skip
    return {**json.loads(record.model_dump_json(exclude_none=True)), **changes}


def _sample(**changes: object) -> dict:
    record = SampleRecord(
        key=sample_key("m", 3, 1), model="m", sample_id=3, trial=1, score=1.0, ended="user_stop",
        steps=7, detail={"db_match": True}, task_id=3, reward=1.0,
    )  # fmt: skip
    return {**json.loads(record.model_dump_json(exclude_none=True)), **changes}


def test_steps_and_samples_are_finished_work_under_their_keys(tmp_path):
    index, warnings = _scan(tmp_path / "log.jsonl", [CONFIG, _step(), _sample()])
    assert warnings == []
    step = index.done[tool_step_key("m", 3, 2, 1)]
    assert isinstance(step, StepDone) and step.output == '{"name": "x"}'
    done = index.done[sample_key("m", 3, 1)]
    assert isinstance(done, SampleDone) and done.score == 1.0 and done.detail == {"db_match": True}


def test_a_sample_keeps_the_top_level_keys_its_benchmark_gave():
    line = json.loads(SampleRecord.model_validate(_sample()).model_dump_json(exclude_none=True))
    assert line["task_id"] == 3 and line["trial"] == 1 and line["reward"] == 1.0


def test_a_step_or_sample_whose_key_names_other_work_is_left_out(tmp_path):
    lines = [CONFIG, _step(key=tool_step_key("m", 3, 2, 0)), _sample(score=float("nan"))]
    index, _ = _scan(tmp_path / "log.jsonl", lines)
    assert index.done == {}
    assert [item["kind"] for item in index.invalid] == ["step", "sample"]


def test_a_kind_this_version_does_not_know_is_ignored_and_said_once(tmp_path):
    newer = {"kind": "hologram", "key": "x", "ts": 2.0}
    damaged = {"kind": "step", "key": "x"}  # a known kind whose fields are wrong: damage
    index, warnings = _scan(
        tmp_path / "log.jsonl", [CONFIG, newer, newer, _sample(), damaged, _step()]
    )
    assert len(index.done) == 2
    assert [w for w in warnings if "hologram" in w] == [
        f"{tmp_path / 'log.jsonl'}: ignored records of kinds this version of turnbench does not "
        "know (2 'hologram'); a newer version wrote them"
    ]
    assert any(":5: unreadable record skipped" in w for w in warnings)


def test_a_recorded_request_reads_by_role_and_a_role_no_chat_api_has_is_refused():
    """Messages are read by role: OpenAI's "developer" (what an imported or older log may
    hold) reads back; a role no chat API has is a damaged line, not a silent guess."""
    answer = {"kind": "answer", "ts": 2.0, "key": "a", "model": "m", "sample_id": 1, "turn": 1,
              "text": "Hi.", "messages": [{"role": "developer", "content": "Be brief."},
                                          {"role": "user", "content": "Hello"}]}  # fmt: skip
    record = parse_record_bytes(json.dumps(answer).encode())
    assert isinstance(record, AnswerRecord)
    assert record.messages == answer["messages"]
    answer["messages"] = [{"role": "narrator", "content": "Once upon a time"}]
    with pytest.raises(ValueError, match="narrator"):
        parse_record_bytes(json.dumps(answer).encode())
