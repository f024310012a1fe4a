"""The one retry layer: which failures are worth another attempt, and how long to wait.

This policy is the only one (no client library retries underneath): bounded by attempts and
by total time, exponential backoff with full jitter, and a server's Retry-After honoured
(capped, so a hostile header cannot park the run for hours). Its loop, `run_with_retries`,
is the only one too: every live backend and every batch client retries through it, and
what a caller adds (an endpoint slot held through a backoff, the budget's say over each
attempt, the backend's stats) are the hooks of a `Retrying`, not a loop of its own.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from turnbench.errors import RequestFailedError

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429})
FATAL_STATUS = frozenset({401, 403, 404})
CONGESTION_STATUS = frozenset({429, 503, 529})  # "slow down", "overloaded": not "broken"


class TransientError(Exception):
    """A failure worth another attempt, from the HTTP transport or a provider's SDK alike;
    `retry_after` is the server's own hint, if any.

    `kind`: "status" (408/409/429/5xx), "timeout", "connect" (refused, DNS, TLS), "dropped"
    (connection lost mid-reply) or "malformed" (a 2xx that is no usable completion).
    `status` is the HTTP status for kind "status". `billed` overrides whether the attempt
    may still be billed (a 400 that refused a field before any work is not).
    """

    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        *,
        kind: str = "status",
        status: int | None = None,
        billed: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.kind = kind
        self.status = status
        self._billed = billed

    @property
    def congestion(self) -> bool:
        """The server asked us to slow down (429/503/529): under adaptive concurrency this
        costs no attempt, only time."""
        return self.kind == "status" and self.status in CONGESTION_STATUS

    @property
    def billed(self) -> bool:
        """Whether the failed attempt may still be billed: it reached the server and was not
        refused outright. A connection that never opened sent nothing, and a 429/503/529 is
        a refusal before any work; a timeout, a dropped connection, a 5xx or a malformed
        body may all come after the server generated (and billed) a reply."""
        if self._billed is not None:
            return self._billed
        return self.kind != "connect" and not self.congestion

    @property
    def endpoint_failure(self) -> bool:
        """Evidence the endpoint itself is unwell (connection errors, 5xx, timeouts)."""
        if self.kind == "status":
            return self.status is not None and self.status >= 500
        return self.kind in ("connect", "timeout", "dropped")


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 10
    max_total_seconds: float = 900.0
    initial_wait: float = 1.0
    max_wait: float = 60.0
    request_timeout: float = 600.0

    def gives_up(self, counted: int, spent: float, delay: float) -> bool:
        """Whether a request stops retrying: its `counted` attempts are all it may make, or
        waiting `delay` more seconds would take it past its total time (`spent` so far)."""
        return counted >= self.max_attempts or spent + delay >= self.max_total_seconds

    @classmethod
    def from_flags(cls, flags: RetryFlags) -> RetryPolicy:
        """The policy `--max-attempts`, `--retry-max-time`, `--retry-initial-wait` and
        `--request-timeout` give (the same flags on every command that sends requests)."""
        return cls(
            max_attempts=flags.max_attempts,
            max_total_seconds=flags.retry_max_time,
            initial_wait=flags.retry_initial_wait,
            max_wait=max(60.0, flags.retry_initial_wait),
            request_timeout=flags.request_timeout,
        )


class RetryFlags(Protocol):
    max_attempts: int
    retry_max_time: float
    retry_initial_wait: float
    request_timeout: float


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def parse_retry_after(headers: object) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `retry-after`."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    raw_ms = get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is None:
            return None
        value = email.utils.mktime_tz(parsed) - time.time()
    if not math.isfinite(value):
        return None
    return max(0.0, value)


def backoff_delay(policy: RetryPolicy, attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based): the server's hint
    when given (capped at max_wait), else full jitter in [0, initial * 2^(attempt-1)]."""
    if retry_after is not None:
        return min(float(retry_after), policy.max_wait)
    high = policy.initial_wait * 2 ** min(max(0, attempt - 1), 60)
    return random.uniform(0.0, min(policy.max_wait, high))


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
# the whole value, tested first: `findall` alone starts again at every digit of a long run
# without a unit (a 256 KB header of digits would have taken minutes)
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|h|m|s))+")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(raw: str | None) -> float | None:
    """`x-ratelimit-reset-requests` values: "1s", "6m0s", "20ms", "1h2m3.5s" or a bare
    number of seconds; None when unreadable."""
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        if not _DURATION.fullmatch(raw):
            return None
        parts = _DURATION_PART.findall(raw)
        if not parts or "".join(n + u for n, u in parts) != raw:
            return None
        value = sum(float(number) * _UNIT[unit] for number, unit in parts)
    return value if math.isfinite(value) and value >= 0 else None


