"""`anthropic/MODEL`: Claude through Anthropic's own Messages API and the `anthropic` SDK.

Why not the OpenAI-compatible endpoint: the native API reports prompt-cache reads and writes
(priced differently), lets the shared judge instructions be cached, and has the Message
Batches API. The SDK is an optional extra (`pip install 'turnbench[anthropic]'`), imported
only when an `anthropic/...` spec is used.

Request mapping (`build_request`):
- system messages (and OpenAI's "developer" role) go to the separate `system` field, one
  text block each, in their original order. The Messages API has no system role inside the
  conversation, so a system message found after the first user turn is moved there too:
  it keeps system authority and the user/assistant turns stay as they were.
- `max_tokens` is required by the API: `params.max_tokens`, else `DEFAULT_MAX_TOKENS`.
- `temperature` only when given, sent as a body field (SDK 1.0 removed the typed argument).
  Some recent models reject it ("`temperature` is deprecated for this model"); on that
  HTTP 400 the backend drops it for the rest of the run and resends; every completion's
  `sent_params` records what was really sent.
- prompt caching: when the system text is at least `CACHE_MIN_CHARS` characters, its last
  block carries `cache_control: {"type": "ephemeral"}`, so instructions shared by many
  requests (a judge rubric, the model's --system-prompt) are read from the cache at a tenth
  of the input price (a write costs 1.25x, once per 5 minutes of use). The API caches only
  prefixes of at least a model's minimum length (1,024 tokens on most Sonnet/Opus models,
  2,048 or 4,096 on some others) and silently ignores the mark below it, without error or
  surcharge. `CACHE_MIN_CHARS` = 3,072 characters: the shortest text that can hold 1,024
  tokens at a dense ~3 characters per token (English prose is ~4), so every system prompt
  that could reach the smallest minimum is marked and obviously short ones are not.
  MT-Bench-101's judge system prompts are 2,433-4,025 characters (measured), so the longer
  rubrics are marked; MT-Bench's judge puts its instructions in the user message.

Tools (`conversation`, `tool_fields`): OpenAI-shaped tools, tool calls and tool results
become Anthropic's `tools` (`input_schema`), `tool_use` blocks and `tool_result` blocks
(consecutive results merged into one user turn).

Response mapping (`to_completion`): text = the text blocks joined (thinking blocks are left
out), `tool_use` blocks as typed tool calls by the rule the OpenAI-compatible path shares
(`replies.tool_call`: the first 64 kept, `input` as its JSON text whatever its type), stop
reasons mapped by `FINISH_REASONS` (unknown ones pass through), usage with the cache counts
added back into `prompt_tokens` (Anthropic's `input_tokens` excludes them).
`top_logprobs` is ignored: the Messages API does not return log probabilities.

The SDK builds and sends each request, and maps HTTP errors; the reply's body is read by
turnbench (`replies.loads_reply`), as the OpenAI-compatible path reads its own: an `input`
nested 10,000 levels deep is a call refused where it is run, not a RecursionError in the
SDK's parse that ends the run. A request the SDK cannot encode (a value no JSON holds) was
never sent: it fails at once, not retried and not counted as an attempt a provider may bill.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, Literal

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
from turnbench.backends.replies import (
    MAX_TOOL_CALLS,
    NO_ARGUMENTS,
    MalformedReplyError,
    Redactor,
    fix_text,
    loads_reply,
    short_detail,
    tool_call,
)
from turnbench.backends.retry import RetryPolicy, TransientError
from turnbench.backends.sdk_calls import classify_sdk_error, sdk_error_detail
from turnbench.backends.sdk_transport import sdk_http_client
from turnbench.errors import FatalBackendError, RequestFailedError, UserError
from turnbench.safetext import fix_tree
from turnbench.textio import loads_strict_json
from turnbench.types import Completion, Message, RequestParams, ToolCall, Usage

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"  # the anthropic-version header the SDK sends (for the endpoint check)
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_TOKENS = 4096  # every current Claude model can produce at least this many
CACHE_MIN_CHARS = 3072
INSTALL_HINT = "pip install 'turnbench[anthropic]'"

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
    "tool_use": "tool_calls",
}
SYSTEM_ROLES = frozenset({"system", "developer"})


def import_sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise UserError(
            f"anthropic/... models need the anthropic SDK, which is not installed. "
            f"Install it with: {INSTALL_HINT}"
        ) from None
    return anthropic


def system_blocks(messages: list[Message], *, cache: bool) -> list[dict[str, Any]]:
    """The `system` field: one text block per non-empty system message, the last one marked
    for prompt caching when the system text is long enough to be cached."""
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": m["content"]}
        for m in messages
        if m["role"] in SYSTEM_ROLES and m["content"]
    ]
    if cache and blocks and sum(len(b["text"]) for b in blocks) >= CACHE_MIN_CHARS:
        blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return blocks


def sampling_fields(params: RequestParams, *, drop_temperature: bool = False) -> dict[str, Any]:
    """The fields that shape the reply, as sent (recorded as the completion's provenance)."""
    if params.n not in (None, 1):
        raise UserError(f"the Anthropic API returns one reply per request; n={params.n} asked")
    fields: dict[str, Any] = {
        "max_tokens": params.max_tokens if params.max_tokens is not None else DEFAULT_MAX_TOKENS
    }
    if params.temperature is not None and not drop_temperature:
        fields["temperature"] = params.temperature
    fields.update(params.extra)
    return fields


def _tool_input(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as Anthropic's `input` object. Arguments the call's runner
    refused (no JSON object by RFC 8259, nested more than 100 levels: the model wrote them
    wrong, and its tool result said so) go as `{}`: the API takes an object only, a NaN
    could not even be encoded, and the conversation goes on as recorded. Lone surrogates
    become U+FFFD (the request is UTF-8)."""
    try:
        value = loads_strict_json(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return fix_tree(value) if isinstance(value, dict) else {}


def conversation(messages: list[Message]) -> list[dict[str, Any]]:
    """The turns of the Messages API: user and assistant text as they are; an assistant
    message with tool calls as content blocks (its text, when it has some, then one
    `tool_use` block per call); consecutive tool results as ONE user message of
    `tool_result` blocks (the API wants them in the turn right after the calls). A
    text-only conversation is exactly what it always was."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role in SYSTEM_ROLES:
            continue
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id", ""),
                "content": message["content"],
            }
            last = turns[-1] if turns else None
            if last is not None and last.get("tool_results"):
                last["content"].append(block)
            else:
                turns.append({"role": "user", "content": [block], "tool_results": True})
            continue
        calls = message.get("tool_calls") if role == "assistant" else None
        if not calls:
            turns.append({"role": role, "content": message["content"]})
            continue
        blocks: list[dict[str, Any]] = []
        if message["content"]:
            blocks.append({"type": "text", "text": message["content"]})
        for call in calls:
            function = call["function"]
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": function["name"],
                    "input": _tool_input(function["arguments"]),
                }
            )
        turns.append({"role": "assistant", "content": blocks})
    for turn in turns:
        turn.pop("tool_results", None)
    return turns


