"""A kind of conversation turnbench does not have: two speakers who talk past each other.

The model under test speaks for someone who only wants to talk about one thing; the user
model for someone who only wants to talk about another. Each hears the other's lines as
the user's. After the rounds, the sample scores 1 if the model ever took up the other's
topic (it listened), else 0. Written with the seam alone: messages, the context's roles,
threads, a finished-sample record; nothing in turnbench names it.
"""

from __future__ import annotations

from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.estimate import Sizing
from turnbench.engine.history import Thread
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.record_keys import answer_key, sample_key, user_turn_key
from turnbench.samples import UserAsk, UserTurn
from turnbench.types import RequestParams, SampleRecord

ROUNDS = 3


def _side(persona: str, heard: list[str], said: list[str]) -> list[dict]:
    """One speaker's request: its persona, then the other's lines as the user's."""
    messages = [{"role": "system", "content": persona}]
    for index, line in enumerate(heard):
        messages.append({"role": "user", "content": line})
        if index < len(said):
            messages.append({"role": "assistant", "content": said[index]})
    return messages


class TalkPast:
    def __init__(self, work: WorkSpec) -> None:
        self.work = work

    def plan(self) -> Plan:
        model, samples = self.work.model, self.work.benchmark.samples
        plan = Plan(jobs=[PlannedJob(s, model) for s in samples], scored=[(s, 0) for s in samples])
        plan.keys = {"samples": {sample_key(model, s.id, 0) for s in samples}}
        return plan

    async def run(self, job, ctx, judges) -> None:
        sample, model = job.sample, job.model
        if ctx.logged_sample(sample_key(model, sample.id, 0)) is not None:
            return
        mine, theirs = sample.source  # (each speaker's one topic)
        model_said, user_said = [], [f"Let me tell you about {theirs}."]
        model_thread, user_thread = Thread(), Thread()
        for turn in range(1, ROUNDS + 1):
            answer = await ctx.answer(
                key=answer_key(model, sample.id, turn), model=model, sample=sample, turn=turn,
                messages=_side(f"You only ever talk about {mine}.", user_said, model_said),
                params=RequestParams(max_tokens=64), thread=model_thread,
            )
            if answer is None:
                return  # (failed: pending, asked again on resume)
            model_said.append(answer.text)
            ask = UserAsk(_side(f"You only ever talk about {theirs}.", model_said, user_said[1:]),
                          read=lambda text: UserTurn(text=text.strip(), origin="user-model"))
            user = await ctx.ask_user(key=user_turn_key(model, sample.id, turn), model=model,
                                      sample=sample, turn=turn, ask=ask, thread=user_thread)
            if user is None:
                return
            user_said.append(user.text)
        listened = any(theirs.lower() in said.lower() for said in model_said)
        ctx.record_sample(SampleRecord(
            key=sample_key(model, sample.id, 0), model=model, sample_id=sample.id, trial=0,
            score=float(listened), ended="rounds", steps=2 * ROUNDS, detail={"listened": listened},
        ))

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        for _ in range(len(plan.jobs) * ROUNDS):
            sizing.answer(_side("x", ["x"], []))
            sizing.user_turn(_side("x", ["x"], []))

    def notes(self) -> list[str]:
        return [f"each conversation runs {ROUNDS} rounds"]
