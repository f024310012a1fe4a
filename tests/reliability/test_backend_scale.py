"""Issue 14 at the backend level: replicas share the work and survive one going down;
--concurrency auto finishes near the rate limit's floor without failed items."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path

from turnbench.backends.keys import EndpointKey
from turnbench.backends.openai_compat import OpenAICompatBackend
from turnbench.backends.retry import RetryPolicy
from turnbench.errors import RequestFailedError
from turnbench.testing.fake_server import FakeServer, Reply, spawn
from turnbench.types import RequestParams

PARAMS = RequestParams(temperature=0.0, max_tokens=64)
POLICY = RetryPolicy(max_attempts=10, initial_wait=0.01, max_wait=0.1, request_timeout=5)


def messages(index: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Question {index}: rate it. Rating: [[5]]"}]


async def burst(backend: OpenAICompatBackend, count: int, offset: int = 0) -> int:
    """`count` requests at once; how many failed after their retries."""

    async def one(index: int) -> bool:
        try:
            await backend.complete(messages(offset + index), PARAMS)  # type: ignore[arg-type]
        except RequestFailedError:
            return False
        return True

    return sum(1 for ok in await asyncio.gather(*(one(i) for i in range(count))) if not ok)


def test_replicas_share_the_load_and_a_dead_one_is_set_aside_then_returns():
    first, second = FakeServer(latency=0.02).start(), FakeServer(latency=0.02).start()
    port = second.port
    backend = OpenAICompatBackend(
        "openai/judge-model",
        "judge-model",
        endpoints=[EndpointKey(first.base_url), EndpointKey(second.base_url)],
        concurrency=4,
        policy=POLICY,
        role="judge",
        cooldown=0.3,
    )
    a, b = backend.pool.endpoints
    revived = None
    try:

        async def scenario() -> None:
            nonlocal revived
            # 1. both up: the work is spread
            assert await burst(backend, 40) == 0
            assert a.requests >= 15 and b.requests >= 15, (a.requests, b.requests)
            # 2. the second goes down: everything still succeeds, on the first
            second.stop()
            before_a = a.requests
            assert await burst(backend, 40, offset=100) == 0
            assert b.failures >= 3 and b.times_set_aside >= 1
            assert a.requests - before_a >= 40
            # 3. it comes back: after its cool-down it takes work again
            revived = FakeServer(latency=0.02).start(port=port)
            await asyncio.sleep(max(0.0, b.cool_until - time.monotonic()) + 0.05)
            before_b = b.requests
            assert await burst(backend, 40, offset=200) == 0
            assert b.requests - before_b >= 10, b.requests - before_b
            await backend.aclose()

        asyncio.run(scenario())
    finally:
        first.stop()
        if revived is not None:
            revived.stop()
    summary = backend.endpoints_summary()
    assert [s["url"] for s in summary] == [first.base_url, second.base_url]
    assert summary[0]["requests"] == a.requests and summary[1]["failures"] == b.failures
    assert sum(s["requests"] for s in summary) == backend.stats.requests


def server_counts(base_url: str) -> dict[str, int]:
    with urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + "/stats", timeout=10) as reply:
        return json.loads(reply.read())["counts"]


def test_auto_concurrency_finishes_near_the_rate_limit_without_failures(tmp_path: Path):
    """R = 40 requests/s (bursts of 5), N = 240: the floor is N/R = 6 s. Auto must finish
    within 1.25 x that, every item answered, with fewer refusals than requests."""
    rate, count = 40, 240
    server, base_url = spawn(
        0.1, tmp_path, "--rate-limit", str(rate), "--rate-burst", "5", "--fixed-reply", "[[5]]"
    )
    try:
        backend = OpenAICompatBackend(
            "openai/judge", "judge", base_url=base_url, concurrency="auto", policy=RetryPolicy()
        )

        async def scenario() -> int:
            try:
                return await burst(backend, count)
            finally:
                await backend.aclose()

        started = time.monotonic()
        failed = asyncio.run(scenario())
        elapsed = time.monotonic() - started
        refused = server_counts(base_url).get("429", 0)
    finally:
        server.terminate()
        server.wait()
    floor = count / rate
    print(f"\nauto: {elapsed:.2f}s = {elapsed / floor:.2f} x N/R, {refused} 429s")
    assert failed == 0
    assert refused > 0  # the limit was really reached ...
    assert refused < count  # ... without a refusal storm
    assert elapsed <= 1.25 * floor, elapsed
    assert backend.stats.requests == count + refused


def test_auto_pauses_an_endpoint_whose_rate_limit_headers_say_none_remain():
    """x-ratelimit-remaining-requests: 0 with a 0.4 s reset: the next request waits for it;
    a fixed limit ignores the headers."""
    arrivals: list[float] = []

    def respond(request: dict) -> Reply:
        arrivals.append(time.monotonic())
        headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "0.4s"}
        return Reply(content="ok", headers=headers if len(arrivals) == 1 else {})

    def two_in_a_row(concurrency: int | str) -> float:
        arrivals.clear()
        with FakeServer(responder=respond) as server:
            backend = OpenAICompatBackend(
                "openai/j",
                "j",
                base_url=server.base_url,
                concurrency=concurrency,
                policy=RetryPolicy(request_timeout=5),  # max_wait 60 s caps the pause
            )

            async def scenario() -> None:
                await backend.complete(messages(1), PARAMS)  # type: ignore[arg-type]
                await backend.complete(messages(2), PARAMS)  # type: ignore[arg-type]
                await backend.aclose()

            asyncio.run(scenario())
        return arrivals[1] - arrivals[0]

    assert two_in_a_row("auto") >= 0.39
    assert two_in_a_row(4) < 0.3