def tool_fields(params: RequestParams) -> dict[str, Any]:
    """The tools a driver offers, in Anthropic's shape: each OpenAI function tool as
    {"name", "description", "input_schema"}; `tool_choice` "auto", "required", "none" or
    one named tool as {"type": "auto" | "any" | "none" | "tool"}."""
    if params.tools is None:
        return {}
    tools = []
    for tool in params.tools:
        function = tool.get("function", tool)
        entry = {
            "name": function["name"],
            "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
        }
        if function.get("description"):
            entry["description"] = function["description"]
        tools.append(entry)
    fields: dict[str, Any] = {"tools": tools}
    choice = params.tool_choice
    if isinstance(choice, str):
        fields["tool_choice"] = {"type": {"required": "any"}.get(choice, choice)}
    elif isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        fields["tool_choice"] = {"type": "tool", "name": name}
    return fields


def build_request(
    model: str,
    messages: list[Message],
    params: RequestParams,
    *,
    cache: bool = True,
    drop_temperature: bool = False,
) -> dict[str, Any]:
    """The whole Messages API request body (also one Message Batches `params` object)."""
    body: dict[str, Any] = {"model": model, "messages": conversation(messages)}
    system = system_blocks(messages, cache=cache)
    if system:
        body["system"] = system
    body.update(sampling_fields(params, drop_temperature=drop_temperature))
    body.update(tool_fields(params))  # (after the extra fields: a driver's tools stand)
    return body


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _count(obj: Any, name: str) -> int:
    value = _get(obj, name, 0)
    return int(value) if isinstance(value, int) and value > 0 else 0


