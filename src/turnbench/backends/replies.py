"""Turning a server's reply into a Completion that is safe to keep, whatever the server sent.

A reply is untrusted input: content may hold lone surrogates (which would crash a UTF-8
writer later), `usage` may be strings, floats, negative or absurd (negative usage would let
a run slip past --max-tokens-total), `content` may be null, and a hostile or buggy server
may echo our API key back. Everything here is pure and cheap: it runs once per reply.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from turnbench.backends.retry import TransientError
from turnbench.safetext import fix_surrogates
from turnbench.types import Completion, TokenLogprob, ToolCall, TopLogprob, Usage

# no single request is billed this many tokens; a larger count is a broken or hostile server
MAX_TOKENS_PER_REQUEST = 10_000_000
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class MalformedReplyError(TransientError):
    """A 2xx reply that is not a usable chat completion: retried like a dropped connection."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="malformed")


fix_text = fix_surrogates  # lone surrogates (valid JSON escapes, invalid Unicode) -> U+FFFD


class Redactor:
    """Replaces secrets (the key, credentials of the base URL) with *** in server text."""

    def __init__(self, secrets: list[str] | tuple[str, ...] = ()) -> None:
        unique = {s for s in secrets if s and len(s) >= 4}
        self.secrets = sorted(unique, key=len, reverse=True)  # longest first: no prefix left

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text


def short_detail(text: str, redact: Redactor, limit: int = 300) -> str:
    """A server's message made fit for logs and terminals: redacted (before shortening, so
    no prefix of a secret survives), control characters removed, whitespace collapsed."""
    text = _CONTROL.sub(" ", fix_text(redact(str(text))))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def token_count(value: Any) -> int:
    """A usage count if it is a plausible one, else 0 (never negative, never absurd)."""
    if type(value) is int and 0 <= value <= MAX_TOKENS_PER_REQUEST:
        return value
    return 0


def parse_usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    prompt = token_count(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = token_count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    # model_construct: the counts are checked above, and this runs once per request
    return Usage.model_construct(
        prompt_tokens=prompt,
        completion_tokens=token_count(raw.get("completion_tokens")),
        cached_prompt_tokens=min(cached, prompt),
        cache_creation_tokens=0,
    )


def _logprob(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value <= 0.0 else None


def parse_logprobs(raw: Any) -> list[TokenLogprob] | None:
    """OpenAI's `choices[0].logprobs.content`; None when absent. Malformed entries are
    dropped rather than failing a reply that is otherwise fine."""
    if not isinstance(raw, dict):
        return None
    content = raw.get("content")
    if not isinstance(content, list):
        return None
    tokens: list[TokenLogprob] = []
    for item in content:
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            continue
        logprob = _logprob(item.get("logprob"))
        if logprob is None:
            continue
        top = []
        for alt in item.get("top_logprobs") or []:
            if isinstance(alt, dict) and isinstance(alt.get("token"), str):
                alt_logprob = _logprob(alt.get("logprob"))
                if alt_logprob is not None:
                    top.append(TopLogprob(token=fix_text(alt["token"]), logprob=alt_logprob))
        tokens.append(TokenLogprob(token=fix_text(item["token"]), logprob=logprob, top=top))
    return tokens


def _optional_text(value: Any, redact: Redactor) -> str | None:
    return fix_text(redact(value))[:200] if isinstance(value, str) else None


#: the most tool calls one reply may carry (a broken or hostile server sends thousands)
MAX_TOOL_CALLS = 64


def parse_tool_calls(raw: Any, redact: Redactor) -> list[ToolCall]:
    """`message.tool_calls` of an OpenAI-style reply as typed calls; [] when absent. A call
    without a function name, or with arguments that are neither a string nor an object, is
    a malformed reply (retried); a call without an id gets one made from its content (some
    servers send none; the conversation needs one to answer it)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_TOOL_CALLS:
        raise MalformedReplyError("malformed response: tool_calls is not a list of calls")
    calls = []
    for index, item in enumerate(raw):
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise MalformedReplyError("malformed response: a tool call has no function name")
        arguments = function.get("arguments", "{}")  # type: ignore[union-attr]
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments, ensure_ascii=False)
        if not isinstance(arguments, str):
            raise MalformedReplyError("malformed response: a tool call's arguments are no text")
        call_id = item.get("id")
        if not isinstance(call_id, str) or not call_id:
            made = hashlib.sha256(f"{index}\0{name}\0{arguments}".encode()).hexdigest()[:16]
            call_id = f"call_{made}"
        calls.append(
            ToolCall(
                id=fix_text(redact(call_id))[:200],
                name=fix_text(redact(name))[:200],
                arguments=fix_text(redact(arguments)),
            )
        )
    return calls


def _content(message: Any, redact: Redactor, calls: bool = False) -> str:
    if not isinstance(message, dict):
        raise MalformedReplyError("malformed response: the choice has no message")
    content = message.get("content")
    if content is None and calls:  # (a reply that only calls tools has no text)
        return ""
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        if parts and all(isinstance(p, str) for p in parts):
            content = "".join(parts)  # type: ignore[arg-type]
    if not isinstance(content, str):
        refusal = message.get("refusal")
        why = (
            f" (refusal: {short_detail(refusal, redact, 120)})" if isinstance(refusal, str) else ""
        )
        raise MalformedReplyError(f"malformed response: the message content is null{why}")
    return fix_text(redact(content))


def parse_completion(body: bytes, redact: Redactor) -> Completion:
    """A chat completion body -> Completion, or MalformedReplyError (retried)."""
    try:
        data = json.loads(body.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        start = body[:200].decode("utf-8", "replace")
        raise MalformedReplyError(
            f"malformed response: not JSON: {short_detail(start, redact, 120)}"
        ) from None
    if not isinstance(data, dict):
        raise MalformedReplyError("malformed response: not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedReplyError("response has no choices")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise MalformedReplyError("malformed response: the choice is not an object")
    message = choice.get("message")
    calls = parse_tool_calls(message.get("tool_calls"), redact) if isinstance(message, dict) else []
    text = _content(message, redact, bool(calls))
    # every field is checked or sanitised above: skip pydantic's second pass (hot path);
    # every field is given, so no default factory runs (pydantic inspects a factory's
    # signature each time it calls one)
    return Completion.model_construct(
        text=text,
        tool_calls=calls,
        finish_reason=_optional_text(choice.get("finish_reason"), redact),
        usage=parse_usage(data.get("usage")),
        reported_model=_optional_text(data.get("model"), redact),
        system_fingerprint=_optional_text(data.get("system_fingerprint"), redact),
        sent_params={},
        attempts=1,
        latency_s=0.0,
        logprobs=parse_logprobs(choice.get("logprobs")),
        endpoint=None,
    )


def error_detail(body: bytes, redact: Redactor) -> str:
    """The message of an error reply (`error.message` when JSON, else the text)."""
    text = body[:4000].decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return short_detail(text, redact) or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return short_detail(error["message"], redact)
        if isinstance(error, str):
            return short_detail(error, redact)
        if isinstance(data.get("message"), str):
            return short_detail(data["message"], redact)
    return short_detail(text, redact)
