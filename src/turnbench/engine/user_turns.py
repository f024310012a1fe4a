"""A simulated conversation's user turns: the benchmark's template or the "user" role's reply,
logged before the model is asked to answer them.

A user turn the user model writes is the "user" role's request on the one path; with
--strict-user, a turn that breaks a rule of its role (`UserTurn.problems`) is asked again by
the role's re-ask policy (`StrictUser`), the reply and the rule it broke in the request, up
to MAX_USER_REASKS times; the last reply is kept either way, with its problems, and every
reply is in the record's `outputs`.
"""

from __future__ import annotations

from turnbench.engine.history import Thread, reply_message
from turnbench.engine.requests import About, RequestPath, summed
from turnbench.errors import RequestFailedError
from turnbench.journal.logindex import UserTurnDone
from turnbench.samples import Sample, UserAsk, UserTurn
from turnbench.types import Completion, Message, RequestParams, UserTurnRecord

#: --strict-user: re-asks of a user model whose turn broke a rule, before its turn is kept
#: as it is (its problems counted)
MAX_USER_REASKS = 2
#: what a re-ask of the user model says (versioned: the run's identity names it)
USER_REASK = (
    "Your last message broke the rules of your role ({problems}). Write that message again: "
    "only the user's next message, giving exactly what you were told to give, in the "
    "user's voice."
)
USER_REASK_LABEL = "user-reask-v1"
#: why a user model's reply that only called tools is no user turn: a broken reply, as one
#: with no message at all is, so a failure of the user's request (retried on resume), never
#: an empty user turn the conversation goes on with (the agent would answer silence until
#: its step limit and score 0: issue 44)
USER_CALLED_TOOLS = (
    "the user model replied with tool calls and no message (a simulated user is offered no "
    "tools): no user turn"
)


class StrictUser:
    """The user role's re-ask policy (`backends.asking.ReaskPolicy`): every reply is read
    as the turn it makes; one that breaks a rule is asked again, up to `asks` replies."""

    def __init__(self, ask: UserAsk, params: RequestParams, asks: int) -> None:
        self.ask = ask
        self.params = params
        self.asks = asks
        self.messages: list[Message] = list(ask.messages)
        self.made: UserTurn | None = None
        self.replies = 0
        self.attempts = 0  # the attempts of every reply so far (a failure counts them all)

    def after(self, completion: Completion) -> tuple[list[Message], RequestParams] | None:
        self.replies += 1
        self.attempts += completion.attempts
        if completion.tool_calls and not completion.text.strip():
            raise RequestFailedError(USER_CALLED_TOOLS, self.attempts)
        self.made = self.ask.read(completion.text)
        if not self.made.problems or self.replies >= self.asks:
            return None
        problems = ", ".join(self.made.problems)
        self.messages = [
            *self.messages,
            {"role": "assistant", "content": completion.text},
            {"role": "user", "content": USER_REASK.format(problems=problems)},
        ]
        return self.messages, self.params


class UserTurns(RequestPath):
    """The user turns of simulated conversations (`RunContext` is one)."""

    def logged_user_turn(self, key: str) -> UserTurnDone | None:
        """The user turn the log holds under `key` (a resumed conversation goes on with the
        same words), or None."""
        cached = self.done.get(key)
        return cached if isinstance(cached, UserTurnDone) else None

    def record_user_turn(
        self,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        made: UserTurn,
        trial: int | None = None,
        at: int | None = None,
    ) -> UserTurnRecord:
        """Log a user turn made by the benchmark's own template the moment it exists, before
        the model is asked to answer it; `at`: its place in the model's conversation."""
        record = UserTurnRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            origin=made.origin,
            text=made.text,
            revealed=list(made.revealed),
            problems=list(made.problems),
            ended=made.ended,
            trial=trial,
            at=at,
            meta=dict(made.meta),
        )
        self.log.append(record)
        return record

    async def ask_user(
        self,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        ask: UserAsk,
        trial: int | None = None,
        thread: Thread | None = None,
        at: int | None = None,
    ) -> UserTurnRecord | UserTurnDone | None:
        """The user turn of `key`: the logged one, else written by the user model now and
        logged at once; None when its request failed (a failure record; the conversation
        stops there and a resume asks again). `thread`: the user model's side of the
        conversation, as for `answer`; `at`: the turn's place in the model's conversation."""
        logged = self.logged_user_turn(key)
        record = logged or await self._request_user_turn(
            key=key, model=model, sample=sample, turn=turn, ask=ask, trial=trial, thread=thread,
            at=at,
        )  # fmt: skip
        if record is not None and thread is not None:
            thread.logged(key, ask.messages, reply_message(record.text, None))
        return record

    async def _request_user_turn(
        self,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        ask: UserAsk,
        trial: int | None,
        thread: Thread | None,
        at: int | None,
    ) -> UserTurnRecord | None:
        settings = self.role("user").settings
        if settings is None:
            raise RuntimeError("this run has no user model")
        sampling = settings.sampling
        extra = dict(sampling.extra)
        if ask.seed is not None:
            extra["seed"] = ask.seed
        params = RequestParams(
            temperature=sampling.temperature, max_tokens=sampling.max_tokens, n=1, extra=extra
        )
        asks = 1 + (MAX_USER_REASKS if settings.strict else 0)
        worst = self.costs.worst("user", ask.messages, params, asks) if self.costs else 0.0
        policy = StrictUser(ask, params, asks)
        about = About(model, sample, turn, trial=trial)
        asked = await self.exchange(
            "user", list(ask.messages), params, key=key, stage="user_turn", about=about,
            worst=worst, policy=policy,
        )  # fmt: skip
        if asked is None or policy.made is None:
            return None
        made = policy.made
        after, kept = thread.appended(ask.messages) if thread is not None else (None, ask.messages)
        usage, attempts, latency, endpoints = summed(asked.completions)
        if asked.error is not None:
            attempts += asked.error.attempts
        record = UserTurnRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            origin="user-model",
            text=made.text,
            revealed=list(made.revealed),
            user=settings.spec,
            messages=kept,
            after=after,
            trial=trial,
            outputs=[completion.text for completion in asked.completions],
            problems=list(made.problems),
            ended=made.ended,
            at=at,
            params=asked.last.sent_params,
            usage=usage,
            attempts=attempts,
            latency_s=latency,
            endpoints=endpoints,
            meta={**ask.meta, **made.meta, "reasks": len(asked.completions) - 1},
        )
        self.ledger.commit(record, "user", usage)
        return record
