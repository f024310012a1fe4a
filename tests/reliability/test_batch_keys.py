"""Issue 10 items 1-3 for provider batches, through the real CLI against the local batch fakes:
a key goes only where it belongs (the same rule as live requests), and a batch reply gets the
live path's checks (`content: null` is a failed item, never an empty answer; a key echoed
back by the server is redacted in everything turnbench writes)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.reliability.helpers import batch_flags
from turnbench.batch import batch_custom_id
from turnbench.record_keys import answer_key
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_batch import FakeOpenAIBatch
from turnbench.testing.fake_server import default_content

OPENAI_KEY = "sk-default-openai-0123456789"  # $OPENAI_API_KEY: must stay with OpenAI
ANTHROPIC_KEY = "sk-ant-default-0123456789"  # $ANTHROPIC_API_KEY: must stay with Anthropic
NAMED_KEY = "sk-named-variable-9876543210"
NAMED_ENV = "TB_NAMED_BATCH_KEY"
JUDGE = "openai/judge-model"
MODEL = "openai/model-under-test"
ANSWERS = "mt_bench/model_answer/alpaca-13b.jsonl"
PLANNED = 16  # MT-Bench --limit 1: 8 questions x 2 turns
BATCH_REQUESTS = ("file_upload", "file_content", "batch_create", "batch_get", "batch_list")


class EditedBatch(FakeOpenAIBatch):
    """The OpenAI batch fake with each line of its output and error files passed through
    `edit` (the line, and how many times its item has been finished before) when a batch
    finishes: how a test makes a provider reply with null content or echo a key."""

    def __init__(self, edit: Callable[[dict[str, Any], int], dict[str, Any]], **kwargs: Any):
        super().__init__(**kwargs)
        self.edit = edit
        self.finished: Counter[str] = Counter()

    def _finish(self, batch: dict[str, Any], status: str) -> None:
        super()._finish(batch, status)
        for name in ("output_file_id", "error_file_id"):
            file_id = batch.get(name)
            if not file_id:
                continue
            stored = self.files[file_id]
            lines = [json.loads(x) for x in stored["content"].decode().splitlines() if x.strip()]
            edited = []
            for line in lines:
                edited.append(self.edit(line, self.finished[line["custom_id"]]))
                self.finished[line["custom_id"]] += 1
            stored["content"] = "".join(json.dumps(x) + "\n" for x in edited).encode()


def judge_args(data_dir: Path, out: Path, *extra: str) -> list[str]:
    """`turnbench judge --judge-batch` on the reference answers (MT-Bench --limit 1)."""
    return [
        "judge",
        "--benchmark",
        "mt-bench",
        "--answers",
        str(data_dir / ANSWERS),
        "--judge",
        JUDGE,
        "--judge-batch",
        *batch_flags(out, *extra),
    ]


def model_batch_args(base_url: str, out: Path, *extra: str) -> list[str]:
    """`turnbench run` with answers and judgments in batches, both roles on `base_url` with
    the named key."""
    return [
        "run",
        "--benchmark",
        "mt-bench",
        "--model",
        MODEL,
        "--model-base-url",
        base_url,
        "--model-api-key-env",
        NAMED_ENV,
        "--model-batch",
        "--judge",
        JUDGE,
        "--judge-base-url",
        base_url,
        "--judge-api-key-env",
        NAMED_ENV,
        "--judge-batch",
        *batch_flags(out, *extra),
    ]


def log_records(out: Path) -> list[dict]:
    text = (out / "log.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text("utf-8"))


def batch_headers(fake: Any) -> list[dict[str, str]]:
    """The headers of every batch API request the fake received (uploads, creates, polls,
    downloads, lists)."""
    headers = [h for name in BATCH_REQUESTS for h in fake.headers_of(name)]
    assert headers, "no batch request reached the fake"
    return headers


# -- item 1: openai/... batches -------------------------------------------------------------
def test_the_default_openai_key_never_goes_to_another_batch_server(data_dir, env, tmp_path):
    """$OPENAI_API_KEY (and the OpenAI account headers) set, --judge-base-url elsewhere, no
    key named: uploads, creation, polls and downloads carry no Authorization header at all
    (not the OpenAI key, not a placeholder)."""
    out = tmp_path / "run"
    environ = {
        **env,
        "OPENAI_API_KEY": OPENAI_KEY,
        "OPENAI_ORG_ID": "org-of-the-openai-account",
        "OPENAI_PROJECT_ID": "proj_of_the_openai_account",
    }
    with FakeOpenAIBatch(api_key=None, responder=default_content) as fake:
        done = run_cli(judge_args(data_dir, out, "--judge-base-url", fake.base_url), environ)
        assert done.returncode == 0, done.stdout + done.stderr
        assert fake.batch_creates == 1 and fake.live_requests == 0
        for headers in batch_headers(fake):
            assert "authorization" not in headers, headers
            assert "openai-organization" not in headers and "openai-project" not in headers
        everything = json.dumps(fake.requests)
    assert OPENAI_KEY not in everything
    assert results(out)["complete"]


def test_the_default_key_goes_to_the_default_endpoint_in_batches(data_dir, env, tmp_path):
    """No --judge-base-url and $OPENAI_BASE_URL at the fake: that is the default endpoint,
    so it gets $OPENAI_API_KEY (as before)."""
    out = tmp_path / "run"
    with FakeOpenAIBatch(api_key=OPENAI_KEY, responder=default_content) as fake:
        environ = {**env, "OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": fake.base_url}
        done = run_cli(judge_args(data_dir, out), environ)
        assert done.returncode == 0, done.stdout + done.stderr
        assert fake.batch_creates == 1
        assert {h.get("authorization") for h in batch_headers(fake)} == {f"Bearer {OPENAI_KEY}"}
    assert results(out)["complete"]


def test_a_named_key_goes_to_any_batch_server(data_dir, env, tmp_path):
    out = tmp_path / "run"
    environ = {**env, "OPENAI_API_KEY": OPENAI_KEY, NAMED_ENV: NAMED_KEY}
    with FakeOpenAIBatch(api_key=NAMED_KEY, responder=default_content) as fake:
        args = judge_args(
            data_dir, out, "--judge-base-url", fake.base_url, "--judge-api-key-env", NAMED_ENV
        )
        done = run_cli(args, environ)
        assert done.returncode == 0, done.stdout + done.stderr
        assert {h.get("authorization") for h in batch_headers(fake)} == {f"Bearer {NAMED_KEY}"}
        assert OPENAI_KEY not in json.dumps(fake.requests)
    assert results(out)["complete"]


def test_a_batch_server_that_wants_a_key_says_how_to_name_one(data_dir, env, tmp_path):
    out = tmp_path / "run"
    environ = {**env, "OPENAI_API_KEY": OPENAI_KEY}
    with FakeOpenAIBatch(api_key=NAMED_KEY, responder=default_content) as fake:
        done = run_cli(judge_args(data_dir, out, "--judge-base-url", fake.base_url), environ)
        assert OPENAI_KEY not in json.dumps(fake.requests)
    assert done.returncode != 0
    assert "--judge-api-key-env" in done.stderr and "Traceback" not in done.stderr
    assert OPENAI_KEY not in done.stdout + done.stderr


# -- item 2: anthropic/... batches ----------------------------------------------------------
def anthropic_reply(body: dict) -> str:
    texts = [
        m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        for m in body.get("messages", [])
    ]
    return default_content({"messages": [{"content": text} for text in texts]})


def anthropic_key_of(headers: dict[str, str]) -> str | None:
    """The key a request carried, as FakeAnthropic reads it."""
    bearer = headers.get("authorization", "")
    return bearer.removeprefix("Bearer ") if bearer else headers.get("x-api-key")


def anthropic_judge_args(data_dir: Path, out: Path, *extra: str) -> list[str]:
    args = judge_args(data_dir, out, *extra)
    args[args.index(JUDGE)] = "anthropic/claude-judge"
    return args


def test_the_anthropic_key_never_goes_to_another_batch_server(data_dir, env, tmp_path):
    out = tmp_path / "run"
    environ = {**env, "ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY": OPENAI_KEY}
    with FakeAnthropic(api_key=None, responder=anthropic_reply, polls_to_end=0) as fake:
        args = anthropic_judge_args(data_dir, out, "--judge-base-url", fake.base_url)
        done = run_cli(args, environ)
        assert done.returncode == 0, done.stdout + done.stderr
        assert fake.batch_creates == 1
        batch = [h for name in ("batch_create", "batch_get", "batch_results") for h in
                 fake.headers_of(name)]  # fmt: skip
        assert batch and all("authorization" not in h and "x-api-key" not in h for h in batch), (
            batch
        )
        everything = json.dumps(fake.requests)
    assert ANTHROPIC_KEY not in everything and OPENAI_KEY not in everything
    assert results(out)["complete"]


def test_the_anthropic_key_goes_to_anthropic_base_url_in_batches(data_dir, env, tmp_path):
    out = tmp_path / "run"
    with FakeAnthropic(api_key=ANTHROPIC_KEY, responder=anthropic_reply, polls_to_end=0) as fake:
        environ = {**env, "ANTHROPIC_API_KEY": ANTHROPIC_KEY, "ANTHROPIC_BASE_URL": fake.base_url}
        done = run_cli(anthropic_judge_args(data_dir, out), environ)
        assert done.returncode == 0, done.stdout + done.stderr
        assert fake.batch_creates == 1
        batch = fake.headers_of("batch_create") + fake.headers_of("batch_results")
        assert {anthropic_key_of(h) for h in batch} == {ANTHROPIC_KEY}
    assert results(out)["complete"]


# -- item 3: the live path's reply checks on batch results -----------------------------------
def test_null_content_in_a_batch_result_is_a_failed_item_not_an_empty_answer(env, tmp_path):
    """Question 81 turn 1 comes back with `content: null` once (resubmitted, then answered);
    question 91 turn 1 every time (--max-attempts 2: recorded as a failure). No empty answer
    is recorded or judged, and the run is not complete."""
    out = tmp_path / "run"
    once = batch_custom_id(answer_key(MODEL, 81, 1))
    always = batch_custom_id(answer_key(MODEL, 91, 1))

    def null_content(line: dict[str, Any], finished_before: int) -> dict[str, Any]:
        if line["custom_id"] == always or (line["custom_id"] == once and not finished_before):
            line["response"]["body"]["choices"][0]["message"]["content"] = None
        return line

    with EditedBatch(null_content, api_key=NAMED_KEY, responder=default_content) as fake:
        args = model_batch_args(fake.base_url, out, "--max-attempts", "2")
        done = run_cli(args, {**env, NAMED_ENV: NAMED_KEY})
        assert done.returncode == 1, done.stdout + done.stderr
        assert fake.items_submitted[once] == 2 and fake.items_submitted[always] == 2
    records = log_records(out)
    answers = [r for r in records if r["kind"] == "answer"]
    assert answers and all(r["text"].strip() for r in answers), answers
    answered = {(r["sample_id"], r["turn"]) for r in answers}
    assert (81, 1) in answered and (91, 1) not in answered
    failures = [r for r in records if r["kind"] == "failure"]
    assert [(r["sample_id"], r["turn"]) for r in failures] == [(91, 1)]
    assert "null" in failures[0]["error"]
    judged = {(r["sample_id"], r["turn"]) for r in records if r["kind"] == "judgment"}
    assert (91, 1) not in judged and (81, 1) in judged
    summary = results(out)
    assert not summary["complete"] and len(summary["request_failures"]) == 1


def test_a_key_echoed_in_batch_results_never_reaches_the_run_directory(env, tmp_path):
    """The server repeats the key it was sent in answers, judge replies, the model field and
    an item's error message: log.jsonl, results.json and the terminal show *** instead."""
    out = tmp_path / "run"
    failed = batch_custom_id(answer_key(MODEL, 101, 2))

    def echo(body: dict) -> str:
        return f"{default_content(body)} (your key is {NAMED_KEY})"

    def echo_elsewhere(line: dict[str, Any], finished_before: int) -> dict[str, Any]:
        body = line["response"]["body"]
        if "choices" in body:
            body["model"] = f"model-{NAMED_KEY}"
        else:
            body["error"]["message"] = f"bad key {NAMED_KEY} for this item"
        return line

    with EditedBatch(echo_elsewhere, api_key=NAMED_KEY, responder=echo) as fake:
        fake.fail_ids = {failed}
        done = run_cli(model_batch_args(fake.base_url, out), {**env, NAMED_ENV: NAMED_KEY})
        assert done.returncode == 1, done.stdout + done.stderr  # the failed item
        assert fake.live_requests == 0
    log = (out / "log.jsonl").read_text("utf-8")
    assert NAMED_KEY not in log
    assert NAMED_KEY not in (out / "results.json").read_text("utf-8")
    assert NAMED_KEY not in done.stdout + done.stderr
    records = log_records(out)
    answers = [r for r in records if r["kind"] == "answer"]
    assert len(answers) == PLANNED - 1 and all("***" in r["text"] for r in answers)
    judgments = [r for r in records if r["kind"] == "judgment"]
    assert judgments and all(r.get("score") is not None for r in judgments)
    failure = next(r for r in records if r["kind"] == "failure")
    assert "bad key *** for this item" in failure["error"]
