"""Provider batches end to end (`--judge-batch`, `--model-batch`) through the real CLI against
the local fakes of OpenAI's Batch API and Anthropic's Message Batches: submit, a process
killed with SIGKILL after the batch was created, a resume that polls the same batch, and
counts of what the fakes received proving that nothing was submitted twice."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.conftest import assert_log_keys, run_cli
from tests.reliability.helpers import batch_flags, start_cli, wait_until
from turnbench.batch import batch_custom_id
from turnbench.record_keys import answer_key, judgment_key
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_batch import FakeOpenAIBatch
from turnbench.testing.fake_server import default_content

KEY = "sk-batch-test-0123456789"
KEY_ENV = "TB_BATCH_KEY"
JUDGE = "openai/judge-model"
MODEL = "openai/model-under-test"
ANSWERS = "mt_bench/model_answer/alpaca-13b.jsonl"
PLANNED = 16  # MT-Bench --limit 1: 8 questions x 2 turns


def reply(body: dict) -> str:
    """What the fakes answer: ratings for judge prompts, answers otherwise (as the live fake)."""
    return default_content(body)


def anthropic_reply(body: dict) -> str:
    """The same replies for the Messages format (content as text or as blocks)."""
    texts = [
        m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        for m in body.get("messages", [])
    ]
    return default_content({"messages": [{"content": text} for text in texts]})


@pytest.fixture
def batch_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, KEY_ENV: KEY}


def judge_args(data_dir: Path, base_url: str, out: Path, *extra: str) -> list[str]:
    return [
        "judge",
        "--benchmark",
        "mt-bench",
        "--answers",
        str(data_dir / ANSWERS),
        "--judge",
        JUDGE,
        "--judge-base-url",
        base_url,
        "--judge-api-key-env",
        KEY_ENV,
        "--judge-batch",
        *batch_flags(out, *extra),
    ]


def log_records(out: Path) -> list[dict]:
    path = out / "log.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def batch_events(out: Path) -> list[str]:
    return [r["event"] for r in log_records(out) if r["kind"] == "batch"]


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text("utf-8"))


def test_judge_batch_killed_after_creation_resumes_by_polling_the_same_batch(
    data_dir, batch_env, tmp_path
):
    out = tmp_path / "run"
    with FakeOpenAIBatch(api_key=KEY, polls_per_state=10**9, responder=reply) as fake:
        args = judge_args(data_dir, fake.base_url, out)
        process = start_cli(args, batch_env)
        try:
            # the batch exists at the provider and its id is in the log: kill the process
            wait_until(
                lambda: "created" in batch_events(out) and fake.counts["batch_get"] >= 2,
                what="the batch to be created and polled",
                state=lambda: (batch_events(out), process.poll()),
            )
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == -signal.SIGKILL
        assert fake.batch_creates == 1 and fake.uploads == 1
        assert batch_events(out) == ["creating", "created"]
        assert not [r for r in log_records(out) if r["kind"] == "judgment"]  # nothing done yet

        fake.polls_per_state = 1  # the provider finishes the batch meanwhile
        done = run_cli(args, batch_env)
        assert done.returncode == 0, done.stdout + done.stderr

        # the resume polled the same batch and sent nothing again
        assert fake.batch_creates == 1 and fake.uploads == 1
        assert len(fake.items_submitted) == PLANNED
        assert set(fake.items_submitted.values()) == {1}
        assert fake.live_requests == 0
    records = log_records(out)
    judgments = [r for r in records if r["kind"] == "judgment"]
    assert len(judgments) == PLANNED
    assert {r["batch_id"] for r in judgments} == {"batch_0001"}
    assert all(r["batch_usage"] == r["usage"] for r in judgments)
    assert batch_events(out) == ["creating", "created", "ended"]
    assert_log_keys(out / "log.jsonl")  # batch steps and both config records carry keys
    created = next(r for r in records if r.get("event") == "creating")
    assert created["batch"]["input_file_id"] and created["batch"]["token"]
    summary = results(out)
    assert summary["complete"] and summary["models"]["alpaca-13b"]["counts"]["judged"] == PLANNED
    usage = summary["usage"]["judge"]
    assert usage["batch_prompt_tokens"] == usage["prompt_tokens"] > 0
    assert summary["batches"] == [
        {
            "batch_id": "batch_0001",
            "provider": "openai",
            "role": JUDGE,
            "stage": "judgments",
            "items": PLANNED,
            "state": "completed",
            "counts": {
                "total": PLANNED,
                "processing": 0,
                "succeeded": PLANNED,
                "failed": 0,
                "cancelled": 0,
                "expired": 0,
            },
        }
    ]
    # a third run has nothing left to do and asks the provider nothing
    with FakeOpenAIBatch(api_key=KEY, responder=reply) as idle:
        again = run_cli(judge_args(data_dir, idle.base_url, out), batch_env)
        assert again.returncode == 0, again.stderr
        assert idle.batch_creates == 0 and idle.counts["batch_get"] == 0


def test_killed_while_the_provider_was_creating_the_batch_adopts_it(data_dir, batch_env, tmp_path):
    """The process dies after asking for the batch and before logging its id: the resume
    finds the batch by the token it logged first, instead of paying for a second one."""
    out = tmp_path / "run"
    with FakeOpenAIBatch(api_key=KEY, polls_per_state=10**9, responder=reply) as fake:
        args = judge_args(data_dir, fake.base_url, out)
        process = start_cli(args, batch_env)
        try:
            wait_until(
                lambda: "created" in batch_events(out),
                what="the batch to be created",
                state=lambda: (batch_events(out), process.poll()),
            )
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        # as if the kill had come a moment earlier: the batch id never reached the log
        lines = (out / "log.jsonl").read_text("utf-8").splitlines(keepends=True)
        kept = [line for line in lines if '"event":"created"' not in line]
        (out / "log.jsonl").write_text("".join(kept), "utf-8")
        assert batch_events(out) == ["creating"]

        fake.polls_per_state = 1
        done = run_cli(args, batch_env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert fake.batch_creates == 1 and set(fake.items_submitted.values()) == {1}
        assert fake.counts["batch_list"] >= 1  # it looked the batch up
    assert batch_events(out) == ["creating", "created", "ended"]
    assert results(out)["complete"]


def test_failed_and_missing_items_are_resubmitted_and_reasks_go_live(data_dir, batch_env, tmp_path):
    out = tmp_path / "run"
    dropped = batch_custom_id(judgment_key(JUDGE, "alpaca-13b", 81, 1))
    failed = batch_custom_id(judgment_key(JUDGE, "alpaca-13b", 91, 2))

    def unreadable_first(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if len(body["messages"]) == 2 and "Elon Musk" in prompt:
            return "I would rather not give a number."
        return reply(body)

    with FakeOpenAIBatch(api_key=KEY, responder=unreadable_first) as fake:
        fake.drop_ids = {dropped}  # the provider never reports this item, in any batch
        fake.fail_ids = {failed}  # answered with HTTP 400 inside the batch
        args = judge_args(data_dir, fake.base_url, out, "--max-attempts", "2")
        done = run_cli(args, batch_env)
        assert done.returncode == 1, done.stdout + done.stderr
        # the missing item went into a second batch (and no third: --max-attempts 2); the
        # failed one was not resent (a 400 would fail again); everything else was sent once
        assert fake.batch_creates == 2
        assert fake.items_submitted[dropped] == 2
        assert all(n == 1 for cid, n in fake.items_submitted.items() if cid != dropped)
        # question 91 turn 1's first reply was unreadable: its re-ask went live
        assert fake.live_requests >= 1
        summary = results(out)
        assert not summary["complete"] and len(summary["request_failures"]) == 2
        failures = {r["sample_id"]: r for r in log_records(out) if r["kind"] == "failure"}
        assert failures[91]["meta"]["batch"] == "batch_0001" and "400" in failures[91]["error"]
        assert failures[81]["meta"]["batch"] == "batch_0002" and "missing" in failures[81]["error"]
        reasked = next(
            r
            for r in log_records(out)
            if r["kind"] == "judgment" and r["sample_id"] == 91 and r["turn"] == 1
        )
        assert len(reasked["outputs"]) == 2 and reasked["batch_id"] == "batch_0001"
        assert reasked["usage"]["prompt_tokens"] > reasked["batch_usage"]["prompt_tokens"]

        # the next run sends both afresh in one batch (the provider's verdicts were used)
        fake.fail_ids = set()
        fake.drop_ids = set()
        again = run_cli(args, batch_env)
        assert again.returncode == 0, again.stdout + again.stderr
        assert fake.batch_creates == 3
        assert fake.items_submitted[failed] == 2 and fake.items_submitted[dropped] == 3
    assert results(out)["complete"]


def test_model_batch_sends_one_batch_per_turn_round(data_dir, batch_env, tmp_path):
    """MT-Bench's second turn is built on the model's own first answer: answers go in two
    batches (turn 1, then turn 2), judgments in batches of their own."""
    out = tmp_path / "run"
    with FakeOpenAIBatch(api_key=KEY, responder=reply) as fake:
        args = [
            "run",
            "--benchmark",
            "mt-bench",
            "--model",
            MODEL,
            "--model-base-url",
            fake.base_url,
            "--model-api-key-env",
            KEY_ENV,
            "--model-batch",
            "--judge",
            JUDGE,
            "--judge-base-url",
            fake.base_url,
            "--judge-api-key-env",
            KEY_ENV,
            "--judge-batch",
            "--batch-poll-interval",
            "0.05",
            "--out",
            str(out),
            "--limit",
            "1",
            "--no-progress",
        ]
        done = run_cli(args, batch_env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert set(fake.items_submitted.values()) == {1}
        assert len(fake.items_submitted) == 2 * PLANNED
        assert fake.live_requests == 0
    records = log_records(out)
    created = [r for r in records if r["kind"] == "batch" and r["event"] == "creating"]
    answer_batches = [r for r in created if r["stage"] == "answers"]
    assert len(answer_batches) == 2
    first_round = {answer_key(MODEL, q, 1) for q in range(81, 161, 10)}
    assert set(answer_batches[0]["batch"]["custom_ids"]) == {
        batch_custom_id(k) for k in first_round
    }
    answers = [r for r in records if r["kind"] == "answer"]
    assert len(answers) == PLANNED and all(r["batch_id"] for r in answers)
    assert results(out)["complete"]


def test_anthropic_judge_batch_killed_and_resumed(data_dir, batch_env, tmp_path):
    out = tmp_path / "run"
    with FakeAnthropic(api_key=KEY, responder=anthropic_reply, polls_to_end=10**9) as fake:
        args = [
            *judge_args(data_dir, fake.base_url, out)[:5],
            "--judge",
            "anthropic/claude-judge",
            "--judge-base-url",
            fake.base_url,
            "--judge-api-key-env",
            KEY_ENV,
            "--judge-batch",
            "--batch-poll-interval",
            "0.05",
            "--out",
            str(out),
            "--limit",
            "1",
            "--no-progress",
        ]
        process = start_cli(args, batch_env)
        try:
            wait_until(
                lambda: "created" in batch_events(out),
                what="the batch to be created",
                state=lambda: (batch_events(out), process.poll()),
            )
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        assert fake.batch_creates == 1
        fake.polls_to_end = 0
        done = run_cli(args, batch_env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert fake.batch_creates == 1 and set(fake.items_submitted.values()) == {1}
        assert len(fake.items_submitted) == PLANNED
    judgments = [r for r in log_records(out) if r["kind"] == "judgment"]
    assert len(judgments) == PLANNED and {r["batch_id"] for r in judgments} == {"msgbatch_0001"}
