"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp server, TGI).

The hot path is a plain HTTP client (see http.py): the request body is built with
json.dumps from the messages and the sampling fields, the reply parsed and sanitised by
replies.py, and this module owns the choice of replica (endpoints.py) and what each status
means. Its attempts are retried by the one retry loop (`retry.run_with_retries`), with the
hooks every live backend shares (`attempts.BackendRetrying`) and this backend's own
(`_HttpRetrying`: an endpoint slot held through a congestion backoff, and that backoff's
length from the endpoint's round trip):

- 408, 409, 429, 5xx, timeouts, dropped connections, malformed bodies, empty choices and
  null content: retried (bounded by --max-attempts and --retry-max-time; Retry-After
  honoured, capped). Under --concurrency auto, 429 and 503 cost no attempt, only time.
- every attempt after one that may have been billed (see `attempts.may_be_billed`) is
  admitted by the engine's budget before it is sent, and the one that returned nothing is
  reported to it (`turnbench.backends.attempts`).
- 401, 403, 404: fatal, the whole run stops at once (no point burning requests).
- other 4xx and redirects: this request failed (recorded, retried by the next run).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Sequence
from functools import partial
from typing import Any, Literal

from turnbench import __version__
from turnbench.backends.attempts import BackendRetrying
from turnbench.backends.base import BackendStats
from turnbench.backends.endpoints import (
    AUTO_INITIAL,
    AUTO_MAXIMUM,
    AdaptiveLimit,
    Endpoint,
    EndpointPool,
    FixedLimit,
)
from turnbench.backends.http import HttpReply, HttpTransport, Transport
from turnbench.backends.keys import OPENAI_URL, EndpointKey, base_url_flag, key_flag
from turnbench.backends.replies import Redactor, error_detail, parse_completion
from turnbench.backends.retry import (
    FATAL_STATUS,
    RetryPolicy,
    TransientError,
    is_retryable_status,
    parse_duration,
    parse_retry_after,
)
from turnbench.backends.urls import url_secrets
from turnbench.errors import FatalBackendError, RequestFailedError
from turnbench.types import Completion, Message, RequestParams

__all__ = ["OpenAICompatBackend", "TransientError", "is_reasoning_model"]

# OpenAI's reasoning models reject `max_tokens` and `temperature`.
_REASONING_NAME = re.compile(r"^(o\d+(-[\w.-]+)?|gpt-5[\w.-]*)$")


def is_reasoning_model(name: str) -> bool:
    return bool(_REASONING_NAME.match(name.rsplit("/", 1)[-1]))


def refusal_message(role: str, url: str, status: int, key_source: str | None, detail: str) -> str:
    """Why an endpoint refused us (401/403/404), and what the user can do about it."""
    if status == 401 and key_source is None:
        why = (
            f"it answered HTTP 401 (a key is required) and no API key was sent to it: "
            f"$OPENAI_API_KEY goes only to the default endpoint ($OPENAI_BASE_URL, else "
            f"OpenAI). Name the variable holding this server's key with {key_flag(role)} VAR"
        )
    elif status == 401:
        why = f"it rejected the API key from ${key_source} (HTTP 401): check that variable"
    elif status == 403:
        why = "it refused access (HTTP 403): the key lacks permission for this model"
    else:
        why = (
            "it answered HTTP 404: the model name or the base URL is wrong "
            "(OpenAI-compatible servers usually want a base URL ending in /v1)"
        )
    said = f" Server said: {detail}." if detail else ""
    return f"the {role} endpoint {url}: {why}.{said}"


def chat_request_fields(params: RequestParams, reasoning: bool) -> dict[str, Any]:
    """The fields of one chat request beside the messages, live or in a batch: the sampling
    fields (a reasoning model gets max_completion_tokens and no temperature), log
    probabilities when asked, the user's extra fields, then the tools a driver offers (set
    last: extra fields never override them)."""
    fields: dict[str, Any] = {}
    if params.n is not None:
        fields["n"] = params.n
    if params.temperature is not None and not reasoning:
        fields["temperature"] = params.temperature
    if params.max_tokens is not None:
        fields["max_completion_tokens" if reasoning else "max_tokens"] = params.max_tokens
    if params.top_logprobs is not None:
        fields["logprobs"] = True
        fields["top_logprobs"] = params.top_logprobs
    fields.update(params.extra)
    if params.tools is not None:
        fields["tools"] = list(params.tools)
        if params.tool_choice is not None:
            fields["tool_choice"] = params.tool_choice
    return fields


def recorded_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """What a record keeps of the fields sent: the sampling fields as sent, the tools by
    name (their schemas are the benchmark's data, fixed by its checksums; kept whole they
    would repeat in every record of an agent's conversation)."""
    tools = fields.get("tools")
    if tools is None:
        return fields
    names = [str(tool.get("function", {}).get("name")) for tool in tools if isinstance(tool, dict)]
    return {**fields, "tools": names}


def wire_messages(messages: list[Message]) -> list[Message]:
    """The messages as OpenAI's chat API takes them: an assistant message that only calls
    tools has `"content": null`, as OpenAI's own clients send it. Text-only conversations
    go as they are (the same list: the hot path of every judgment)."""
    if not any("tool_calls" in message for message in messages):
        return messages
    sent: list[Any] = []
    for message in messages:
        if message.get("tool_calls") and not message.get("content"):
            message = {**message, "content": None}  # type: ignore[typeddict-item]
        sent.append(message)
    return sent


class OpenAICompatBackend:
    """Bounded-concurrency client over one or more replicas, retried by the project's one
    retry loop."""

    def __init__(
        self,
        spec: str,
        model_name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int | Literal["auto"] = 8,
        policy: RetryPolicy | None = None,
        token_param: str = "auto",
        role: str = "model",
        endpoints: Sequence[EndpointKey] | None = None,
        transport: Transport | None = None,
        cooldown: float = 5.0,
    ) -> None:
        self.spec = spec
        self.model_name = model_name
        self.role = role
        self.stats = BackendStats()
        self._policy = policy or RetryPolicy()
        self.adaptive = concurrency == "auto"
        if endpoints is None:
            endpoints = [EndpointKey(base_url or OPENAI_URL, api_key, None)]

        def limit() -> FixedLimit | AdaptiveLimit:
            if self.adaptive:
                return AdaptiveLimit(AUTO_INITIAL, maximum=AUTO_MAXIMUM)
            return FixedLimit(int(concurrency))

        self.pool = EndpointPool(
            [Endpoint(e.url, e.key, e.source, limit()) for e in endpoints], cooldown=cooldown
        )
        secrets: list[str] = []
        for endpoint in self.pool.endpoints:
            secrets += [endpoint.key or "", *url_secrets(endpoint.url)]
        self._redact = Redactor(secrets)
        self._fatal: FatalBackendError | None = None
        self._reasoning = token_param == "max_completion_tokens" or (
            token_param == "auto" and is_reasoning_model(model_name)
        )
        pool_size = sum(e.limit.ceiling for e in self.pool.endpoints)
        self._transport: Transport = transport or HttpTransport(
            pool_size=pool_size, timeout=self._policy.request_timeout
        )
        self._headers = {id(e): self.headers(e) for e in self.pool.endpoints}
        self._chat_urls = {id(e): self.chat_url(e) for e in self.pool.endpoints}

    # -- what is sent -------------------------------------------------------------------------
    @property
    def concurrency(self) -> int:
        """Requests in flight allowed now, over all endpoints (read by the runner)."""
        return self.pool.capacity

    @property
    def base_url(self) -> str:
        """The first endpoint, redacted (for messages)."""
        return self.pool.endpoints[0].shown

    def chat_url(self, endpoint: Endpoint) -> str:
        return endpoint.target.url("chat/completions")

    def models_url(self, endpoint: Endpoint) -> str:
        return endpoint.target.url("models")

    def headers(self, endpoint: Endpoint) -> dict[str, str]:
        """Authorization only when this endpoint has a key (see keys.py)."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"turnbench/{__version__}",
        }
        if endpoint.key:
            headers["Authorization"] = f"Bearer {endpoint.key}"
        return headers

    def basic_auth(self, endpoint: Endpoint) -> tuple[str, str] | None:
        """user:password@ of a base URL, sent as Basic auth when no key is (never both)."""
        target = endpoint.target
        if endpoint.key or target.username is None:
            return None
        return (target.username, target.password or "")

    def request_fields(self, params: RequestParams) -> dict[str, Any]:
        """The fields this backend sends for `params` beside the messages."""
        return chat_request_fields(params, self._reasoning)

    def payload(self, messages: list[Message], fields: dict[str, Any]) -> bytes:
        return json.dumps(
            {"model": self.model_name, "messages": wire_messages(messages), **fields}
        ).encode()

    # -- one request --------------------------------------------------------------------------
    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        fields = self.request_fields(params)
        body = self.payload(messages, fields)
        started = time.monotonic()
        request = _HttpRetrying(self, messages, params)
        completion = await request.run(partial(self._attempt, body, request), self._policy)
        completion.latency_s = round(time.monotonic() - started, 4)
        completion.sent_params = recorded_fields(fields)
        return completion

    async def _attempt(self, body: bytes, request: _HttpRetrying) -> Completion:
        """One attempt of `request`. Under adaptive concurrency a 429/503 keeps its endpoint
        slot (`request.held`) until the loop's backoff is over: a refusal comes back at
        once, and releasing the slot at once would turn the limit into a 429 loop."""
        endpoint = await self.pool.acquire()
        held = False
        try:
            if self._fatal is not None:  # another request already hit a fatal refusal
                raise self._fatal
            if request.attempts > 1:
                self.stats.retries += 1
            now = time.monotonic()
            if request.first_sent is None:
                request.first_sent = now
            endpoint.requests += 1
            self.stats.requests += 1
            try:
                reply = await self._transport.send(
                    "POST",
                    self._chat_urls[id(endpoint)],
                    headers=self._headers[id(endpoint)],
                    body=body,
                    basic_auth=self.basic_auth(endpoint),
                )
                completion = self._interpret(endpoint, reply)
            except asyncio.CancelledError:  # (on the wire: the server may answer and bill it)
                request.cancelled()
                raise
            except TransientError as error:
                self.pool.failed(
                    endpoint,
                    endpoint_failure=error.endpoint_failure,
                    congestion=self.adaptive and (error.congestion or error.kind == "timeout"),
                )
                if self.adaptive and error.congestion:
                    if error.retry_after is not None:
                        self.pool.pause(endpoint, min(error.retry_after, self._policy.max_wait))
                    request.held = endpoint
                    held = True
                raise
            except RequestFailedError:
                endpoint.failures += 1
                raise
            completion.endpoint = endpoint.shown
            self.pool.succeeded(endpoint, time.monotonic() - now)
            if self.adaptive:
                self._read_rate_limit(endpoint, reply)
            return completion
        finally:
            if not held:
                self.pool.release(endpoint)

    def _interpret(self, endpoint: Endpoint, reply: HttpReply) -> Completion:
        status = reply.status
        if 200 <= status < 300:
            return parse_completion(reply.body, self._redact)
        detail = error_detail(reply.body, self._redact)
        if status in FATAL_STATUS:
            self._fatal = FatalBackendError(
                f"{self.spec}: "
                + refusal_message(self.role, endpoint.shown, status, endpoint.key_source, detail)
                + " The run stopped at once."
            )
            raise self._fatal
        if is_retryable_status(status):
            raise TransientError(
                f"HTTP {status}: {detail}",
                parse_retry_after(reply.headers),
                kind="status",
                status=status,
            )
        if 300 <= status < 400:
            raise RequestFailedError(
                f"{self.spec}: HTTP {status}: the endpoint redirects elsewhere; give the final "
                f"URL with {base_url_flag(self.role)} (requests never follow redirects, so a "
                "key cannot leak to another host)",
                1,
            )
        raise RequestFailedError(f"{self.spec}: HTTP {status}: {detail}", 1)

    def _read_rate_limit(self, endpoint: Endpoint, reply: HttpReply) -> None:
        remaining = reply.headers.get("x-ratelimit-remaining-requests")
        if remaining is None or remaining.strip() != "0":
            return
        reset = parse_duration(reply.headers.get("x-ratelimit-reset-requests"))
        if reset is not None:
            self.pool.pause(endpoint, min(reset, self._policy.max_wait))

    # -- the rest of the contract -------------------------------------------------------------
    def endpoints_summary(self) -> list[dict[str, Any]]:
        """Per endpoint (URL redacted): requests sent and failed attempts, for provenance."""
        return self.pool.summary()

    async def aclose(self) -> None:
        await self._transport.aclose()


class _HttpRetrying(BackendRetrying):
    """One request of the OpenAI-compatible backend on the retry loop: what every live
    backend does (`BackendRetrying`), and what only this one does under adaptive
    concurrency. A 429/503 holds its endpoint slot (`held`, set by the attempt) through
    the backoff, which lasts about one round trip of the endpoint (at least the server's
    Retry-After), doubling with each refusal in a row (`congested`): a refused request
    occupies the endpoint like one in flight instead of being resent at once. The total
    time is counted from the first attempt sent, not from the wait for a slot."""

    def __init__(
        self, backend: OpenAICompatBackend, messages: list[Message], params: RequestParams
    ) -> None:
        super().__init__(
            backend.spec,
            backend.stats,
            backend._redact,
            messages,
            params,
            adaptive=backend.adaptive,
        )
        self.pool = backend.pool
        self.congested = 0  # refusals for congestion in a row (adaptive backoff)
        self.first_sent: float | None = None
        self.held: Endpoint | None = None  # the slot a congestion refusal keeps

    def failed(self, error: TransientError) -> None:
        if self.adaptive and error.congestion:
            self.congested += 1
        else:
            self.congested = 0
        super().failed(error)

    def delay(self, error: TransientError, policy: RetryPolicy) -> float:
        if self.adaptive and error.congestion:
            rtt = max(0.05, min(e.rtt for e in self.pool.endpoints) or 0.05)
            scale = min(2 ** max(0, self.congested - 1), 8)
            delay = rtt * scale * random.uniform(0.5, 1.5)
            return min(policy.max_wait, max(delay, error.retry_after or 0.0))
        return super().delay(error, policy)

    def since(self, started: float) -> float:
        return self.first_sent or started

    def waited(self) -> None:
        held, self.held = self.held, None
        if held is not None:
            self.pool.release(held)
