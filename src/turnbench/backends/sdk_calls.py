"""One call through a vendor SDK under the project's retry policy, with one error mapping.

The Anthropic and OpenAI Python SDKs raise the same family of exceptions (APIStatusError
with a status code and the response headers, APITimeoutError, APIConnectionError,
APIResponseValidationError). `classify_sdk_error` turns any of them into what the retry
layer acts on: `TransientError` (the HTTP transport's own: try again, honouring the
server's Retry-After), a `FatalBackendError` (401/403/404: stop the run) or a
`RequestFailedError` (a 400 and the like: this request cannot succeed).
`run_with_retries` is the loop: bounded attempts and total time, full-jitter backoff; the
policy itself lives in `turnbench.backends.retry`. The SDKs' own retries must be off
(max_retries=0) so this stays the only retry layer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_before_delay
from tenacity.stop import stop_base
from tenacity.wait import wait_random_exponential

from turnbench.backends.replies import Redactor, short_detail
from turnbench.backends.retry import (
    FATAL_STATUS,
    RetryPolicy,
    TransientError,
    is_retryable_status,
    parse_retry_after,
)
from turnbench.errors import FatalBackendError, RequestFailedError

T = TypeVar("T")


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


class GaveUp(Exception):
    """The retry budget is spent; carries the last transient error and the attempt count."""

    def __init__(self, last: TransientError, attempts: int) -> None:
        super().__init__(last.message)
        self.last = last
        self.attempts = attempts


def sdk_error_detail(error: BaseException, redact: Redactor) -> str:
    """The server's own message for an SDK error, made fit for logs and terminals."""
    message = getattr(error, "message", None) or str(error)
    return short_detail(str(message), redact)


def classify_sdk_error(
    error: Exception,
    sdk: ModuleType,
    *,
    what: str,
    redact: Redactor,
    fatal_message: Callable[[int, str], str],
) -> Exception:
    """The exception the retry layer should see for `error` raised by `sdk` (openai or
    anthropic). `what` prefixes non-fatal messages (e.g. the model spec); `fatal_message`
    builds the message for 401/403/404 from the status and the server's detail."""
    if isinstance(error, sdk.APIStatusError):
        status = int(error.status_code)
        detail = sdk_error_detail(error, redact)
        if status in FATAL_STATUS:
            return FatalBackendError(fatal_message(status, detail))
        if is_retryable_status(status):
            return TransientError(
                f"HTTP {status}: {detail}",
                parse_retry_after(error.response.headers),
                kind="status",
                status=status,
            )
        return RequestFailedError(f"{what}: HTTP {status}: {detail}", 1)
    if isinstance(error, sdk.APITimeoutError):
        return TransientError("timed out", kind="timeout")
    if isinstance(error, sdk.APIConnectionError):
        # the SDK's own text is a fixed "Connection error."; what happened is its cause
        # (turnbench's transport names it: refused, TLS, a body over the cap, ...)
        cause = error.__cause__
        detail = short_detail(str(cause or error), redact)
        return TransientError(f"connection error: {detail}", kind="dropped")
    if isinstance(error, (sdk.APIResponseValidationError, ValueError)):
        return TransientError(
            f"malformed response: {short_detail(str(error), redact)}", kind="malformed"
        )
    return error


async def run_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[], None] | None = None,
    congestion_is_free: bool = False,
) -> tuple[T, int]:
    """Call `attempt` until it returns, raises something other than `TransientError`, or the
    policy's budget (attempts, total seconds) is spent, which raises `GaveUp`.

    Returns the result and the number of attempts made (also set on a RequestFailedError
    raised by `attempt`). No attempt starts, and no backoff sleep begins, past the policy's
    deadline. With `congestion_is_free` (--concurrency auto) an attempt refused for
    congestion does not count against `max_attempts`: rate limiting costs time (still
    bounded by the deadline), never the item.
    """
    attempts = 0
    counted = 0

    class _StopAfterCounted(stop_base):
        def __call__(self, retry_state: RetryCallState) -> bool:
            return counted >= policy.max_attempts

    retrying = AsyncRetrying(
        stop=_StopAfterCounted() | stop_before_delay(policy.max_total_seconds),
        wait=BackoffWait(policy),
        retry=retry_if_exception_type(TransientError),
        reraise=True,
    )
    try:
        async for state in retrying:
            with state:
                attempts += 1
                counted += 1
                if attempts > 1 and on_retry is not None:
                    on_retry()
                try:
                    result = await attempt()
                except TransientError as error:
                    if congestion_is_free and error.congestion:
                        counted -= 1
                    raise
    except TransientError as error:
        raise GaveUp(error, attempts) from None
    except RequestFailedError as error:
        error.attempts = attempts  # a request that cannot succeed still cost these attempts
        raise
    return result, attempts
