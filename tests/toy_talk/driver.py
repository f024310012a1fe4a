"""A kind of conversation turnbench does not have: two speakers who talk past each other.

The model under test speaks for someone who only wants to talk about one thing; the user
model for someone who only wants to talk about another. Each hears the other's lines as
the user's. The model may note topics with a tool (`remember`, several calls a reply) before
it speaks. After the rounds a role of this driver's own, the "referee" (played by the user
model), says whether the model listened; the sample scores 1 if the model took up the
other's topic. Written with the seam alone: the context's roles, threads, places in the
conversation (`at`), steps, a typed outcome; nothing in turnbench names it.
"""

from __future__ import annotations

import json
from typing import ClassVar

from pydantic import BaseModel

from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.estimate import Sizing
from turnbench.engine.history import Thread, reply_message
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.record_keys import answer_key, sample_key, step_key, tool_step_key, user_turn_key
from turnbench.samples import UserAsk, UserTurn
from turnbench.types import RequestParams, SampleRecord, StepRecord

ROUNDS = 3
TOOLS = ({"type": "function", "function": {"name": "remember", "parameters": {
    "type": "object", "properties": {"topic": {"type": "string"}}}}},)  # fmt: skip


class Listened(BaseModel):
    """The outcome: whether the model took up the other's topic, the topics it noted, and
    what the referee said."""

    listened: bool
    notes: list[str]
    referee: str


def _side(persona: str, heard: list[str], said: list[str]) -> list[dict]:
    """One speaker's request: its persona, then the other's lines as the user's."""
    messages = [{"role": "system", "content": persona}]
    for index, line in enumerate(heard):
        messages.append({"role": "user", "content": line})
        if index < len(said):
            messages.append({"role": "assistant", "content": said[index]})
    return messages


def _note(arguments: str) -> str:
    try:
        return str(json.loads(arguments).get("topic", ""))
    except (ValueError, AttributeError):
        return ""


class TalkPast:
    roles: ClassVar = {"referee": "user"}  # (a role of its own, played by the user model)

    def __init__(self, work: WorkSpec) -> None:
        self.work = work

    def plan(self) -> Plan:
        model, samples = self.work.model, self.work.benchmark.samples
        plan = Plan(jobs=[PlannedJob(s, model) for s in samples], scored=[(s, None) for s in samples])  # noqa: E501
        plan.keys = {"samples": {sample_key(model, s.id) for s in samples}}
        return plan

    async def run(self, job, ctx) -> None:
        sample, model = job.sample, job.model
        if ctx.logged_sample(sample_key(model, sample.id)) is not None:
            return
        mine, theirs = sample.source  # (each speaker's one topic)
        view = _side(f"You only ever talk about {mine}.", [f"Let me tell you about {theirs}."], [])
        model_said, user_said, notes, step = [], [view[1]["content"]], [], 0
        model_thread, user_thread = Thread(), Thread()
        for turn in range(1, ROUNDS + 1):
            calls = True
            while calls:  # (its tool calls first, then its line)
                step += 1
                answer = await ctx.answer(
                    key=answer_key(model, sample.id, step), model=model, sample=sample, turn=step,
                    messages=list(view), params=RequestParams(max_tokens=64, tools=TOOLS),
                    thread=model_thread,
                )
                if answer is None:
                    return  # (failed: pending, asked again on resume)
                calls = answer.tool_calls or []
                view.append(reply_message(answer.text, calls))
                for number, call in enumerate(calls):
                    notes.append(_note(call["function"]["arguments"]))
                    key = tool_step_key(model, sample.id, step, None, number)
                    if ctx.logged_step(key) is None:
                        ctx.record_step(StepRecord(
                            key=key, model=model, sample_id=sample.id, turn=step, call=number,
                            name="remember", call_id=call["id"], output="noted", at=len(view),
                        ))
                    view.append({"role": "tool", "tool_call_id": call["id"], "content": "noted"})
            model_said.append(answer.text)
            ask = UserAsk(_side(f"You only ever talk about {theirs}.", model_said, user_said[1:]),
                          read=lambda text: UserTurn(text=text.strip(), origin="user-model"))
            user = await ctx.ask_user(key=user_turn_key(model, sample.id, turn), model=model,
                                      sample=sample, turn=turn, ask=ask, thread=user_thread,
                                      at=len(view))
            if user is None:
                return
            user_said.append(user.text)
            view.append({"role": "user", "content": user.text})
        question = [{"role": "user", "content": f"Did they ever talk about {theirs}? "
                     + " / ".join(model_said)}]  # fmt: skip
        referee = await ctx.reply("referee", key=step_key("referee", model, sample.id),
                                  model=model, sample=sample, turn=ROUNDS, messages=question,
                                  params=RequestParams(max_tokens=8))
        if referee is None:
            return
        listened = any(theirs.lower() in said.lower() for said in model_said)
        outcome = Listened(listened=listened, notes=notes, referee=referee.text)
        ctx.record_sample(SampleRecord(
            key=sample_key(model, sample.id), model=model, sample_id=sample.id,
            score=float(listened), ended="rounds", steps=step, detail=outcome.model_dump(),
        ))

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        for _ in range(len(plan.jobs) * ROUNDS):
            sizing.answer(_side("x", ["x"], []), RequestParams(tools=TOOLS))
            sizing.user_turn(_side("x", ["x"], []))
        for _ in plan.jobs:
            sizing.request("referee", [{"role": "user", "content": "x"}])

    def notes(self) -> list[str]:
        return [f"each conversation runs {ROUNDS} rounds, then the referee says who listened"]