def to_usage(usage: Any) -> Usage:
    read = _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    return Usage(
        prompt_tokens=_count(usage, "input_tokens") + read + written,
        completion_tokens=_count(usage, "output_tokens"),
        cached_prompt_tokens=read,
        cache_creation_tokens=written,
    )


_NO_SECRETS = Redactor()  # (clean_reply redacts every text kept, the calls' included)
_NO_INPUT: Any = object()


def _input(block: Any) -> Any:
    """A `tool_use` block's `input` as `replies.tool_call` takes arguments: the value
    itself, but a string as its JSON text (Anthropic's input is a value, never the text of
    one: a string is a wrong value, refused where the call is run, as an array or null is);
    absent, no arguments."""
    given = _get(block, "input", _NO_INPUT)
    if given is _NO_INPUT:
        return NO_ARGUMENTS
    return json.dumps(given, ensure_ascii=False) if isinstance(given, str) else given


def to_completion(message: Any) -> Completion:
    """A Messages API reply (SDK object or plain dict) as a Completion; its tool calls by
    the rule every provider shares (`replies.tool_call`)."""
    content = _get(message, "content")
    if not isinstance(content, list):
        raise TransientError(
            "malformed response: the message has no content list", kind="malformed"
        )
    texts = [_get(block, "text") for block in content if _get(block, "type") == "text"]
    if any(not isinstance(text, str) for text in texts):
        raise TransientError("malformed response: a text block without text", kind="malformed")
    text = "".join(texts)
    uses = [block for block in content if _get(block, "type") == "tool_use"]
    calls = [
        tool_call(index, _get(block, "name"), _get(block, "id"), _input(block), _NO_SECRETS)
        for index, block in enumerate(uses[:MAX_TOOL_CALLS])
    ]
    stop = _get(message, "stop_reason")
    return Completion(
        text=text,
        tool_calls=calls,
        finish_reason=FINISH_REASONS.get(stop, stop) if isinstance(stop, str) else None,
        usage=to_usage(_get(message, "usage")),
        reported_model=_get(message, "model"),
    )


def clean_reply(completion: Completion, redact: Callable[[str], str]) -> Completion:
    """Server text made safe to keep (live replies and batch results alike): secrets
    redacted, lone surrogates replaced, short fields bounded."""
    completion.text = fix_text(redact(completion.text))
    completion.tool_calls = [
        ToolCall(
            id=fix_text(redact(call.id))[:200],
            name=fix_text(redact(call.name))[:200],
            arguments=fix_text(redact(call.arguments)),
        )
        for call in completion.tool_calls
    ]
    for name in ("finish_reason", "reported_model"):
        value = getattr(completion, name)
        if isinstance(value, str):
            setattr(completion, name, fix_text(redact(value))[:200])
        elif value is not None:
            setattr(completion, name, None)
    return completion


def fatal_message(
    spec: str, endpoint: str, key_env: str, status: int, detail: str, key_sent: bool = True
) -> str:
    if status == 401 and not key_sent:
        why = (
            "it answered HTTP 401 (a key is required) and no API key was sent to it: "
            f"${ANTHROPIC_KEY_ENV} goes only to Anthropic's API (or $ANTHROPIC_BASE_URL). Name "
            "the variable holding this server's key with --model-api-key-env / "
            "--judge-api-key-env"
        )
    elif status == 401:
        why = (
            f"the endpoint rejected the API key (HTTP 401). Check {key_env} (or the variable "
            "named by --model-api-key-env / --judge-api-key-env)"
        )
    elif status == 403:
        why = "the endpoint refused access (HTTP 403): the key lacks permission for this model"
    else:
        why = "the endpoint answered HTTP 404: the model name or the base URL is wrong"
    return f"{spec} at {endpoint}: {why}. Server said: {detail}. The run stopped at once."


