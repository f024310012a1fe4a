"""Issue 10, item 10 (and 2) through the real CLI: a model server that answers every request
with one kind of hostile reply. No reply kills the run; malformed replies are retried and
end as recorded failures, never as empty answers; an echoed key never reaches disk or the
terminal. (tests/reliability/test_backend_hostile.py covers the same modes at the backend.)"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import (
    PLANNED_ANSWERS,
    PLANNED_JUDGMENTS,
    of_kind,
    read_log,
    results,
    run_args,
)
from turnbench.testing.fake_server import FakeServer

KEY = "sk-hostile-ECHO-97531"


def hostile_run(env, tmp_path, mode: str, *extra: str):
    out = tmp_path / "run"
    with (
        FakeServer(fault_rate=1.0, faults=(mode,)) as model,
        FakeServer() as judge,
    ):
        args = run_args(
            model.base_url, out, "--max-attempts", "2", *extra, judge_url=judge.base_url
        )
        done = run_cli(args, env)
        judged = len(judge.requests)
    return out, done, judged


@pytest.mark.parametrize("mode", ["surrogate", "bad-usage", "absurd-usage"])
def test_odd_but_readable_replies_complete_the_run(mode, env, tmp_path):
    out, done, judged = hostile_run(env, tmp_path, mode)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    summary = results(out)
    assert summary["complete"] and summary["counts"]["answers"] == PLANNED_ANSWERS
    assert judged == PLANNED_JUDGMENTS
    usage = summary["usage"]["model"]
    for count in ("prompt_tokens", "completion_tokens"):
        assert isinstance(usage[count], int) and 0 <= usage[count] < 10**9, usage
    answers = of_kind(read_log(out), "answer")
    if mode == "surrogate":  # the lone surrogate became U+FFFD, and the log is valid UTF-8
        assert all("\ufffd" in a["text"] for a in answers)
        (out / "log.jsonl").read_text("utf-8")


@pytest.mark.parametrize("mode", ["null-content", "missing-message"])
def test_a_reply_without_content_is_a_failure_not_an_empty_answer(mode, env, tmp_path):
    out, done, judged = hostile_run(env, tmp_path, mode)
    assert done.returncode == 1, done.stdout + done.stderr  # incomplete, resumable
    assert "Traceback" not in done.stderr
    summary = results(out)
    assert summary["counts"]["answers"] == 0 and judged == 0  # nothing empty was judged
    failures = summary["request_failures"]
    assert len(failures) == 8  # the first turn of each question (turn 2 needs it)
    assert all(f["attempts"] == 2 for f in failures), failures


def test_a_key_echoed_by_the_server_is_redacted_everywhere(env, tmp_path):
    keyed = {**env, "HOSTILE_MODEL_KEY": KEY}
    out, done, _ = hostile_run(
        keyed, tmp_path, "echo-key", "--model-api-key-env", "HOSTILE_MODEL_KEY"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert KEY not in done.stdout + done.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    answers = of_kind(read_log(out), "answer")
    assert answers and all("***" in a["text"] for a in answers)
    assert json.loads((out / "results.json").read_text())["complete"]
