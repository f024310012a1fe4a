"""Replica choice, cool-downs and the adaptive limit, with a hand-driven clock."""

from __future__ import annotations

import asyncio

import pytest

from turnbench.backends.endpoints import AdaptiveLimit, Endpoint, EndpointPool, FixedLimit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pool(n: int = 2, limit: int = 4, clock: Clock | None = None, **kwargs) -> EndpointPool:
    endpoints = [
        Endpoint(f"http://127.0.0.1:{8000 + i}/v1", limit=FixedLimit(limit)) for i in range(n)
    ]
    return EndpointPool(endpoints, clock=clock or Clock(), **kwargs)


def test_adaptive_limit_slow_start_then_additive_increase():
    limit = AdaptiveLimit(initial=4, maximum=100)
    for _ in range(4):  # four successes with the limit in use: +1 each (slow start)
        limit.on_success(0.0, 0.1, in_flight=limit.current - 1)
    assert limit.current == 8
    assert limit.on_success(0.0, 0.1, in_flight=2) is False  # not in use: no growth
    assert limit.current == 8
    assert limit.on_congestion(1.0, 0.1) is True
    assert limit.current == 5  # 8 x 0.7 = 5.6
    assert limit.on_congestion(1.05, 0.1) is False  # within one round trip: counted once
    assert limit.on_congestion(1.2, 0.1) is True and limit.current == 3  # 5.6 x 0.7 = 3.92
    before = limit.value
    for _ in range(4):  # congestion avoidance: +1/limit per success, ~ +1 per round trip
        limit.on_success(2.0, 0.1, in_flight=limit.current - 1)
    assert 0.93 <= limit.value - before <= 0.94  # 1/3.92 + 1/4.175 + 1/4.415 + 1/4.641


def test_adaptive_limit_bounds():
    limit = AdaptiveLimit(initial=2, minimum=1, maximum=3)
    for _ in range(10):
        limit.on_success(0.0, 0.1, in_flight=limit.current)
    assert limit.current == 3
    for step in range(20):
        limit.on_congestion(float(step), 0.1)
    assert limit.current == 1


async def take(p: EndpointPool, n: int) -> list[Endpoint]:
    return [await p.acquire() for _ in range(n)]


def test_requests_go_to_the_endpoint_with_fewest_in_flight():
    async def scenario():
        p = pool(3)
        a, b, c = p.endpoints
        got = await take(p, 6)
        assert [e.in_flight for e in (a, b, c)] == [2, 2, 2]
        p.release(b)
        p.release(b)
        assert await p.acquire() is b
        assert {id(e) for e in got} == {id(a), id(b), id(c)}

    asyncio.run(scenario())


def test_an_endpoint_failing_in_a_row_is_set_aside_then_comes_back():
    async def scenario():
        clock = Clock()
        p = pool(2, clock=clock, cooldown=5.0)
        a, b = p.endpoints
        for _ in range(2):
            p.failed(a, endpoint_failure=True, congestion=False)
        assert a.cool_until == 0.0  # two failures: still in service
        p.failed(a, endpoint_failure=True, congestion=False)
        assert a.cool_until == clock.now + 5.0
        assert [await p.acquire() for _ in range(4)] == [b] * 4  # b takes all the work
        clock.now += 5.0
        p.release(b)
        assert await p.acquire() is a  # back after its cool-down
        p.failed(a, endpoint_failure=True, congestion=False)  # one failure sets it aside again
        assert a.cool_until == clock.now + 10.0  # for twice as long
        p.succeeded(b, 0.1)
        clock.now += 10.0
        p.succeeded(a, 0.1)
        assert (a.streak, a.times_set_aside) == (0, 0)
        assert a.failures == 4 and b.failures == 0

    asyncio.run(scenario())


def test_429_and_other_client_failures_do_not_set_an_endpoint_aside():
    p = pool(2)
    a, _ = p.endpoints
    for _ in range(10):
        p.failed(a, endpoint_failure=False, congestion=True)
    assert a.cool_until == 0.0 and a.failures == 10


def test_a_single_endpoint_is_never_set_aside():
    p = pool(1)
    (a,) = p.endpoints
    for _ in range(10):
        p.failed(a, endpoint_failure=True, congestion=False)
    assert a.cool_until == 0.0


def test_when_every_endpoint_is_set_aside_they_are_used_anyway():
    async def scenario():
        clock = Clock()
        p = pool(2, clock=clock)
        for endpoint in p.endpoints:
            p.set_aside(endpoint)
        got = await asyncio.wait_for(take(p, 2), 1)
        assert {e.url for e in got} == {e.url for e in p.endpoints}

    asyncio.run(scenario())


def test_waiters_are_served_first_come_first_served_and_cancellation_frees_the_slot():
    async def scenario():
        p = pool(1, limit=1)
        (a,) = p.endpoints
        first = await p.acquire()
        order: list[int] = []

        async def wait(i: int) -> None:
            endpoint = await p.acquire()
            order.append(i)
            p.release(endpoint)

        tasks = [asyncio.create_task(wait(i)) for i in range(5)]
        await asyncio.sleep(0)
        tasks[2].cancel()
        p.release(first)
        await asyncio.gather(*tasks, return_exceptions=True)
        assert order == [0, 1, 3, 4]
        assert a.in_flight == 0

    asyncio.run(scenario())


def test_a_paused_endpoint_admits_nothing_until_the_pause_ends():
    async def scenario():
        p = EndpointPool([Endpoint("http://127.0.0.1:1/v1", limit=FixedLimit(4))])
        (a,) = p.endpoints
        p.pause(a, 0.2)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.wait_for(p.acquire(), 2)
        assert loop.time() - started >= 0.19

    asyncio.run(scenario())


def test_endpoint_summary_is_redacted():
    e = Endpoint("https://u:pw@h/v1?key=SECRET", limit=FixedLimit(1))
    e.requests, e.failures = 5, 2
    assert e.summary() == {"url": "https://***@h/v1?key=***", "requests": 5, "failures": 2}


@pytest.mark.parametrize("n", [1, 3])
def test_capacity_is_the_sum_of_limits(n):
    assert pool(n, limit=4).capacity == 4 * n
