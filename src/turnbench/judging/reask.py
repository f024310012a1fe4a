"""The bounded re-ask loop: one judgment, up to `max_reasks` follow-ups, then a verdict.

A re-ask sends the original messages, the judge's latest reply and one fixed follow-up text
(a versioned package file), so every re-ask request can be rebuilt from the stored record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from turnbench.backends.base import Backend
from turnbench.judging.parsers import Parser, ParseResult
from turnbench.types import Completion, Message, RequestParams, Usage


@dataclass(frozen=True)
class Followup:
    name: str
    version: int
    text: str

    @property
    def label(self) -> str:
        return f"{self.name}-v{self.version}"


@cache
def followup(kind: str) -> Followup:
    """`kind` is "rating" or "verdict"."""
    raw = json.loads(resources.files("turnbench").joinpath("prompts/reask.json").read_text("utf-8"))
    entry = raw[kind]
    return Followup(name=entry["name"], version=int(entry["version"]), text=entry["text"])


@dataclass
class JudgeOutcome:
    outputs: list[str]
    result: ParseResult
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    latency_s: float = 0.0
    last: Completion | None = None


def reask_messages(messages: list[Message], reply: str, text: str) -> list[Message]:
    return [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": text}]


async def judge_with_reasks(
    backend: Backend,
    messages: list[Message],
    params: RequestParams,
    parser: Parser,
    followup_text: str,
    max_reasks: int,
    reask_params: RequestParams | None = None,
) -> JudgeOutcome:
    outcome = JudgeOutcome(outputs=[], result=ParseResult(error="not asked"))
    request = messages
    for _ in range(1 + max(0, max_reasks)):
        completion = await backend.complete(
            request, params if request is messages else (reask_params or params)
        )
        outcome.outputs.append(completion.text)
        outcome.usage = outcome.usage + completion.usage
        outcome.attempts += completion.attempts
        outcome.latency_s += completion.latency_s
        outcome.last = completion
        outcome.result = parser(completion.text)
        if outcome.result.ok:
            break
        request = reask_messages(messages, completion.text, followup_text)
    return outcome
