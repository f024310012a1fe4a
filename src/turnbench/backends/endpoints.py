"""Replicas of one model: which endpoint takes the next request, and how many may be in flight.

Each request goes to the available endpoint with the fewest requests in flight. An endpoint
that fails several times in a row (connection errors, 5xx, timeouts) is set aside for a
cool-down that doubles each time it happens again, and the others take its work; when every
endpoint is set aside they are all used anyway (a single endpoint is never set aside: the
retry policy alone decides when to give up on it).

Per endpoint, a `FixedLimit` (--concurrency N) or an `AdaptiveLimit` (--concurrency auto)
bounds the requests in flight. The adaptive one is AIMD, as in TCP: it grows while replies
come back fine and shrinks on 429, 503 and timeouts, at most once per round trip; a
Retry-After on a 429/503, or x-ratelimit-remaining-requests reaching 0, pauses the endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from turnbench.backends.urls import Target, display_url, target

AUTO_INITIAL = 8  # requests in flight per endpoint when --concurrency auto starts
AUTO_MAXIMUM = 512


class FixedLimit:
    """--concurrency N: N requests in flight, whatever the server says."""

    adaptive = False

    def __init__(self, value: int) -> None:
        self.value = max(1, int(value))

    @property
    def current(self) -> int:
        return self.value

    @property
    def ceiling(self) -> int:
        return self.value

    def on_success(self, now: float, rtt: float, in_flight: int) -> bool:
        return False

    def on_congestion(self, now: float, rtt: float) -> bool:
        return False


class AdaptiveLimit:
    """--concurrency auto: additive increase, multiplicative decrease of requests in flight.

    Starts at `initial` and doubles per round trip ("slow start") until the first sign of
    congestion; from then on grows by about one request per round trip. A congestion signal
    multiplies the limit by `decrease`, at most once per round trip so that one burst of 429s
    counts once.
    """

    adaptive = True

    def __init__(
        self, initial: int = 8, minimum: int = 1, maximum: int = 512, decrease: float = 0.7
    ) -> None:
        self.minimum, self.maximum, self.decrease = minimum, maximum, decrease
        self.value = float(min(max(initial, minimum), maximum))
        self.slow_start = True
        self._last_decrease = -1e9

    @property
    def current(self) -> int:
        return int(self.value)

    @property
    def ceiling(self) -> int:
        return self.maximum

    def on_success(self, now: float, rtt: float, in_flight: int) -> bool:
        """Grow only while the limit is in use (queued work waits for it); True if it grew
        by a whole request."""
        if in_flight + 1 < self.current:
            return False
        before = self.current
        step = 1.0 if self.slow_start else 1.0 / max(1.0, self.value)
        self.value = min(float(self.maximum), self.value + step)
        return self.current > before

    def on_congestion(self, now: float, rtt: float) -> bool:
        self.slow_start = False
        if now - self._last_decrease < max(rtt, 0.05):
            return False
        self._last_decrease = now
        self.value = max(float(self.minimum), self.value * self.decrease)
        return True


@dataclass(eq=False)
class Endpoint:
    """One replica: where to send, with which key, and its live health and counters."""

    url: str  # as given (may hold credentials: never shown)
    key: str | None = field(default=None, repr=False)
    key_source: str | None = None
    limit: FixedLimit | AdaptiveLimit = field(default_factory=lambda: FixedLimit(8))
    shown: str = ""
    target: Target = field(init=False, repr=False)
    in_flight: int = 0
    requests: int = 0
    failures: int = 0
    streak: int = 0  # consecutive failures
    times_set_aside: int = 0  # consecutive set-asides without a success in between
    cool_until: float = 0.0
    pause_until: float = 0.0  # the server asked for a pause (Retry-After, rate-limit reset)
    rtt: float = 0.0  # smoothed seconds of a successful request

    def __post_init__(self) -> None:
        self.shown = display_url(self.url) or ""
        self.target = target(self.url)

    def summary(self) -> dict[str, Any]:
        return {"url": self.shown, "requests": self.requests, "failures": self.failures}


class EndpointPool:
    """Hands out endpoints to requests, fairly (first come, first served)."""

    def __init__(
        self,
        endpoints: list[Endpoint],
        *,
        failures_to_set_aside: int = 3,
        cooldown: float = 5.0,
        max_cooldown: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not endpoints:
            raise ValueError("an endpoint pool needs at least one endpoint")
        self.endpoints = endpoints
        self.failures_to_set_aside = failures_to_set_aside
        self.cooldown = cooldown
        self.max_cooldown = max_cooldown
        self.clock = clock
        self._waiters: deque[asyncio.Future[Endpoint]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    # -- choosing ----------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Requests in flight allowed now, over all endpoints."""
        return sum(e.limit.current for e in self.endpoints)

    def _candidate(self, now: float) -> Endpoint | None:
        healthy = [e for e in self.endpoints if e.cool_until <= now]
        usable = healthy or self.endpoints  # everyone set aside: use them all anyway
        best = None
        for endpoint in usable:
            if endpoint.pause_until > now or endpoint.in_flight >= endpoint.limit.current:
                continue
            if best is None or (endpoint.in_flight, endpoint.requests) < (
                best.in_flight,
                best.requests,
            ):
                best = endpoint
        return best

    async def acquire(self) -> Endpoint:
        if not self._waiters:
            endpoint = self._candidate(self.clock())
            if endpoint is not None:
                endpoint.in_flight += 1
                return endpoint
        future: asyncio.Future[Endpoint] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        self._arm_timer()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(future.result())  # assigned, then cancelled before resuming
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(future)
            raise

    def release(self, endpoint: Endpoint) -> None:
        endpoint.in_flight -= 1
        self.dispatch()

    def dispatch(self) -> None:
        """Hand free endpoints to waiting requests, oldest first."""
        now = self.clock()
        while self._waiters:
            future = self._waiters[0]
            if future.done():
                self._waiters.popleft()
                continue
            endpoint = self._candidate(now)
            if endpoint is None:
                break
            self._waiters.popleft()
            endpoint.in_flight += 1
            future.set_result(endpoint)
        if self._waiters:
            self._arm_timer()

    def _arm_timer(self) -> None:
        """Wake up when a pause or a cool-down ends, if requests are waiting for that."""
        now = self.clock()
        moments = [t for e in self.endpoints for t in (e.pause_until, e.cool_until) if t > now]
        if not moments:
            return
        when = min(moments)
        if self._timer is not None and not self._timer.cancelled():
            if self._timer.when() <= when + 0.001 and self._timer.when() > 0:
                return
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(max(0.0, when - now) + 0.001, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.dispatch()

    # -- feedback ----------------------------------------------------------------------------
    def succeeded(self, endpoint: Endpoint, rtt: float) -> None:
        endpoint.streak = 0
        endpoint.times_set_aside = 0
        endpoint.rtt = rtt if endpoint.rtt == 0.0 else 0.8 * endpoint.rtt + 0.2 * rtt
        if endpoint.limit.on_success(self.clock(), endpoint.rtt, endpoint.in_flight - 1):
            self.dispatch()

    def failed(self, endpoint: Endpoint, *, endpoint_failure: bool, congestion: bool) -> None:
        endpoint.failures += 1
        now = self.clock()
        if congestion:
            endpoint.limit.on_congestion(now, endpoint.rtt)
        if not endpoint_failure:
            return
        endpoint.streak += 1
        if len(self.endpoints) > 1 and endpoint.streak >= self.failures_to_set_aside:
            self.set_aside(endpoint, now)

    def set_aside(self, endpoint: Endpoint, now: float | None = None) -> None:
        now = self.clock() if now is None else now
        endpoint.times_set_aside += 1
        wait = min(self.max_cooldown, self.cooldown * 2 ** (endpoint.times_set_aside - 1))
        endpoint.cool_until = now + wait
        # back from its cool-down, one more failure sets it aside again (for longer)
        endpoint.streak = self.failures_to_set_aside - 1

    def pause(self, endpoint: Endpoint, seconds: float) -> None:
        """No new request to `endpoint` for `seconds` (the server asked for it)."""
        until = self.clock() + max(0.0, seconds)
        if until > endpoint.pause_until:
            endpoint.pause_until = until

    def summary(self) -> list[dict[str, Any]]:
        return [e.summary() for e in self.endpoints]
