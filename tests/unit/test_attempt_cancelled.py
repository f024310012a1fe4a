"""An attempt cancelled while its request is on the wire counts as one that returned nothing:
the server may still answer it, and a provider may bill it (--max-cost's books)."""

from __future__ import annotations

import asyncio

import pytest

from turnbench.backends.attempts import gated
from turnbench.backends.openai_compat import OpenAICompatBackend
from turnbench.backends.retry import RetryPolicy
from turnbench.testing.fake_server import FakeServer, Reply
from turnbench.types import RequestParams


class RecordingGate:
    def __init__(self) -> None:
        self.unanswered_errors: list[str] = []

    def unanswered(self, messages, params, error: str) -> None:
        self.unanswered_errors.append(error)

    def retry(self, messages, params) -> str | None:
        return None


def _backend(base_url: str) -> OpenAICompatBackend:
    return OpenAICompatBackend(
        "openai/m", "m", base_url=base_url, api_key=None, concurrency=1, policy=RetryPolicy()
    )


async def _cancel_after_sent(server: FakeServer, gate: RecordingGate) -> None:
    backend = _backend(server.base_url)
    with gated(gate):
        task = asyncio.create_task(
            backend.complete([{"role": "user", "content": "hi"}], RequestParams(max_tokens=5))
        )
    for _ in range(500):  # until the server holds the request
        if server.requests:
            break
        await asyncio.sleep(0.01)
    assert server.requests, "the request never reached the server"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await backend.aclose()


def test_a_request_cancelled_on_the_wire_is_counted_unanswered():
    gate = RecordingGate()
    with FakeServer(responder=lambda request: Reply(content="late", delay=5.0)) as server:
        asyncio.run(_cancel_after_sent(server, gate))
    assert gate.unanswered_errors == ["cancelled while in flight"]


def test_a_finished_request_is_not_counted():
    gate = RecordingGate()

    async def scenario(server: FakeServer) -> None:
        backend = _backend(server.base_url)
        with gated(gate):
            done = await backend.complete(
                [{"role": "user", "content": "hi"}], RequestParams(max_tokens=5)
            )
        assert done.text == "ok"
        await backend.aclose()

    with FakeServer(responder=lambda request: Reply(content="ok")) as server:
        asyncio.run(scenario(server))
    assert gate.unanswered_errors == []
