"""Provider batches in the engine, in-process: which logged batches still hold unfinished
work, finding a batch whose creation outcome was lost, and a creation that may or may not
have happened stopping the run instead of paying twice."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web

from turnbench.backends.retry import RetryPolicy
from turnbench.batch import BatchIntent, BatchItem, BatchSubmitUncertainError, batch_custom_id
from turnbench.batch.anthropic_batch import AnthropicBatchClient
from turnbench.batch.openai_batch import OpenAIBatchClient
from turnbench.engine.batching import BatchQueue
from turnbench.errors import FatalBackendError
from turnbench.journal.logindex import LogIndex
from turnbench.journal.runlog import RunLog
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_batch import FakeOpenAIBatch
from turnbench.types import (
    AnswerRecord,
    BatchRecord,
    ConfigRecord,
    FailureRecord,
    RequestParams,
)

KEY = "sk-batch-unit-0123456789"
FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.02, request_timeout=10)
PARAMS = RequestParams(temperature=0.0, max_tokens=64)


def intent(*keys: str, provider: str = "openai") -> dict:
    return {
        "provider": provider,
        "model": "m",
        "endpoint": "http://127.0.0.1:1/v1",
        "custom_ids": {batch_custom_id(k): 0 for k in keys},
        "sent_params": [{}],
    }


def batch_record(event: str, submission: str, **fields) -> BatchRecord:
    return BatchRecord(event=event, submission=submission, role="model", stage="answers", **fields)


def answer(key: str) -> AnswerRecord:
    return AnswerRecord(key=key, model="m", sample_id=1, turn=1, text="t")


def test_a_submission_stays_open_until_each_item_is_logged():
    index = LogIndex()
    for record in [
        ConfigRecord(turnbench_version="t", config={}),
        batch_record("creating", "s1", batch=intent('["answer","m",1,1]', "b", "c")),
        batch_record("created", "s1", batch_id="batch_1"),
    ]:
        index.add(record)
    assert set(index.open_submissions("model")) == {"s1"}
    assert index.open_submissions("openai/judge") == {}
    # an answer logged for an item consumes it (its key built from its fields)
    index.add(answer('["answer","m",1,1]'))
    # a failure the provider reported consumes it; a failure to read the batch does not
    index.add(FailureRecord(key="b", stage="answer", error="400", meta={"batch": "batch_1"}))
    index.add(FailureRecord(key="c", stage="answer", error="could not read the batch"))
    assert index.batch_items == {batch_custom_id("c"): "s1"}
    assert index.open_submissions("model")["s1"].batch_id == "batch_1"
    # a newer submission of the item takes over
    index.add(batch_record("creating", "s2", batch=intent("c")))
    assert set(index.open_submissions("model")) == {"s2"}
    assert index.open_submissions("model")["s2"].batch_id is None  # not created yet


def _items(*ids: str) -> list[BatchItem]:
    return [
        BatchItem(custom_id=i, messages=[{"role": "user", "content": i}], params=PARAMS)
        for i in ids
    ]


def test_openai_finds_the_batch_of_a_lost_creation_by_its_token():
    async def scenario(fake: FakeOpenAIBatch) -> None:
        client = OpenAIBatchClient("m", api_key=KEY, base_url=fake.base_url, policy=FAST)
        seen: list[BatchIntent] = []

        async def keep(found: BatchIntent) -> None:
            seen.append(found)

        try:
            handle = await client.submit(_items("a", "b"), on_intent=keep)
            [logged] = seen
            assert logged.token and logged.input_file_id == handle.input_file_id
            found = await client.find(logged)
            assert found is not None and found.batch_id == handle.batch_id
            assert found.custom_ids == handle.custom_ids
            stranger = logged.model_copy(update={"token": "no-such-token"})
            assert await client.find(stranger) is None
        finally:
            await client.aclose()

    with FakeOpenAIBatch(api_key=KEY) as fake:
        asyncio.run(scenario(fake))
        assert fake.batch_creates == 1


def test_anthropic_finds_a_batch_by_time_and_size_and_refuses_to_guess():
    async def scenario(fake: FakeAnthropic) -> None:
        client = AnthropicBatchClient("m", api_key=KEY, base_url=fake.base_url, policy=FAST)
        seen: list[BatchIntent] = []

        async def keep(found: BatchIntent) -> None:
            seen.append(found)

        try:
            first = await client.submit(_items("a", "b"), on_intent=keep)
            found = await client.find(seen[0])
            assert found is not None and found.batch_id == first.batch_id
            other_size = seen[0].model_copy(update={"custom_ids": {"x": 0}})
            assert await client.find(other_size) is None
            await client.submit(_items("c", "d"))  # another batch of the same size
            with pytest.raises(BatchSubmitUncertainError, match="cannot tell which"):
                await client.find(seen[0])
            later = seen[0].model_copy(update={"started_at": time.time() + 3600})
            assert await client.find(later) is None  # created before the intent: not ours
        finally:
            await client.aclose()

    with FakeAnthropic(api_key=KEY) as fake:
        asyncio.run(scenario(fake))


class LosingAnthropic(FakeAnthropic):
    """Creates a batch, then answers HTTP 500 (`lose` times), as when a response is lost."""

    lose = 0

    async def _create_batch(self, request: web.Request) -> web.Response:
        response = await super()._create_batch(request)
        if self.lose:
            self.lose -= 1
            body = {"type": "error", "error": {"type": "api_error", "message": "internal"}}
            return web.json_response(body, status=500)
        return response


def test_an_uncertain_creation_stops_the_run_and_the_next_run_adopts_the_batch(tmp_path):

    async def first(fake: FakeAnthropic, log: RunLog) -> None:
        client = AnthropicBatchClient("m", api_key=KEY, base_url=fake.base_url, policy=FAST)
        queue = BatchQueue(
            client, log, role="model", stage="answers", poll_interval=0.01, max_attempts=3
        )
        try:
            with pytest.raises(FatalBackendError, match="looks the batch up"):
                await queue.request("k1", [{"role": "user", "content": "q"}], PARAMS)
        finally:
            await queue.aclose()

    async def second(fake: FakeAnthropic, log: RunLog) -> str:
        client = AnthropicBatchClient("m", api_key=KEY, base_url=fake.base_url, policy=FAST)
        queue = BatchQueue(
            client, log, role="model", stage="answers", poll_interval=0.01, max_attempts=3
        )
        try:
            completion, batch_id = await queue.request(
                "k1", [{"role": "user", "content": "q"}], PARAMS
            )
            assert completion.text  # the adopted batch's result
            return batch_id
        finally:
            await queue.aclose()

    with LosingAnthropic(api_key=KEY, polls_to_end=1) as fake:
        fake.lose = 1  # the provider creates the batch, but its answer is lost (HTTP 500)
        with RunLog(tmp_path / "run") as log:
            log.append(ConfigRecord(turnbench_version="t", config={}))
            asyncio.run(first(fake, log))
        assert fake.batch_creates == 1
        events = [r.event for r in RunLog(tmp_path / "run").records if r.kind == "batch"]
        assert events == ["creating"]
        with RunLog(tmp_path / "run") as log:
            batch_id = asyncio.run(second(fake, log))
        assert batch_id == "msgbatch_0001" and fake.batch_creates == 1
        assert fake.counts["batch_list"] == 1
