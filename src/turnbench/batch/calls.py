"""One batch API call (create, retrieve, download, cancel) under the project's retry policy.

The same mapping as the chat backends: 429/5xx/timeouts are retried with backoff (the
server's Retry-After honoured, capped), 401/403/404 raise FatalBackendError, other 4xx a
RequestFailedError. Calls that may create something twice are not routed through here
blindly: see each client's submit().
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import TypeVar

from turnbench.backends.retry import RetryPolicy
from turnbench.backends.sdk_calls import GaveUp, classify_sdk_error, run_with_retries
from turnbench.errors import RequestFailedError

T = TypeVar("T")


class SDKCaller:
    def __init__(
        self,
        sdk: ModuleType,
        policy: RetryPolicy,
        *,
        redact: Callable[[str], str],
        fatal_message: Callable[[int, str], str],
    ) -> None:
        self.sdk = sdk
        self.policy = policy
        self.redact = redact
        self.fatal_message = fatal_message

    def mapped(self, error: Exception, what: str) -> Exception:
        return classify_sdk_error(
            error, self.sdk, what=what, redact=self.redact, fatal_message=self.fatal_message
        )

    async def __call__(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        async def attempt() -> T:
            try:
                return await call()
            except Exception as error:
                raise self.mapped(error, what) from None

        try:
            result, _ = await run_with_retries(attempt, self.policy)
        except GaveUp as error:
            raise RequestFailedError(
                f"{what}: gave up after {error.attempts} attempts: {error.last.message}",
                error.attempts,
            ) from None
        return result
