"""OpenAI Batch API client against a fake Files + Batches server: submit, restart, resume."""

from __future__ import annotations

import asyncio
import json

import pytest

from turnbench.backends.factory import BackendOptions
from turnbench.backends.retry import RetryPolicy
from turnbench.batch import (
    BatchHandle,
    BatchItem,
    BatchItemError,
    BatchNotFinishedError,
    make_batch_client,
)
from turnbench.batch.openai_batch import OpenAIBatchClient, chat_fields, item_result
from turnbench.errors import FatalBackendError, UserError
from turnbench.specs import parse_spec
from turnbench.testing.fake_batch import FakeOpenAIBatch
from turnbench.testing.fake_http import Scripted
from turnbench.types import Completion, RequestParams

KEY = "sk-openai-batch-0123456789"
FAST = RetryPolicy(max_attempts=4, initial_wait=0.01, max_wait=0.05, request_timeout=10)
PARAMS = RequestParams(temperature=0.0, max_tokens=128)


def items(*ids: str, params: RequestParams = PARAMS) -> list[BatchItem]:
    return [
        BatchItem(
            custom_id=custom_id,
            messages=[
                {"role": "system", "content": "Judge."},
                {"role": "user", "content": custom_id},
            ],
            params=params,
        )
        for custom_id in ids
    ]


@pytest.fixture
def fake():
    with FakeOpenAIBatch(api_key=KEY) as server:
        yield server


def client_for(fake, model="gpt-4o-mini", key=KEY) -> OpenAIBatchClient:
    return OpenAIBatchClient(model, api_key=key, base_url=fake.base_url, policy=FAST)


async def submit(fake, batch_items, **kwargs) -> BatchHandle:
    client = client_for(fake, **kwargs)
    try:
        return await client.submit(batch_items)
    finally:
        await client.aclose()


async def wait_and_collect(fake, handle, **kwargs):
    """A fresh client, as after a restart: poll the stored handle until done, then results."""
    client = client_for(fake, **kwargs)
    states = []
    try:
        for _ in range(10):
            status = await client.poll(handle)
            states.append(status.state)
            if status.done:
                return states, status, await client.results(handle)
        raise AssertionError(f"batch never finished: {states}")
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    ("model", "params", "fields"),
    [
        ("gpt-4o-mini", PARAMS, {"n": 1, "temperature": 0.0, "max_tokens": 128}),
        ("o3-mini", PARAMS, {"n": 1, "max_completion_tokens": 128}),
        (
            "gpt-4o",
            RequestParams(top_logprobs=3, extra={"seed": 1}),
            {"n": 1, "logprobs": True, "top_logprobs": 3, "seed": 1},
        ),
    ],
)
def test_chat_fields(model, params, fields):
    assert chat_fields(model, params) == fields


def test_submit_restart_resume_and_results(fake):
    fake.fail_ids = {"c"}
    fake.drop_ids = {"d"}
    handle = asyncio.run(submit(fake, items("a", "b", "c", "d")))
    # the handle survives a restart as JSON; the first client is gone
    stored = json.loads(handle.model_dump_json())
    resumed = BatchHandle.model_validate(stored)
    states, status, results = asyncio.run(wait_and_collect(fake, resumed))

    assert states == ["in_progress", "finalizing", "completed"]
    assert status.counts.total == 4 and status.counts.succeeded == 2 and status.counts.failed == 1
    assert set(results) == {"a", "b", "c", "d"}
    for custom_id in ("a", "b"):
        completion = results[custom_id]
        assert isinstance(completion, Completion)
        assert completion.text.startswith("Batch answer")
        assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
        assert completion.usage.cached_prompt_tokens == completion.usage.prompt_tokens // 2
        assert completion.sent_params == {"n": 1, "temperature": 0.0, "max_tokens": 128}
        assert completion.reported_model == "gpt-4o-mini-2024-07-18"
    failed, missing = results["c"], results["d"]
    assert isinstance(failed, BatchItemError) and failed.kind == "errored"
    assert failed.status_code == 400 and not failed.retryable
    assert isinstance(missing, BatchItemError) and missing.kind == "missing" and missing.retryable

    # what was sent: one file, one batch, every item once
    assert fake.uploads == 1 and fake.batch_creates == 1
    assert fake.items_submitted == {"a": 1, "b": 1, "c": 1, "d": 1}
    [create] = fake.bodies("batch_create")
    assert create["endpoint"] == "/v1/chat/completions" and create["completion_window"] == "24h"
    assert create["input_file_id"] == handle.input_file_id
    lines = [json.loads(x) for x in fake.files[handle.input_file_id]["content"].splitlines()]
    assert lines[0] == {
        "custom_id": "a",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": "Judge."}, {"role": "user", "content": "a"}],
            "n": 1,
            "temperature": 0.0,
            "max_tokens": 128,
        },
    }

    # the engine resubmits only the retryable failures, in a new batch
    retry = [
        i
        for i in items("a", "b", "c", "d")
        if isinstance(results[i.custom_id], BatchItemError) and results[i.custom_id].retryable
    ]
    fake.drop_ids = set()
    again = asyncio.run(submit(fake, retry))
    _, _, second = asyncio.run(wait_and_collect(fake, again))
    assert isinstance(second["d"], Completion)
    assert fake.items_submitted == {"a": 1, "b": 1, "c": 1, "d": 2}
    assert fake.batch_creates == 2


