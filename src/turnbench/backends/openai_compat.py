"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp server, TGI).

The hot path is a plain HTTP client (see http.py): the request body is built with
json.dumps from the messages and the sampling fields, the reply parsed and sanitised by
replies.py, and this module owns the single retry layer, the choice of replica
(endpoints.py) and what each status means:

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
from dataclasses import dataclass
from typing import Any, Literal

from turnbench import __version__
from turnbench.backends.attempts import cancelled_in_flight, current_gate, may_be_billed
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
from turnbench.backends.replies import Redactor, error_detail, parse_completion, short_detail
from turnbench.backends.retry import (
    FATAL_STATUS,
    RetryPolicy,
    TransientError,
    backoff_delay,
    is_retryable_status,
    parse_duration,
    parse_retry_after,
)
from turnbench.backends.urls import url_secrets
from turnbench.errors import AttemptRefusedError, FatalBackendError, RequestFailedError
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


@dataclass
class _Attempts:
    sent: int = 0  # requests sent for this completion
    counted: int = 0  # those that count against --max-attempts
    congested: int = 0  # 429/503 in a row (adaptive backoff)
    first_sent: float | None = None


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
    """Bounded-concurrency client over one or more replicas, with the project's single
    retry layer."""

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

    # -- the retry loop -----------------------------------------------------------------------
    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        fields = self.request_fields(params)
        body = self.payload(messages, fields)
        started = time.monotonic()
        state = _Attempts()
        retrying = False
        gate = current_gate()
        try:
            while True:
                on_the_wire = state.sent
                try:
                    completion = await self._attempt(body, state)
                    break
                except asyncio.CancelledError:
                    if gate is not None and state.sent > on_the_wire:
                        cancelled_in_flight(gate, messages, params)
                    raise
                except TransientError as error:
                    held: Endpoint | None = getattr(error, "held", None)
                    try:
                        message = short_detail(str(error), self._redact)
                        self.stats.last_error = message
                        billed = gate is not None and may_be_billed(error)
                        if gate is not None and billed:
                            gate.unanswered(messages, params, message)
                        if not retrying:
                            retrying = True
                            self.stats.retrying += 1
                        delay = self._delay(error, state)
                        spent = time.monotonic() - (state.first_sent or started)
                        if self._policy.gives_up(state.counted, spent, delay):
                            self.stats.failures += 1
                            raise RequestFailedError(
                                f"{self.spec}: gave up after {state.sent} attempts: {message}",
                                state.sent,
                            ) from None
                        refused = None
                        if gate is not None and billed:
                            refused = gate.retry(messages, params)
                        if refused is not None:
                            self.stats.failures += 1
                            raise AttemptRefusedError(
                                f"{self.spec}: not retried after {state.sent} attempts "
                                f"({refused}); the last: {message}",
                                state.sent,
                                refused,
                            ) from None
                        await asyncio.sleep(delay)
                    finally:
                        if held is not None:
                            self.pool.release(held)
                except RequestFailedError as error:
                    self.stats.failures += 1
                    self.stats.last_error = error.message
                    raise RequestFailedError(error.message, state.sent) from None
        finally:
            if retrying:
                self.stats.retrying -= 1
        completion.attempts = state.sent
        self.stats.add_usage(completion.usage)
        completion.latency_s = round(time.monotonic() - started, 4)
        completion.sent_params = recorded_fields(fields)
        return completion

    def _delay(self, error: TransientError, state: _Attempts) -> float:
        if self.adaptive and error.congestion:
            # about one round trip (at least the server's Retry-After), while holding the
            # slot (see _attempt), so that a refused request occupies the endpoint like one
            # in flight instead of being resent at once
            rtt = max(0.05, min(e.rtt for e in self.pool.endpoints) or 0.05)
            scale = min(2 ** max(0, state.congested - 1), 8)
            delay = rtt * scale * random.uniform(0.5, 1.5)
            return min(self._policy.max_wait, max(delay, error.retry_after or 0.0))
        return backoff_delay(self._policy, state.counted, error.retry_after)

    async def _attempt(self, body: bytes, state: _Attempts) -> Completion:
        """One request. Under adaptive concurrency a 429/503 keeps its endpoint slot (the
        error's `held`) until the caller's backoff is over: a refusal comes back at once,
        and releasing the slot at once would turn the limit into a 429 loop."""
        endpoint = await self.pool.acquire()
        held = False
        try:
            if self._fatal is not None:  # another request already hit a fatal refusal
                raise self._fatal
            state.sent += 1
            if state.sent > 1:
                self.stats.retries += 1
            now = time.monotonic()
            if state.first_sent is None:
                state.first_sent = now
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
            except TransientError as error:
                self._count(state, error)
                self.pool.failed(
                    endpoint,
                    endpoint_failure=error.endpoint_failure,
                    congestion=self.adaptive and (error.congestion or error.kind == "timeout"),
                )
                if self.adaptive and error.congestion:
                    if error.retry_after is not None:
                        self.pool.pause(endpoint, min(error.retry_after, self._policy.max_wait))
                    error.held = endpoint  # type: ignore[attr-defined]
                    held = True
                raise
            except RequestFailedError:
                endpoint.failures += 1
                raise
            state.congested = 0
            completion.endpoint = endpoint.shown
            self.pool.succeeded(endpoint, time.monotonic() - now)
            if self.adaptive:
                self._read_rate_limit(endpoint, reply)
            return completion
        finally:
            if not held:
                self.pool.release(endpoint)

    def _count(self, state: _Attempts, error: TransientError) -> None:
        if self.adaptive and error.congestion:
            state.congested += 1
        else:
            state.counted += 1
            state.congested = 0

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
