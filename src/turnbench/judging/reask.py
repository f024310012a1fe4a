"""The bounded re-ask loop: one judgment, up to `max_reasks` follow-ups, then a verdict.

A re-ask sends the original messages, the judge's latest reply and one fixed follow-up text
(a versioned package file), so every re-ask request can be rebuilt from the stored record.
Nothing paid for is thrown away: when a re-ask request fails after a first reply was
received (a 400 for context length, say), the replies and usage already received are kept
and the judgment ends as a parse failure instead of vanishing, so a resume does not pay for
the first request again and token budgets count every paid token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from turnbench.backends.base import Backend
from turnbench.errors import RequestFailedError
from turnbench.judging.formats import Followup, ReplyFormat
from turnbench.judging.parsers import ParseResult
from turnbench.judging.weighted import WeightedRating
from turnbench.types import Completion, Message, RequestParams, Usage

__all__ = ["Followup", "JudgeOutcome", "judge_with_reasks", "reask_messages"]


@dataclass
class JudgeOutcome:
    outputs: list[str]
    result: ParseResult
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    latency_s: float = 0.0
    last: Completion | None = None
    completions: list[Completion] = field(default_factory=list)
    weighted: WeightedRating | None = None  # with --judge-scoring weighted, when available
    resends: int = 0  # the same request sent again (`ReplyFormat.resend_tries`)
    reasks: int = 0  # follow-ups sent


def reask_messages(messages: list[Message], reply: str, text: str) -> list[Message]:
    return [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": text}]


async def judge_with_reasks(
    backend: Backend,
    messages: list[Message],
    params: RequestParams,
    reply: ReplyFormat,
    max_reasks: int,
    reask_params: RequestParams | None = None,
) -> JudgeOutcome:
    """Ask, parse, and re-ask while the reply is unreadable.

    A reply the parser wants sent again (`ParseResult.retry`) repeats the original request,
    up to `reply.resend_tries` requests in all; any other unreadable reply gets a follow-up
    (up to `max_reasks`). Raises RequestFailedError only when the first request fails:
    nothing was paid for.
    """
    outcome = JudgeOutcome(outputs=[], result=ParseResult(error="not asked"))
    request = messages
    reasks = max(0, max_reasks) if reply.followup is not None else 0
    while True:
        try:
            completion = await backend.complete(
                request, params if request is messages else (reask_params or params)
            )
        except RequestFailedError as error:
            if not outcome.outputs:
                raise
            outcome.attempts += error.attempts
            outcome.result = ParseResult(
                error=f"{outcome.result.error}; the re-ask failed: {error.message}"
            )
            break
        outcome.outputs.append(completion.text)
        outcome.completions.append(completion)
        outcome.usage = outcome.usage + completion.usage
        outcome.attempts += completion.attempts
        outcome.latency_s += completion.latency_s
        outcome.last = completion
        outcome.result = reply.parse(completion.text)
        if outcome.result.ok:
            break
        if outcome.result.retry and 1 + outcome.resends < reply.resend_tries:
            outcome.resends += 1
            request = messages
        elif reply.followup is not None and outcome.reasks < reasks:
            outcome.reasks += 1
            request = reask_messages(messages, completion.text, reply.followup.text)
        else:
            break
    return outcome
