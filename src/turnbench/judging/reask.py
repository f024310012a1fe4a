"""A judge's re-ask policy: up to `max_reasks` follow-ups while its reply holds no verdict.

A judge is asked through the one loop every role is asked through (`backends.asking.ask`);
this module is its policy on that loop (`JudgeReasks`) and the outcome it leaves. A re-ask
sends the original messages, the judge's latest reply and one fixed follow-up text (a
versioned package file), so every re-ask request can be rebuilt from the stored record; a
reply the parser wants sent again (`ParseResult.retry`) repeats the original request, up to
`reply.resend_tries` requests in all. Nothing paid for is thrown away: when a re-ask fails
after a first reply was received (a 400 for context length, say), the replies and usage
already received are kept and the judgment ends as a parse failure instead of vanishing,
so a resume does not pay for the first request again and token budgets count every paid
token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from turnbench.backends.asking import Asked, Sender, ask
from turnbench.judging.formats import Followup, ReplyFormat
from turnbench.judging.parsers import ParseResult
from turnbench.judging.weighted import WeightedRating
from turnbench.types import Completion, Message, RequestParams, Usage

__all__ = ["Followup", "JudgeOutcome", "JudgeReasks", "judge_with_reasks", "reask_messages"]


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


class JudgeReasks:
    """A judge's re-ask policy for one judgment (`backends.asking.ReaskPolicy`)."""

    def __init__(
        self,
        messages: list[Message],
        params: RequestParams,
        reply: ReplyFormat,
        max_reasks: int,
        reask_params: RequestParams | None = None,
    ) -> None:
        self.messages = messages
        self.params = params
        self.reply = reply
        self.reask_params = reask_params or params
        self.max_reasks = max(0, max_reasks) if reply.followup is not None else 0
        self.result = ParseResult(error="not asked")
        self.resends = 0
        self.reasks = 0

    def after(self, completion: Completion) -> tuple[list[Message], RequestParams] | None:
        reply = self.reply
        self.result = reply.parse(completion.text)
        if self.result.ok:
            return None
        if self.result.retry and 1 + self.resends < reply.resend_tries:
            self.resends += 1
            return self.messages, self.params
        if reply.followup is not None and self.reasks < self.max_reasks:
            self.reasks += 1
            return reask_messages(self.messages, completion.text, reply.followup.text), (
                self.reask_params
            )
        return None

    def outcome(self, asked: Asked) -> JudgeOutcome:
        """What the judgment received, read by this policy."""
        result = self.result
        attempts = sum(c.attempts for c in asked.completions)
        if asked.error is not None:
            attempts += asked.error.attempts
            result = ParseResult(error=f"{result.error}; the re-ask failed: {asked.error.message}")
        usage = Usage()
        for completion in asked.completions:
            usage = usage + completion.usage
        return JudgeOutcome(
            outputs=[c.text for c in asked.completions],
            result=result,
            usage=usage,
            attempts=attempts,
            latency_s=sum(c.latency_s for c in asked.completions),
            last=asked.completions[-1] if asked.completions else None,
            completions=list(asked.completions),
            resends=self.resends,
            reasks=self.reasks,
        )


async def judge_with_reasks(
    backend: Sender,
    messages: list[Message],
    params: RequestParams,
    reply: ReplyFormat,
    max_reasks: int,
    reask_params: RequestParams | None = None,
) -> JudgeOutcome:
    """Ask, parse, and re-ask while the reply is unreadable (the judge's policy on the one
    asking loop). Raises RequestFailedError only when the first request fails: nothing was
    paid for."""
    policy = JudgeReasks(messages, params, reply, max_reasks, reask_params)
    return policy.outcome(await ask(backend, messages, params, policy))
