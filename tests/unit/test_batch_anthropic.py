"""Anthropic Message Batches client against a fake API: submit, restart, resume, results."""

from __future__ import annotations

import asyncio
import json

import pytest

from turnbench.backends.anthropic_native import CACHE_MIN_CHARS, build_request
from turnbench.backends.factory import BackendOptions
from turnbench.backends.retry import RetryPolicy
from turnbench.batch import (
    BatchHandle,
    BatchItem,
    BatchItemError,
    BatchSubmitUncertainError,
    batch_custom_id,
    make_batch_client,
)
from turnbench.batch.anthropic_batch import AnthropicBatchClient, item_result, valid_custom_id
from turnbench.errors import FatalBackendError, RequestFailedError
from turnbench.specs import parse_spec
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_http import Scripted
from turnbench.types import Completion, RequestParams

KEY = "sk-ant-batch-0123456789"
FAST = RetryPolicy(max_attempts=4, initial_wait=0.01, max_wait=0.05, request_timeout=10)
JUDGE = "Please act as an impartial judge. " * (CACHE_MIN_CHARS // 30)
PARAMS = RequestParams(temperature=0.0, max_tokens=256)


def items(*ids: str) -> list[BatchItem]:
    return [
        BatchItem(
            custom_id=custom_id,
            messages=[{"role": "system", "content": JUDGE}, {"role": "user", "content": custom_id}],
            params=PARAMS,
        )
        for custom_id in ids
    ]


@pytest.fixture
def fake():
    with FakeAnthropic(api_key=KEY, polls_to_end=2) as server:
        yield server


def client_for(fake, key=KEY, policy=FAST) -> AnthropicBatchClient:
    return AnthropicBatchClient("claude-test", api_key=key, base_url=fake.base_url, policy=policy)


async def submit(fake, batch_items, **kwargs) -> BatchHandle:
    client = client_for(fake, **kwargs)
    try:
        return await client.submit(batch_items)
    finally:
        await client.aclose()


async def wait_and_collect(fake, handle):
    client = client_for(fake)
    states = []
    try:
        for _ in range(10):
            status = await client.poll(handle)
            states.append(status.state)
            if status.done:
                return states, status, await client.results(handle)
        raise AssertionError(f"batch never ended: {states}")
    finally:
        await client.aclose()


def test_submit_restart_resume_and_results(fake):
    fake.fail_ids = {"c"}
    fake.drop_ids = {"d"}
    handle = asyncio.run(submit(fake, items("a", "b", "c", "d")))
    resumed = BatchHandle.model_validate_json(handle.model_dump_json())  # after a restart
    states, status, results = asyncio.run(wait_and_collect(fake, resumed))

    assert states == ["in_progress", "in_progress", "ended"]
    assert status.provider_status == "ended" and status.done
    assert (status.counts.succeeded, status.counts.failed, status.counts.total) == (2, 1, 3)
    [create] = fake.bodies("batch_create")
    first = create["requests"][0]
    assert first["custom_id"] == "a"
    assert first["params"] == build_request("claude-test", items("a")[0].messages, PARAMS)
    assert first["params"]["system"][0]["cache_control"] == {"type": "ephemeral"}

    assert set(results) == {"a", "b", "c", "d"}
    a = results["a"]
    assert isinstance(a, Completion) and a.text.startswith("Claude ")
    assert a.finish_reason == "stop"
    assert a.sent_params == {"max_tokens": 256, "temperature": 0.0}
    assert a.usage.completion_tokens > 0
    # the shared judge instructions: written to the cache once, read by the other item
    usages = sorted((results[x].usage for x in ("a", "b")), key=lambda u: u.cached_prompt_tokens)
    assert usages[0].cache_creation_tokens == len(JUDGE) // 4
    assert usages[1].cached_prompt_tokens == len(JUDGE) // 4
    assert all(u.prompt_tokens > len(JUDGE) // 4 for u in usages)
    c, d = results["c"], results["d"]
    assert isinstance(c, BatchItemError) and c.kind == "errored" and not c.retryable
    assert "invalid_request_error" in c.message
    assert isinstance(d, BatchItemError) and d.kind == "missing" and d.retryable
    assert fake.batch_creates == 1
    assert fake.items_submitted == {"a": 1, "b": 1, "c": 1, "d": 1}


def test_overloaded_creation_is_retried_once_accepted(fake):
    busy = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    fake.script.append(Scripted(529, busy, path_contains="/batches"))
    handle = asyncio.run(submit(fake, items("a")))
    assert handle.batch_id == "msgbatch_0001"
    assert fake.counts["batch_create"] == 2 and fake.batch_creates == 1


def test_uncertain_creation_is_not_retried(fake):
    broken = {"type": "error", "error": {"type": "api_error", "message": "internal"}}
    fake.script.append(Scripted(500, broken, path_contains="/batches"))
    with pytest.raises(BatchSubmitUncertainError, match="not retried"):
        asyncio.run(submit(fake, items("a")))
    assert fake.counts["batch_create"] == 1


def test_connection_refused_is_retried_then_gives_up():
    client = AnthropicBatchClient(
        "claude-test",
        api_key=KEY,
        base_url="http://127.0.0.1:9",
        policy=RetryPolicy(max_attempts=2, initial_wait=0.01, max_wait=0.02, request_timeout=5),
    )

    async def scenario():
        try:
            await client.submit(items("a"))
        finally:
            await client.aclose()

    with pytest.raises(RequestFailedError, match="gave up after 2 attempts"):
        asyncio.run(scenario())


def test_cancel_reports_unrun_items_as_cancelled(fake):
    async def scenario():
        client = client_for(fake)
        try:
            handle = await client.submit(items("a", "b"))
            cancelling = await client.cancel(handle)
            final = await client.poll(handle)
            return cancelling, final, await client.results(handle)
        finally:
            await client.aclose()

    cancelling, final, results = asyncio.run(scenario())
    assert cancelling.state == "cancelling" and cancelling.provider_status == "canceling"
    assert final.state == "ended" and final.counts.cancelled == 2
    assert {r.kind for r in results.values()} == {"cancelled"}
    assert all(r.retryable for r in results.values())


def test_expired_items_are_retryable(fake):
    fake.expire = True
    handle = asyncio.run(submit(fake, items("a")))
    _, status, results = asyncio.run(wait_and_collect(fake, handle))
    assert status.counts.expired == 1
    assert results["a"].kind == "expired" and results["a"].retryable


def test_results_url_on_another_host_is_refused(fake):
    fake.results_origin = "http://127.0.0.2:1"
    handle = asyncio.run(submit(fake, items("a")))
    with pytest.raises(RequestFailedError, match="another host"):
        asyncio.run(wait_and_collect(fake, handle))
    assert fake.counts["batch_results"] == 0


def test_wrong_key_is_fatal(fake):
    with pytest.raises(FatalBackendError) as caught:
        asyncio.run(submit(fake, items("a"), key="sk-ant-wrong-55556666"))
    assert "sk-ant-wrong-55556666" not in caught.value.message
    assert fake.batch_creates == 0


@pytest.mark.parametrize(
    ("custom_id", "valid"),
    [
        ("a", True),
        ("A-b_9", True),
        ("x" * 64, True),
        ("x" * 65, False),
        ("", False),
        ("mt:81:1", False),
        ("é", False),
    ],
)
def test_custom_ids(custom_id, valid):
    assert valid_custom_id(custom_id) is valid


def test_engine_keys_become_valid_custom_ids(fake):
    key = "mt_bench/judge:gpt-4/81/turn 2"
    custom_id = batch_custom_id(key)
    assert valid_custom_id(custom_id) and custom_id == batch_custom_id(key)
    assert custom_id != batch_custom_id(key + "x")
    with pytest.raises(ValueError, match="not accepted"):
        asyncio.run(submit(fake, items(key)))
    assert fake.counts["batch_create"] == 0


def test_result_line_mapping():
    handle = BatchHandle(
        provider="anthropic",
        model="m",
        endpoint="e",
        batch_id="b",
        custom_ids={"x": 0},
        sent_params=[{}],
    )
    overloaded = {
        "custom_id": "x",
        "result": {
            "type": "errored",
            "error": {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
        },
    }
    result = item_result(overloaded, handle)
    assert isinstance(result, BatchItemError) and result.retryable
    assert item_result({"custom_id": "x", "result": {"type": "odd"}}, handle).kind == "errored"


def test_factory_uses_the_anthropic_key(fake, monkeypatch):
    """The default key goes to the default endpoint ($ANTHROPIC_BASE_URL, here the fake)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    client = make_batch_client(
        parse_spec("anthropic/claude-test"), BackendOptions(base_urls=(fake.base_url,))
    )

    async def scenario():
        try:
            return await client.submit(items("a"))
        finally:
            await client.aclose()

    handle = asyncio.run(scenario())
    assert json.loads(handle.model_dump_json())["provider"] == "anthropic"
    assert fake.batch_creates == 1