class GaveUp(Exception):
    """The retry budget is spent; carries the last transient error and the attempt count."""

    def __init__(self, last: TransientError, attempts: int) -> None:
        super().__init__(last.message)
        self.last = last
        self.attempts = attempts


class Retrying:
    """What a caller adds to `run_with_retries` for one request; every hook does nothing by
    default, so the batch clients pass none.

    One instance serves one request: the loop keeps its counts on it (`attempts`: the
    attempts made, the one running included; `counted`: those that count against
    `--max-attempts`), so an attempt and the hooks read them without a second tally. The
    hooks run in this order after a failed attempt: `failed`, `counts`, `delay`, then
    `since` (for the total time); unless the loop gives up, `admit` and the backoff; and
    `waited` last, whatever happened after `failed`.
    """

    def __init__(self) -> None:
        self.attempts = 0
        self.counted = 0

    def failed(self, error: TransientError) -> None:
        """After each failed attempt, before anything is decided: stats, and what a
        provider may bill for an attempt that returned nothing."""

    def counts(self, error: TransientError) -> bool:
        """Whether this failed attempt counts against `--max-attempts` (under adaptive
        concurrency a refusal for congestion costs only time)."""
        return True

    def delay(self, error: TransientError, policy: RetryPolicy) -> float:
        """Seconds to wait before the next attempt: the policy's backoff by default."""
        return backoff_delay(policy, self.counted, error.retry_after)

    def since(self, started: float) -> float:
        """The `time.monotonic()` the total time is measured from (`started`: the loop's
        own start), for `RetryPolicy.gives_up`."""
        return started

    def admit(self) -> None:
        """Before the backoff of a retry the loop will send: raise (an AttemptRefusedError)
        to send none, e.g. when the budget cannot cover it."""

    def waited(self) -> None:
        """After the backoff, or instead of it (given up, refused, cancelled): what was
        held through it (an endpoint slot) is let go."""


async def run_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    retrying: Retrying | None = None,
) -> tuple[T, int]:
    """Call `attempt` until it returns, raises something other than `TransientError`, or the
    policy's budget is spent (`RetryPolicy.gives_up`), which raises `GaveUp`.

    Returns the result and the number of attempts made (also set on a RequestFailedError
    raised by `attempt`). No backoff sleep begins past the policy's deadline. `retrying`
    adds the caller's hooks (see `Retrying`); an exception a hook raises (a refused retry)
    ends the loop as it is.
    """
    hooks = retrying if retrying is not None else Retrying()
    started = time.monotonic()
    while True:
        hooks.attempts += 1
        try:
            return await attempt(), hooks.attempts
        except TransientError as error:
            try:
                hooks.failed(error)
                if hooks.counts(error):
                    hooks.counted += 1
                delay = hooks.delay(error, policy)
                spent = time.monotonic() - hooks.since(started)
                if policy.gives_up(hooks.counted, spent, delay):
                    raise GaveUp(error, hooks.attempts) from None
                hooks.admit()
                await asyncio.sleep(delay)
            finally:
                hooks.waited()
        except RequestFailedError as error:
            error.attempts = hooks.attempts  # a request that cannot succeed still cost these
            raise
