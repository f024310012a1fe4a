"""One call through a vendor SDK under the project's retry policy, with one error mapping.

The Anthropic and OpenAI Python SDKs raise the same family of exceptions (APIStatusError
with a status code and the response headers, APITimeoutError, APIConnectionError,
APIResponseValidationError). `classify_sdk_error` turns any of them into what the retry
layer acts on: `TransientError` (the HTTP transport's own: try again, honouring the
server's Retry-After), a `FatalBackendError` (401/403/404: stop the run) or a
`RequestFailedError` (a 400 and the like: this request cannot succeed).
The loop is `turnbench.backends.retry.run_with_retries`, the one retry layer (bounded
attempts and total time, full-jitter backoff, the server's Retry-After). The SDKs' own
retries must be off (max_retries=0) so it stays the only one.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from turnbench.backends.replies import Redactor, short_detail
from turnbench.backends.retry import (
    FATAL_STATUS,
    GaveUp,
    TransientError,
    is_retryable_status,
    parse_retry_after,
    run_with_retries,
)
from turnbench.errors import FatalBackendError, RequestFailedError

__all__ = ["GaveUp", "classify_sdk_error", "run_with_retries", "sdk_error_detail"]


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