def test_lost_creation_answer_adopts_the_batch_instead_of_creating_another(fake):
    fake.ambiguous_creates = 1
    handle = asyncio.run(submit(fake, items("a", "b")))
    assert fake.batch_creates == 1 and fake.counts["batch_list"] == 1
    assert handle.batch_id == "batch_0001"
    _, status, results = asyncio.run(wait_and_collect(fake, handle))
    assert status.state == "completed" and all(isinstance(r, Completion) for r in results.values())


def test_expired_batch_reports_unrun_items_as_retryable(fake):
    fake.expire = True
    handle = asyncio.run(submit(fake, items("a", "b")))
    _, status, results = asyncio.run(wait_and_collect(fake, handle))
    assert status.state == "expired"
    assert {r.kind for r in results.values()} == {"expired"}
    assert all(r.retryable for r in results.values())


def test_cancel_then_results(fake):
    async def scenario():
        client = client_for(fake)
        try:
            handle = await client.submit(items("a", "b"))
            with pytest.raises(BatchNotFinishedError):
                await client.results(handle)
            cancelling = await client.cancel(handle)
            final = await client.poll(handle)
            return cancelling, final, await client.results(handle)
        finally:
            await client.aclose()

    cancelling, final, results = asyncio.run(scenario())
    assert cancelling.state == "cancelling" and not cancelling.done
    assert final.state == "cancelled" and final.done
    assert {r.kind for r in results.values()} == {"cancelled"}


def test_transient_poll_failure_is_retried(fake):
    handle = asyncio.run(submit(fake, items("a")))
    fake.script.append(Scripted(503, {"error": {"message": "busy"}}, path_contains="/batches/"))
    _, status, _ = asyncio.run(wait_and_collect(fake, handle))
    assert status.done and fake.script == []


def test_logprobs_are_requested_and_mapped(fake):
    handle = asyncio.run(submit(fake, items("a", params=RequestParams(top_logprobs=2))))
    _, _, results = asyncio.run(wait_and_collect(fake, handle))
    [token] = results["a"].logprobs
    assert token.token == "Batch" and [t.token for t in token.top] == ["Batch", "Other"]


def test_wrong_key_is_fatal_and_not_shown(fake):
    with pytest.raises(FatalBackendError) as caught:
        asyncio.run(submit(fake, items("a"), key="sk-wrong-0000111122"))
    assert "401" in caught.value.message and "sk-wrong-0000111122" not in caught.value.message
    assert fake.batch_creates == 0


def test_bad_items_refused_before_sending(fake):
    with pytest.raises(ValueError, match="twice"):
        asyncio.run(submit(fake, items("a", "a")))
    with pytest.raises(ValueError, match="at least one"):
        asyncio.run(submit(fake, []))
    assert fake.uploads == 0


def test_handle_from_another_endpoint_is_refused(fake):
    handle = asyncio.run(submit(fake, items("a")))
    other = handle.model_copy(update={"endpoint": "https://api.openai.com/v1"})
    with pytest.raises(UserError, match="belongs to"):
        asyncio.run(wait_and_collect(fake, other))


def test_result_lines_mapping():
    handle = BatchHandle(
        provider="openai",
        model="m",
        endpoint="e",
        batch_id="b",
        custom_ids={"x": 0},
        sent_params=[{"n": 1}],
    )
    rate_limited = {
        "custom_id": "x",
        "response": {"status_code": 429, "body": {"error": {"message": "slow"}}},
        "error": None,
    }
    result = item_result(rate_limited, handle)
    assert isinstance(result, BatchItemError) and result.retryable and result.status_code == 429
    no_choices = {"custom_id": "x", "response": {"status_code": 200, "body": {"choices": []}}}
    assert item_result(no_choices, handle).kind == "errored"


def test_factory(fake, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        make_batch_client(parse_spec("openai/gpt-4o-mini"), BackendOptions())
    with pytest.raises(UserError, match="batch mode"):
        make_batch_client(parse_spec("local/smollm2"), BackendOptions())
    monkeypatch.setenv("MY_KEY", KEY)
    client = make_batch_client(
        parse_spec("openai/gpt-4o-mini"),
        BackendOptions(base_urls=(fake.base_url,), api_key_env="MY_KEY"),
    )
    assert client.endpoint == fake.base_url

    async def scenario():
        try:
            return await client.submit(items("a"))
        finally:
            await client.aclose()

    handle = asyncio.run(scenario())
    assert handle.endpoint == fake.base_url and fake.batch_creates == 1
