"""Simulated users: each user turn is made at run time from the conversation so far.

A turn's user message comes from the benchmark (a template, or a request to the user model:
`Benchmark.user_turn`), is logged before the model is asked to answer it, and a resumed
conversation reads the logged turns back and pays only for what the log does not hold. The
model answers on its own earlier answers; judged turns are judged while the conversation
goes on, and a turn the user's end came before is judged on the conversation as it ended.
The model's requests and the user model's form two threads: each record keeps only what its
turn added to its own side.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from turnbench.engine.context import RunContext
from turnbench.engine.costs import CHARS_PER_TOKEN
from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.drivers.turns import conversation_plan, size_turns
from turnbench.engine.estimate import Sizing
from turnbench.engine.history import Thread, cut_off, with_user_turns
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.journal.logindex import AnswerDone, UserTurnDone
from turnbench.judging.judge import Judge
from turnbench.record_keys import answer_key, user_turn_key
from turnbench.samples import Pair, Sample, UserAsk
from turnbench.types import AnswerRecord, UserTurnRecord


class SimulatedUser:
    """The model converses with user turns made as the conversation goes."""

    def __init__(self, work: WorkSpec) -> None:
        self.work = work

    def plan(self) -> Plan:
        return conversation_plan(self.work)

    async def run(self, job: PlannedJob, ctx: RunContext) -> None:
        """One simulated conversation: each user turn is made from what happened so far,
        logged, then answered by the model (its own earlier answers in the request), and
        every judged answer is judged while the conversation goes on."""
        judges = ctx.judges
        assert job.model is not None
        model, sample = job.model, job.sample
        benchmark = self.work.benchmark
        judging = self.work.turn_judging
        pairs: list[Pair] = []
        texts: list[str] = []
        tasks: list[asyncio.Task[None]] = []
        judged = set(sample.judged_turns())
        ended = False  # the user ended the conversation (an end marker)
        last: AnswerRecord | AnswerDone | None = None
        answers, users = Thread(), Thread()
        try:
            for turn in sample.asked_turns():
                at = self._place(sample, turn, texts, pairs)
                user = await self._user_turn(ctx, model, sample, turn, pairs, users, at)
                if user is None:
                    break
                if user.ended and not user.text.strip():
                    ended = True
                    break  # (a reply that is only the end marker is not sent)
                texts.append(user.text)
                live = with_user_turns(sample, texts)
                record = await ctx.answer(
                    key=answer_key(model, sample.id, turn),
                    model=model,
                    sample=live,
                    turn=turn,
                    messages=benchmark.answer_messages(live, turn, pairs),
                    params=benchmark.answer_params(sample),
                    thread=answers,
                )
                if record is None:  # never send a failed answer onward
                    break
                last = record
                earlier = list(pairs)
                pairs.append((user.text, record.text or ""))
                if turn in judged and not judging.judged(ctx, judges, model, sample, turn):
                    tasks.append(
                        asyncio.create_task(
                            judging.judge_answer(
                                ctx,
                                judges,
                                model,
                                live,
                                turn,
                                earlier,
                                record.text or "",
                                cut_off(record),
                            )
                        )
                    )
                if user.ended:
                    ended = True
                    break
            if ended and last is not None:
                tasks += self._judge_at_end(ctx, judges, model, sample, pairs, last)
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    def _place(self, sample: Sample, turn: int, texts: Sequence[str], pairs: Sequence[Pair]) -> int:
        """Where the user's message of `turn` stands in the model's conversation: last in
        the request the benchmark builds for that turn (its length does not depend on the
        message's text, which is not written yet)."""
        live = with_user_turns(sample, [*texts, ""])
        return len(self.work.benchmark.answer_messages(live, turn, pairs)) - 1

    async def _user_turn(
        self,
        ctx: RunContext,
        model: str,
        sample: Sample,
        turn: int,
        earlier: Sequence[Pair],
        thread: Thread,
        at: int,
    ) -> UserTurnDone | UserTurnRecord | None:
        """The user's message of one turn (`at`: its place in the model's conversation):
        the logged one, else made now from the conversation so far and logged at once;
        None: the conversation has ended."""
        key = user_turn_key(model, sample.id, turn)
        logged = ctx.logged_user_turn(key)
        if logged is not None and logged.origin != "user-model":
            return logged
        # (for a logged turn too: its request, so that the user model's thread goes on)
        made = self.work.benchmark.user_turn(sample, turn, earlier)
        if logged is None and made is None:
            return None
        if logged is None and not isinstance(made, UserAsk):
            assert made is not None
            return ctx.record_user_turn(
                key=key, model=model, sample=sample, turn=turn, made=made, at=at
            )
        if not isinstance(made, UserAsk):  # (logged by the user model, now a template's)
            return logged
        # the user model writes it (or wrote it: the logged turn, its thread followed)
        return await ctx.ask_user(
            key=key, model=model, sample=sample, turn=turn, ask=made, thread=thread, at=at
        )

    def _judge_at_end(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        model: str,
        sample: Sample,
        pairs: Sequence[Pair],
        last: AnswerRecord | AnswerDone,
    ) -> list[asyncio.Task[None]]:
        """A conversation the user ended before a judged turn: that turn (a scenario's
        slot, its last) is judged on the conversation as it ended, its final exchange in
        the judged turn's place. Results read the same final answer for it."""
        judging = self.work.turn_judging
        answered = len(pairs)
        tasks = []
        for slot in sample.judged_turns():
            if slot <= answered or judging.judged(ctx, judges, model, sample, slot):
                continue
            texts = [said for said, _ in pairs[:-1]]
            texts += [""] * (slot - 1 - len(texts)) + [pairs[-1][0]]
            final = with_user_turns(sample, texts)
            tasks.append(
                asyncio.create_task(
                    judging.judge_answer(
                        ctx, judges, model, final, slot, pairs[:-1], pairs[-1][1], cut_off(last)
                    )
                )
            )
        return tasks

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        """Every conversation runs to its last turn, every answer and user message at its
        token limit (prompt sizes summed in characters). Turns the benchmark writes itself
        (templates) cost nothing."""
        benchmark = self.work.benchmark
        filler = sizing.filler
        said = "x" * ((sizing.user_limit or 0) * CHARS_PER_TOKEN)
        for job in plan.jobs:
            sample = job.sample
            pairs: list[Pair] = []
            for turn in sample.asked_turns():
                made = benchmark.user_turn(sample, turn, pairs)
                if made is None:
                    break
                if isinstance(made, UserAsk):
                    sizing.user_turn(made.messages)
                    pairs.append((said, filler))
                else:
                    pairs.append((made.text, filler))
            own = {t: filler for t in range(1, len(sample.turns) + 1)}
            size_turns(self.work, sizing, sample, own, sample.asked_turns(), sample.judged_turns())

    def notes(self) -> list[str]:
        return []
