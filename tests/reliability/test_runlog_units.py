"""Item 1 and 7, in-process: how the run log treats torn and corrupt lines, and its lock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnbench.errors import RunLockedError
from turnbench.journal.runlog import LOG_NAME, RunLog
from turnbench.record_keys import end_key
from turnbench.results.build import timing
from turnbench.types import AnswerRecord, ConfigRecord, EndRecord, FailureRecord

CONFIG = ConfigRecord(turnbench_version="test", config={"benchmark": "mt-bench"})


def _answer(key: str) -> AnswerRecord:
    return AnswerRecord(key=key, model="m", sample_id=1, turn=1, text=f"text of {key}")


def _write(directory: Path, *keys: str) -> bytes:
    """A log as a run writes it: its config record, then one answer per key."""
    with RunLog(directory) as log:
        log.append(CONFIG)
        for key in keys:
            log.append(_answer(key))
    return (directory / LOG_NAME).read_bytes()


def _keys(records: list) -> list[str]:
    return [r.key for r in records if not isinstance(r, ConfigRecord)]


def _logged_keys(directory: Path) -> list[str]:
    lines = (directory / LOG_NAME).read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "config"
    return [json.loads(line)["key"] for line in lines[1:]]


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.99])
def test_torn_last_line_is_reported_ignored_and_cut_off(tmp_path, fraction):
    whole = _write(tmp_path, "a", "b")
    torn = json.dumps(_answer("c").model_dump()).encode()
    (tmp_path / LOG_NAME).write_bytes(whole + torn[: int(len(torn) * fraction)])
    warnings: list[str] = []
    with RunLog(tmp_path, warn=warnings.append) as log:
        assert _keys(log.records) == ["a", "b"]
        assert len(warnings) == 1 and "last line is incomplete" in warnings[0]
        assert (tmp_path / LOG_NAME).read_bytes() == whole  # cut off before any append
        log.append(_answer("c"))
    assert _logged_keys(tmp_path) == ["a", "b", "c"]


def test_whole_last_record_without_newline_is_kept(tmp_path):
    whole = _write(tmp_path, "a", "b")
    (tmp_path / LOG_NAME).write_bytes(whole[:-1])  # killed between the record and its newline
    warnings: list[str] = []
    with RunLog(tmp_path, warn=warnings.append) as log:
        assert _keys(log.records) == ["a", "b"] and warnings == []
        log.append(_answer("c"))
    assert _logged_keys(tmp_path) == ["a", "b", "c"]


def test_unreadable_middle_line_is_skipped_with_a_warning(tmp_path):
    whole = _write(tmp_path, "a", "b")
    lines = whole.splitlines(keepends=True)
    (tmp_path / LOG_NAME).write_bytes(lines[0] + lines[1] + b"{garbage\n" + lines[2])
    warnings: list[str] = []
    with RunLog(tmp_path, warn=warnings.append) as log:
        assert _keys(log.records) == ["a", "b"]
    assert len(warnings) == 1 and f"{LOG_NAME}:3: unreadable record skipped" in warnings[0]


def test_every_record_is_one_line_written_whole(tmp_path):
    big = "x" * 300_000  # larger than a pipe buffer; still a single line
    with RunLog(tmp_path) as log:
        log.append(CONFIG)
        log.append(AnswerRecord(key="big", model="m", sample_id=1, turn=1, text=big))
        log.append(FailureRecord(key="f", stage="answer", error="boom"))
    lines = (tmp_path / LOG_NAME).read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 4
    assert json.loads(lines[1])["text"] == big


def test_a_second_opener_is_refused_while_the_first_holds_the_lock(tmp_path):
    with (
        RunLog(tmp_path),
        pytest.raises(RunLockedError, match="in use by another turnbench process"),
    ):
        RunLog(tmp_path).open()
    with RunLog(tmp_path):  # released on close
        pass


def test_an_invocation_counts_to_its_end_record_and_a_killed_one_to_its_last_record(tmp_path):
    def config(ts: float) -> ConfigRecord:
        return CONFIG.model_copy(update={"key": f"c{ts}", "ts": ts})

    with RunLog(tmp_path) as log:
        log.append(config(100.0))
        log.append(_answer("a").model_copy(update={"ts": 101.0}))
        log.append(EndRecord(key=end_key("c100.0"), status="budget", ts=104.0))  # results said 4 s
        log.append(config(200.0))  # killed after its last answer
        log.append(_answer("b").model_copy(update={"ts": 203.0}))
        log.append(config(300.0))  # the current invocation, ending at 310
    with RunLog(tmp_path) as log:
        for source in (log.index, log.records):
            when = timing(source, 310.0)
            assert (when.started_at, when.finished_at, when.wall_seconds) == (100.0, 310.0, 17.0)
        # an end record is neither work nor a broken record
        assert end_key("c100.0") not in log.index.done
        assert [i["kind"] for i in log.index.invalid] == ["answer", "answer"]  # (toy keys)


def test_ending_an_invocation_records_when_and_survives_a_log_that_refuses_writes(tmp_path):
    with RunLog(tmp_path) as log:
        log.append(CONFIG)
        ended = log.end_invocation("finished")
        end = log.records[-1]
        assert isinstance(end, EndRecord) and end.ts == ended and end.status == "finished"
        assert end.key == end_key(CONFIG.key)
        log._write_failed = "the disk is full"  # as after a failed append
        assert log.end_invocation("fatal") >= ended  # no error: the results still get written
        assert len(log.records) == 2
