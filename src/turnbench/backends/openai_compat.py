"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp server, TGI)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, stop_before_delay

from turnbench.backends.base import BackendStats
from turnbench.backends.factory import display_url
from turnbench.backends.retry import (
    FATAL_STATUS,
    BackoffWait,
    RetryPolicy,
    is_retryable_status,
    parse_retry_after,
)
from turnbench.errors import FatalBackendError, RequestFailedError
from turnbench.types import Completion, Message, RequestParams, Usage

# OpenAI's reasoning models reject `max_tokens` and `temperature`.
_REASONING_NAME = re.compile(r"^(o\d+(-[\w.-]+)?|gpt-5[\w.-]*)$")


class TransientError(Exception):
    """A failure worth another attempt; `retry_after` is the server's own hint, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def is_reasoning_model(name: str) -> bool:
    return bool(_REASONING_NAME.match(name.rsplit("/", 1)[-1]))


class OpenAICompatBackend:
    """Bounded-concurrency client with the project's single retry layer."""

    def __init__(
        self,
        spec: str,
        model_name: str,
        *,
        base_url: str | None,
        api_key: str | None,
        concurrency: int,
        policy: RetryPolicy,
        token_param: str = "auto",
    ) -> None:
        from openai import AsyncOpenAI  # imported here: the local backend must not pay for it

        self.spec = spec
        self.model_name = model_name
        self.stats = BackendStats()
        self._policy = policy
        self._secret = api_key or ""
        self.concurrency = max(1, concurrency)  # requests in flight at most
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._fatal: FatalBackendError | None = None
        self._reasoning = token_param == "max_completion_tokens" or (
            token_param == "auto" and is_reasoning_model(model_name)
        )
        self._client = AsyncOpenAI(
            api_key=api_key or "no-key",
            base_url=base_url,
            max_retries=0,
            timeout=policy.request_timeout,
        )
        self._base_url = display_url(str(self._client.base_url)) or ""

    def _redact(self, text: str) -> str:
        """Remove the key from a server's text (before shortening, so no prefix survives)."""
        if self._secret and len(self._secret) >= 4:
            text = text.replace(self._secret, "***")
        return text

    def request_fields(self, params: RequestParams) -> dict[str, Any]:
        """The sampling fields this backend sends for `params` (recorded as provenance)."""
        fields: dict[str, Any] = {}
        if params.n is not None:
            fields["n"] = params.n
        if params.temperature is not None and not self._reasoning:
            fields["temperature"] = params.temperature
        if params.max_tokens is not None:
            key = "max_completion_tokens" if self._reasoning else "max_tokens"
            fields[key] = params.max_tokens
        fields.update(params.extra)
        return fields

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        fields = self.request_fields(params)
        started = time.monotonic()
        attempts = 0
        retrying = AsyncRetrying(
            # stop_before_delay: no attempt starts, and no backoff sleeps, past the deadline
            stop=stop_after_attempt(self._policy.max_attempts)
            | stop_before_delay(self._policy.max_total_seconds),
            wait=BackoffWait(self._policy),
            retry=retry_if_exception_type(TransientError),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    if attempts > 1:
                        self.stats.retries += 1
                    completion = await self._attempt(messages, fields)
        except TransientError as error:
            self.stats.failures += 1
            raise RequestFailedError(
                f"{self.spec}: gave up after {attempts} attempts: {error}", attempts
            ) from None
        except RequestFailedError as error:
            self.stats.failures += 1
            raise RequestFailedError(error.message, attempts) from None
        completion.attempts = attempts
        self.stats.add_usage(completion.usage)
        completion.latency_s = round(time.monotonic() - started, 4)
        completion.sent_params = fields
        return completion

    async def _attempt(self, messages: list[Message], fields: dict[str, Any]) -> Completion:
        import openai

        known = {"n", "temperature", "max_tokens", "max_completion_tokens"}
        extra_body = {k: v for k, v in fields.items() if k not in known}
        kwargs = {k: v for k, v in fields.items() if k in known}
        async with self._semaphore:
            if self._fatal is not None:  # another request already hit a fatal refusal
                raise self._fatal
            self.stats.requests += 1
            try:
                response = await self._client.chat.completions.create(
                    model=self.model_name,
                    messages=messages,  # type: ignore[arg-type]
                    extra_body=extra_body or None,
                    **kwargs,
                )
            except openai.APIStatusError as error:
                status = error.status_code
                detail = _short(self._redact(error.message))
                if status in FATAL_STATUS:
                    self._fatal = FatalBackendError(
                        _fatal_message(self.spec, self._base_url, status, detail)
                    )
                    raise self._fatal from None
                if is_retryable_status(status):
                    raise TransientError(
                        f"HTTP {status}: {detail}", parse_retry_after(error.response.headers)
                    ) from None
                raise RequestFailedError(f"{self.spec}: HTTP {status}: {detail}", 1) from None
            except openai.APITimeoutError:
                raise TransientError(f"timed out after {self._policy.request_timeout:g}s") from None
            except openai.APIConnectionError as error:
                raise TransientError(
                    f"connection error: {_short(self._redact(str(error)))}"
                ) from None
            except (openai.APIResponseValidationError, ValueError) as error:
                raise TransientError(
                    f"malformed response: {_short(self._redact(str(error)))}"
                ) from None
        return self._to_completion(response)

    @staticmethod
    def _to_completion(response: Any) -> Completion:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise TransientError("response has no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise TransientError("response choice has no message")
        text = message.content if isinstance(message.content, str) else ""
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            finish_reason=getattr(choice, "finish_reason", None),
            usage=Usage(
                prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            ),
            reported_model=getattr(response, "model", None),
            system_fingerprint=getattr(response, "system_fingerprint", None),
        )

    async def aclose(self) -> None:
        await self._client.close()


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fatal_message(spec: str, base_url: str, status: int, detail: str) -> str:
    if status == 401:
        why = (
            "the endpoint rejected the API key (HTTP 401). Check the key variable "
            "(OPENAI_API_KEY, or the one named by --model-api-key-env / --judge-api-key-env)"
        )
    elif status == 403:
        why = "the endpoint refused access (HTTP 403): the key lacks permission for this model"
    else:
        why = (
            "the endpoint answered HTTP 404: the model name or the base URL is wrong "
            "(OpenAI-compatible servers usually want a base URL ending in /v1)"
        )
    return f"{spec} at {base_url}: {why}. Server said: {detail}. The run stopped at once."