def unencodable(body: dict[str, Any]) -> str | None:
    """Why the SDK could not encode a request body, or None: it writes JSON without NaN or
    Infinity, as UTF-8 (no lone surrogate), with Python's encoder (no integer of more than
    4,300 digits, no nesting deeper than its recursion goes). Checked before the SDK is
    called: the SDK's own failure would look like an attempt that was sent."""
    try:
        json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, TypeError, RecursionError) as error:
        return f"it cannot be encoded as JSON ({short_detail(str(error), Redactor(), 160)})"
    return None


def _rejects_temperature(error: Exception, sdk: Any) -> bool:
    if not isinstance(error, sdk.APIStatusError) or error.status_code != 400:
        return False
    return "temperature" in str(getattr(error, "message", "") or error).lower()


class AnthropicBackend:
    """Bounded-concurrency Messages API client, retried by the project's one retry loop
    with the hooks every live backend shares (`attempts.BackendRetrying`).

    `concurrency="auto"` adapts the requests in flight like the OpenAI-compatible backend
    (the same limit and endpoint pool): 429, 503 and 529 lower it and do not use up
    `--max-attempts`; the deadline still bounds them.
    """

    def __init__(
        self,
        spec: str,
        model_name: str,
        *,
        api_key: str | None,
        base_url: str,
        concurrency: int | Literal["auto"],
        policy: RetryPolicy,
        key_env: str = ANTHROPIC_KEY_ENV,
        prompt_cache: bool = True,
        role: str = "model",
    ) -> None:
        from turnbench.backends.urls import display_url

        self._sdk = import_sdk()
        self.spec = spec
        self.model_name = model_name
        self.role = role
        self.stats = BackendStats()
        self.adaptive = concurrency == "auto"
        limit: FixedLimit | AdaptiveLimit = (
            AdaptiveLimit(AUTO_INITIAL, maximum=AUTO_MAXIMUM)
            if self.adaptive
            else FixedLimit(max(1, int(concurrency)))
        )
        # one endpoint: the pool bounds and adapts what is in flight; its key is used only by
        # the endpoint check before work (requests go through the SDK, which has its own)
        self.pool = EndpointPool([Endpoint(base_url, api_key, key_env if api_key else None, limit)])
        self.prompt_cache = prompt_cache
        self._policy = policy
        self._key_env = key_env
        self._redact = Redactor([api_key] if api_key else [])
        self._fatal: FatalBackendError | None = None
        self._drop_temperature = False
        # The key is always passed explicitly (a placeholder for keyless servers), so the SDK
        # never falls back to credentials from the environment or profile files, which
        # would then be sent to this base URL.
        # Its bytes move through turnbench's own transport (sdk_transport.py): the reply's
        # decoded size capped, redirects never followed, proxies as for every backend.
        self._client = self._sdk.AsyncAnthropic(
            api_key=api_key or "no-key",
            base_url=base_url,
            max_retries=0,
            timeout=policy.request_timeout,
            http_client=sdk_http_client(pool_size=limit.ceiling, timeout=policy.request_timeout),
        )
        self.endpoint = display_url(base_url) or ""

    # -- the endpoint check before work (turnbench.backends.preflight) ----------------------
    def models_url(self, endpoint: Endpoint) -> str:
        return endpoint.url.rstrip("/") + "/v1/models"

    def headers(self, endpoint: Endpoint) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if endpoint.key:
            headers["x-api-key"] = endpoint.key
        return headers

    def basic_auth(self, endpoint: Endpoint) -> None:
        return None

    def request_fields(self, params: RequestParams) -> dict[str, Any]:
        return sampling_fields(params, drop_temperature=self._drop_temperature)

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        body = build_request(self.model_name, messages, params, cache=self.prompt_cache)
        problem = unencodable(body)
        if problem is not None:  # (never sent: no attempt, no retry, nothing billed)
            self.stats.failures += 1
            raise RequestFailedError(f"{self.spec}: the request was not sent: {problem}", 0)
        started = time.monotonic()
        sent: dict[str, Any] = {}
        request = BackendRetrying(
            self.spec, self.stats, self._redact, messages, params, adaptive=self.adaptive
        )

        async def attempt() -> Completion:
            if request.attempts > 1:
                self.stats.retries += 1
            try:
                return await self._send(messages, params, sent)
            except asyncio.CancelledError:
                # (also while waiting for a connection slot: the books err on the budget's side)
                request.cancelled()
                raise

        completion = await request.run(attempt, self._policy)
        completion.sent_params = dict(sent)
        completion.latency_s = round(time.monotonic() - started, 4)
        completion.endpoint = self.endpoint or None
        return completion

    async def _send(
        self, messages: list[Message], params: RequestParams, sent: dict[str, Any]
    ) -> Completion:
        """One attempt; `sent` gets the sampling fields it carried."""
        body = build_request(
            self.model_name,
            messages,
            params,
            cache=self.prompt_cache,
            drop_temperature=self._drop_temperature,
        )
        sent.clear()
        sent.update(sampling_fields(params, drop_temperature=self._drop_temperature))
        if params.tools is not None:  # (by name, as the OpenAI-compatible path records them)
            sent["tools"] = [tool["name"] for tool in body["tools"]]
        return await self._attempt(body)

    async def _create(self, typed: dict[str, Any], extra: dict[str, Any]) -> bytes:
        """One Messages API call through the SDK; the reply's body as it came (read by
        turnbench, not by the SDK's JSON parser)."""
        raw = await self._client.messages.with_raw_response.create(
            **typed, extra_body=extra or None
        )
        body: bytes = await raw.read()
        return body

    async def _attempt(self, body: dict[str, Any]) -> Completion:
        typed = {k: body[k] for k in ("model", "messages", "max_tokens", "system") if k in body}
        extra = {k: v for k, v in body.items() if k not in typed}
        endpoint = await self.pool.acquire()
        try:
            if self._fatal is not None:  # another request already hit a fatal refusal
                raise self._fatal
            self.stats.requests += 1
            endpoint.requests += 1
            sent = time.monotonic()
            try:
                # the whole attempt, not one socket read: a server that trickles its body
                # one byte at a time is cut at --request-timeout
                reply = await asyncio.wait_for(
                    self._create(typed, extra), self._policy.request_timeout
                )
            except asyncio.TimeoutError:
                raise TransientError("timed out", kind="timeout") from None
            except Exception as error:
                if "temperature" in extra and _rejects_temperature(error, self._sdk):
                    self._drop_temperature = True
                    raise TransientError(
                        f"model rejects temperature ({sdk_error_detail(error, self._redact)}); "
                        "resending without it",
                        retry_after=0.0,
                        status=400,
                        billed=False,  # a 400: refused before any work
                    ) from None
                mapped = classify_sdk_error(
                    error,
                    self._sdk,
                    what=self.spec,
                    redact=self._redact,
                    fatal_message=lambda status, detail: fatal_message(
                        self.spec,
                        self.endpoint,
                        self._key_env,
                        status,
                        detail,
                        key_sent=endpoint.key is not None,
                    ),
                )
                if isinstance(mapped, FatalBackendError):
                    self._fatal = mapped
                raise mapped from None
            try:
                message = loads_reply(reply)
            except ValueError:
                start = short_detail(reply[:200].decode("utf-8", "replace"), self._redact, 120)
                raise MalformedReplyError(f"malformed response: not JSON: {start}") from None
            # a key echoed back by the server never reaches the log or the terminal
            completion = clean_reply(to_completion(message), self._redact)
        except TransientError as error:
            congested = self.adaptive and (error.congestion or error.kind == "timeout")
            self.pool.failed(endpoint, endpoint_failure=False, congestion=congested)
            if congested and error.retry_after:
                self.pool.pause(endpoint, min(error.retry_after, self._policy.max_wait))
            raise
        except RequestFailedError:
            endpoint.failures += 1
            raise
        finally:
            self.pool.release(endpoint)
        self.pool.succeeded(endpoint, time.monotonic() - sent)
        return completion

    async def aclose(self) -> None:
        await self._client.close()
