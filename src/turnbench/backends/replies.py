"""Turning a server's reply into a Completion that is safe to keep, whatever the server sent.

A reply is untrusted input: content may hold lone surrogates (which would crash a UTF-8
writer later), `usage` may be strings, floats, negative or absurd (negative usage would let
a run slip past --max-tokens-total), `content` may be null, and a hostile or buggy server
may echo our API key back. Everything here is pure and cheap: it runs once per reply.

Tool calls are read by one rule on every provider (OpenAI-compatible `tool_calls`,
Anthropic's `tool_use` blocks, both batch APIs; docs/running.md "Tool calls"): the first
MAX_TOOL_CALLS calls of a reply are kept, in order; a call needs a name (else the reply is
malformed, retried as a server's fault); an id is made when it has none; its arguments are
kept as the JSON text of what the model wrote (`arguments_text`), whatever its type or
depth, and judged where the call is run, so a call that cannot be run is an observation
the model sees, never a reply retried forever.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import secrets
from dataclasses import dataclass
from typing import Any

from turnbench.backends.retry import TransientError
from turnbench.safetext import fix_surrogates
from turnbench.textio import MAX_DEPTH
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


#: the most tool calls of one reply that are kept (a broken or hostile server sends
#: thousands): the first ones, in order; a driver that runs one call per reply
#: runs the first
MAX_TOOL_CALLS = 64
#: nesting beyond which a reply too deep for Python's JSON reader is cut (`loads_reply`)
REPLY_DEPTH = MAX_DEPTH
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_SURROGATE_CHAR = re.compile("[\ud800-\udfff]")
#: what stands for absent arguments (OpenAI-compatible servers leave them out of a call
#: without parameters)
NO_ARGUMENTS = "{}"


@dataclass(frozen=True)
class DeepJSON:
    """A value of a reply nested deeper than Python's JSON reader goes, kept as the raw
    text the server sent (`loads_reply`). Only a tool call's arguments may be one: they are
    the model's writing, kept and refused where the call is run; anywhere else it is no
    value the reply's reader accepts (not a string, not a list), so the reply is
    malformed."""

    text: str


def loads_reply(data: bytes | str) -> Any:
    """A reply's JSON, as Python reads it; ValueError when it is no JSON.

    A body nested thousands of levels deep (a tool call's arguments as a model wrote them)
    is more than Python's reader can take (RecursionError, which would end the run): then
    every value that opens deeper than REPLY_DEPTH is read as a `DeepJSON` holding its raw
    text, so the reply is read and the call kept. A body whose brackets do not balance stays
    unreadable (ValueError).
    """
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    try:
        return json.loads(text)
    except RecursionError:
        return _loads_cut(text, REPLY_DEPTH)


def _loads_cut(text: str, limit: int) -> Any:
    """`text` with every value opening below `limit` levels replaced by a unique string,
    read, and those strings replaced by `DeepJSON`s of the text they stood for."""
    marker = f"\0deep:{secrets.token_hex(8)}:"
    pieces: list[str] = []
    spans: list[str] = []
    depth = copied = start = 0
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if depth == limit + 1:
                start = match.start()
        else:
            if depth == limit + 1:
                pieces += [text[copied:start], json.dumps(f"{marker}{len(spans)}")]
                spans.append(text[start : match.end()])
                copied = match.end()
            depth -= 1
    pieces.append(text[copied:])
    try:
        value = json.loads("".join(pieces))
    except RecursionError:  # (unbalanced: the deep part never closed)
        raise ValueError("nested too deep, and its brackets do not balance") from None
    return _restore(value, marker, spans)


def _restore(value: Any, marker: str, spans: list[str]) -> Any:
    def deep(item: Any) -> Any:
        if isinstance(item, str) and item.startswith(marker):
            return DeepJSON(spans[int(item[len(marker) :])])
        return item

    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                item[key] = deep(inner)
                stack.append(item[key])
        elif isinstance(item, list):
            for index, inner in enumerate(item):
                item[index] = deep(inner)
                stack.append(item[index])
    return deep(value)


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def arguments_text(value: Any) -> str:
    """A tool call's arguments as the JSON text the model wrote: OpenAI's `arguments` is
    that text already (a string, kept as it is); anything else (Anthropic's `input`, an
    object some servers send in place of the text, or a value of the wrong type: an array,
    null, a string, a number) is written as its JSON text, so that the place that runs the
    call reads and judges it by one rule. A lone surrogate is written as its escape (as it
    would be in OpenAI's text), and a `DeepJSON` part as the text the server sent."""
    if isinstance(value, str):
        return value
    if isinstance(value, DeepJSON):
        return value.text
    cut: dict[str, str] = {}

    def raw(item: Any) -> str:
        if not isinstance(item, DeepJSON):
            raise TypeError(f"{type(item).__name__} is no JSON value")
        key = f"\0deep:{secrets.token_hex(8)}"
        cut[json.dumps(key)] = item.text
        return key

    text = json.dumps(value, ensure_ascii=False, default=raw)
    for stand_in, original in cut.items():
        text = text.replace(stand_in, original, 1)
    return _SURROGATE_CHAR.sub(_escape_surrogate, text)


def tool_call(index: int, name: Any, call_id: Any, arguments: Any, redact: Redactor) -> ToolCall:
    """One call of a reply by the rule both providers share (the module's docstring): a
    name is required (MalformedReplyError), an id is made from the call when it has none
    (some servers send none; the conversation needs one to answer it), the arguments are
    their JSON text."""
    if not isinstance(name, str) or not name:
        raise MalformedReplyError("malformed response: a tool call has no function name")
    text = arguments_text(arguments)
    if not isinstance(call_id, str) or not call_id:
        made = hashlib.sha256(f"{index}\0{name}\0{text}".encode(errors="replace"))
        call_id = f"call_{made.hexdigest()[:16]}"
    return ToolCall(
        id=fix_text(redact(call_id))[:200],
        name=fix_text(redact(name))[:200],
        arguments=fix_text(redact(text)),
    )


def parse_tool_calls(raw: Any, redact: Redactor) -> list[ToolCall]:
    """`message.tool_calls` of an OpenAI-style reply as typed calls (the first
    MAX_TOOL_CALLS); [] when absent. A list that is no list of call objects, or a call
    without a function name, is a malformed reply (retried: the server broke its format);
    absent arguments are `{}`."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise MalformedReplyError("malformed response: tool_calls is not a list")
    calls = []
    for index, item in enumerate(raw[:MAX_TOOL_CALLS]):
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict):
            raise MalformedReplyError("malformed response: a tool call has no function object")
        arguments = function.get("arguments", NO_ARGUMENTS)
        calls.append(tool_call(index, function.get("name"), item.get("id"), arguments, redact))
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
        data = loads_reply(body)
    except ValueError:
        start = body[:200].decode("utf-8", "replace")
        raise MalformedReplyError(
            f"malformed response: not JSON: {short_detail(start, redact, 120)}"
        ) from None
    return completion_of(data, redact)


def completion_of(data: Any, redact: Redactor) -> Completion:
    """A chat completion's parsed JSON -> Completion, or MalformedReplyError (a batch
    result's body, read already, and the live path's share this)."""
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
