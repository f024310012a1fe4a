"""`--dry-run`: what a plan would send and what it would cost, with nothing sent.

Each driver sizes its own jobs from the plan (`Driver.estimate`); this module holds the
counts they add to, by role name (the model under test, each judge, the simulated user,
any role a driver names), and the one way every driver measures a request's size: every
message's text, each tool call's name and arguments, and the tools a request offers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnbench.engine.costs import CHARS_PER_TOKEN
from turnbench.types import RequestParams

MODEL, USER = "model", "user"


@dataclass
class RoleCount:
    """One role's requests, and their tokens: prompts estimated at CHARS_PER_TOKEN
    characters a token, completions at the role's whole token limit."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Estimate:
    """The estimate of a plan, per role by name, in the order roles were first asked."""

    roles: dict[str, RoleCount] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    judges: tuple[str, ...] = ()  # the judges' role names (their ids)

    def role(self, name: str) -> RoleCount:
        return self.roles.get(name) or RoleCount()

    def _judged(self) -> RoleCount:
        total = RoleCount()
        for judge in self.judges:
            found = self.role(judge)
            total.requests += found.requests
            total.prompt_tokens += found.prompt_tokens
            total.completion_tokens += found.completion_tokens
        return total

    # the totals the API has always given, read from the roles
    @property
    def answers(self) -> int:
        return self.role(MODEL).requests

    @property
    def answer_prompt_tokens(self) -> int:
        return self.role(MODEL).prompt_tokens

    @property
    def answer_completion_tokens(self) -> int:
        return self.role(MODEL).completion_tokens

    @property
    def judgments(self) -> int:
        return self._judged().requests

    @property
    def judge_prompt_tokens(self) -> int:
        return self._judged().prompt_tokens

    @property
    def judge_completion_tokens(self) -> int:
        return self._judged().completion_tokens

    @property
    def user_turns(self) -> int:
        return self.role(USER).requests

    @property
    def user_prompt_tokens(self) -> int:
        return self.role(USER).prompt_tokens

    @property
    def user_completion_tokens(self) -> int:
        return self.role(USER).completion_tokens


@dataclass
class Sizing:
    """What the drivers' estimates add up, by role: `limits` each role's completion token
    limit, `judges` the judges asked for every judged item (each `repeats` times)."""

    limits: Mapping[str, int | None]
    judges: Sequence[str] = ()
    repeats: int = 1
    estimate: Estimate = field(default_factory=Estimate)
    _chars: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.estimate.judges = tuple(self.judges)

    @property
    def answer_limit(self) -> int:
        return self.limits.get(MODEL) or 0

    @property
    def user_limit(self) -> int | None:
        return self.limits.get(USER)

    @property
    def filler(self) -> str:
        """An answer that uses its whole token limit."""
        return "x" * (self.answer_limit * CHARS_PER_TOKEN)

    def request(
        self,
        role: str,
        messages: Sequence[Mapping[str, Any]],
        params: RequestParams | None = None,
        times: int = 1,
    ) -> None:
        """`times` requests of `role` with these messages (and the tools `params` offers)."""
        count = self.estimate.roles.setdefault(role, RoleCount())
        count.requests += times
        self._chars[role] = self._chars.get(role, 0) + chars(messages, params) * times
        count.completion_tokens += (self.limits.get(role) or 0) * times

    def answer(
        self, messages: Sequence[Mapping[str, Any]], params: RequestParams | None = None
    ) -> None:
        self.request(MODEL, messages, params)

    def judgment(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """One judge request, asked of every judge and every repeat."""
        for judge in self.judges:
            self.request(judge, messages, times=self.repeats)

    def user_turn(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self.request(USER, messages)

    def finish(self) -> Estimate:
        """The estimate, prompts in tokens."""
        for role, count in self.estimate.roles.items():
            count.prompt_tokens = self._chars.get(role, 0) // CHARS_PER_TOKEN
        return self.estimate


def chars(messages: Sequence[Mapping[str, Any]], params: RequestParams | None = None) -> int:
    """A request's size in characters: every message's text, a tool call's name and
    arguments (a tool result's text is its content), and the tools it offers."""
    total = 0
    for message in messages:
        total += len(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            total += len(function.get("name") or "") + len(function.get("arguments") or "")
    if params is not None and params.tools:
        total += len(json.dumps(list(params.tools), ensure_ascii=False))
    return total
