"""The one retry layer: which failures are worth another attempt, and how long to wait.

The SDK's own retries are switched off (max_retries=0) so that this policy is the only one:
bounded by attempts and by total time, exponential backoff with full jitter, and a server's
Retry-After honoured (capped, so a hostile header cannot park the run for hours).
"""

from __future__ import annotations

import email.utils
import math
import time
from dataclasses import dataclass

from tenacity import RetryCallState
from tenacity.wait import wait_random_exponential

RETRYABLE_STATUS = frozenset({408, 409, 429})
FATAL_STATUS = frozenset({401, 403, 404})


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 10
    max_total_seconds: float = 900.0
    initial_wait: float = 1.0
    max_wait: float = 60.0
    request_timeout: float = 600.0


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


class BackoffWait:
    """tenacity wait strategy: the server's Retry-After when given, else jittered backoff."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy
        self._exponential = wait_random_exponential(
            multiplier=policy.initial_wait, max=policy.max_wait
        )

    def __call__(self, state: RetryCallState) -> float:
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            return min(float(retry_after), self._policy.max_wait)
        return float(self._exponential(state))
