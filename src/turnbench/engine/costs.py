"""Dollars during a run: what a logged record cost, and the most a request can cost.

`--max-cost USD` admits a request only when the dollars the run has spent (every
invocation's logged records, and the worst case of every attempt that returned nothing),
plus the worst case of every request in flight, plus the worst case of this one stay within
USD; and it admits every retry the same way, before it is sent. An attempt that returned
nothing (a timeout, a dropped connection, a 5xx) may still be billed by the provider, so it
counts at its worst case (`attempt_tokens`), whatever --max-attempts allows. The worst case
is a bound, not an estimate, so the limit is never crossed whatever the model answers:

- prompt tokens: at most one per UTF-8 byte of the messages (byte-level BPE tokenizers never
  make more), plus 4 per message and 3 for the reply's start (the chat format's overhead);
  a message's tool calls count by the bytes of their JSON (id, name, arguments) plus 8 each,
  a tool result by its call's id too, and the tools a request offers by the bytes of their
  JSON schemas plus 16 each (providers render them into the prompt more tersely); priced
  at the highest input price of the model (a prompt-cache write where that costs more than
  plain input);
- completion tokens: the request's whole token limit;
- a judgment: its first request and every re-ask it may need (`max_reasks`), each re-ask
  carrying the original prompt, the previous reply (at most its token limit) and the
  follow-up text; the first request at batch prices with --judge-batch, re-asks at live
  prices (they are sent live).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from turnbench.judging.formats import ReplyFormat
from turnbench.judging.judge import Judge
from turnbench.prices import ModelPrice, PriceTable
from turnbench.types import Message, RequestParams, Usage

CHARS_PER_TOKEN = 4  # rough estimate for --dry-run and missing usage (no tokenizer download)

MESSAGE_OVERHEAD = 4  # tokens a chat format adds per message (bounds OpenAI's and Anthropic's)
REPLY_PRIMING = 3
UNLIMITED_COMPLETION = 32_768  # the bound used when a request sets no token limit
TOOL_CALL_OVERHEAD = 8  # tokens a chat format adds around one tool call
TOOL_OVERHEAD = 16  # tokens a provider adds around one offered tool's definition


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def prompt_token_bound(
    messages: Sequence[Mapping[str, Any]], params: RequestParams | None = None
) -> int:
    """At most this many prompt tokens (see the module docstring)."""
    total = REPLY_PRIMING + MESSAGE_OVERHEAD * len(messages)
    for message in messages:
        total += _bytes(str(message.get("content") or ""))
        calls = message.get("tool_calls")
        if calls:
            total += _bytes(json.dumps(calls, ensure_ascii=False)) + TOOL_CALL_OVERHEAD * len(calls)
        if message.get("tool_call_id"):
            total += _bytes(str(message["tool_call_id"]))
    if params is not None and params.tools:
        offered = json.dumps(list(params.tools), ensure_ascii=False)
        total += _bytes(offered) + TOOL_OVERHEAD * len(params.tools)
    return total


def request_bound(
    price: ModelPrice, prompt_tokens: int, completion_tokens: int, *, batch: bool = False
) -> float:
    """The most one request with these token bounds can cost."""
    return price.bound(prompt_tokens, completion_tokens, batch=batch)


def attempt_tokens(messages: Sequence[Mapping[str, Any]], params: RequestParams) -> Usage:
    """The most tokens one attempt of a request can be billed for: its prompt bound and its
    whole token limit (the worst case of an attempt that returned nothing)."""
    return Usage(
        prompt_tokens=prompt_token_bound(messages, params),
        completion_tokens=params.max_tokens or UNLIMITED_COMPLETION,
    )


class CostMeter:
    """Prices of one invocation's roles, by name ("model", each judge id, "user", any role
    a driver names): `specs` the model each role's requests go to, `batched` the roles whose
    requests (a judgment's first) go into provider batches."""

    def __init__(
        self, prices: PriceTable, specs: Mapping[str, str], batched: frozenset[str] = frozenset()
    ) -> None:
        self.prices = prices
        self.specs = dict(specs)
        self.batched = batched
        self._price: dict[str, ModelPrice | None] = {
            name: prices.price_for(spec) for name, spec in self.specs.items()
        }

    def _price_of(self, role: str) -> ModelPrice | None:
        return self._price.get(role)

    def worst(
        self, role: str, messages: list[Message], params: RequestParams, asks: int = 1
    ) -> float:
        """The most one asking of `role` can cost: its request and `asks - 1` re-asks (a
        simulated user's, --strict-user), each holding the replies before it."""
        price = self._price_of(role)
        if price is None:
            return 0.0
        limit = params.max_tokens or UNLIMITED_COMPLETION
        prompt = prompt_token_bound(messages, params)
        total = request_bound(price, prompt, limit, batch=role in self.batched)
        for number in range(1, asks):
            total += request_bound(price, prompt + number * (limit + MESSAGE_OVERHEAD * 2), limit)
        return total

    def worst_judgment(self, judge: Judge, messages: list[Message], reply: ReplyFormat) -> float:
        price = self._price_of(judge.id)
        if price is None:
            return 0.0
        settings = judge.settings
        first, reask = judge.request_params(reply)
        first_limit = first.max_tokens or UNLIMITED_COMPLETION
        reask_limit = reask.max_tokens or UNLIMITED_COMPLETION
        prompt = prompt_token_bound(messages)
        total = request_bound(price, prompt, first_limit, batch=judge.id in self.batched)
        if reply.followup is None:
            return total
        followup = prompt_token_bound([{"content": reply.followup.text}])
        previous = first_limit
        for _ in range(max(0, settings.max_reasks)):
            reask_prompt = prompt + previous + MESSAGE_OVERHEAD + followup
            total += request_bound(price, reask_prompt, reask_limit)
            previous = reask_limit
        return total

    def bound(self, role: str, tokens: Usage) -> float:
        """The most attempts of `role` with these token bounds (`attempt_tokens`) can cost,
        at live prices (retries are sent live); 0 for a model without a price."""
        price = self._price_of(role)
        return 0.0 if price is None else price.bound(tokens.prompt_tokens, tokens.completion_tokens)

    def cost(self, role: str, usage: Usage, batch: Usage | None = None) -> float:
        """What a logged record of `role` cost (0 for a model without a price)."""
        spec = self.specs.get(role)
        if spec is None:
            return 0.0
        return self.prices.role_cost(spec, usage, batch) or 0.0
