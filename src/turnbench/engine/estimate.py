"""`--dry-run`: what a plan would send and what it would cost, with nothing sent.

Each driver sizes its own jobs from the plan (`Driver.estimate`); this module holds the
counts they add to and the one way every driver measures a request's size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnbench.engine.costs import CHARS_PER_TOKEN


@dataclass
class Estimate:
    answers: int = 0
    judgments: int = 0
    answer_prompt_tokens: int = 0
    answer_completion_tokens: int = 0
    judge_prompt_tokens: int = 0
    judge_completion_tokens: int = 0
    #: requests to the user model of simulated conversations (--user-model)
    user_turns: int = 0
    user_prompt_tokens: int = 0
    user_completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class Sizing:
    """What the drivers' estimates add up, in characters until `Sizing.finish`."""

    answer_limit: int
    user_limit: int | None
    requests_per_item: int
    estimate: Estimate = field(default_factory=Estimate)
    answer_chars: int = 0
    judge_chars: int = 0

    @property
    def filler(self) -> str:
        """An answer that uses its whole token limit."""
        return "x" * (self.answer_limit * CHARS_PER_TOKEN)

    def answer(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self.answer_chars += chars(messages)
        self.estimate.answers += 1

    def judgment(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """One judge request, asked of every judge and every repeat."""
        self.judge_chars += chars(messages) * self.requests_per_item
        self.estimate.judgments += self.requests_per_item

    def user_turn(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self.estimate.user_turns += 1
        self.estimate.user_prompt_tokens += chars(messages)  # (characters until finish)
        self.estimate.user_completion_tokens += self.user_limit or 0


def chars(messages: Sequence[Mapping[str, Any]]) -> int:
    """A request's size in characters: every message's text, and a tool call's name and
    arguments (a tool result's text is its content)."""
    total = 0
    for message in messages:
        total += len(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            total += len(function.get("name") or "") + len(function.get("arguments") or "")
    return total
