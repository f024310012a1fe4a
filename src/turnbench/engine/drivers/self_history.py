"""Self history: a sample's turns in order, each asked after the model's own earlier answers.

Turn k's request holds the model's answer to turn k-1, so a sample is one job whose turns
run one after another; a failed answer is never sent onward (the rest of the sample waits
for a resume). Each answered turn is judged while the conversation goes on. The records of
a conversation form one thread: each keeps only what its turn added.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.drivers.turns import ask_turn, conversation_plan, size_turns
from turnbench.engine.estimate import Sizing
from turnbench.engine.history import Thread
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.judging.judge import Judge
from turnbench.perturb.arms import Arm
from turnbench.samples import Sample


class SelfHistory:
    """The model answers a sample's asked turns in order, on its own earlier answers."""

    def __init__(self, work: WorkSpec) -> None:
        self.work = work

    def plan(self) -> Plan:
        return conversation_plan(self.work)

    async def run(self, job: PlannedJob, ctx: RunContext) -> None:
        judges = ctx.judges
        assert job.model is not None
        await self.converse(ctx, judges, job.model, job.sample)

    async def converse(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        model: str,
        sample: Sample,
        own: dict[int, str] | None = None,
        arm: Arm | None = None,
        given: Mapping[tuple[object, int], str] | None = None,
        thread: Thread | None = None,
    ) -> None:
        """Ask the asked turns of `sample` not in `own` (the answers so far) in order,
        judging each judged one as it comes. With a stress `arm` the turns are the arm's
        (asked with its history, judged on its items)."""
        work = self.work
        judging = work.turn_judging
        own = {} if own is None else own
        thread = Thread() if thread is None else thread
        tasks: list[asyncio.Task[None]] = []
        judged = set(sample.judged_turns() if arm is None else arm.items(sample))
        kind = None if arm is None else arm.kind
        try:
            for turn in sample.asked_turns():
                if turn in own:
                    continue
                answered = await ask_turn(work, ctx, model, sample, turn, own, arm, given, thread)
                if answered is None:  # never send a failed answer onward
                    break
                earlier, text, cut = answered
                own[turn] = text
                if turn in judged and not judging.judged(ctx, judges, model, sample, turn, kind):
                    tasks.append(
                        asyncio.create_task(
                            judging.judge_answer(
                                ctx, judges, model, sample, turn, earlier, text, cut, kind
                            )
                        )
                    )
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        filler = sizing.filler
        for job in plan.jobs:
            sample = job.sample
            own = {t: filler for t in range(1, len(sample.turns) + 1)}
            size_turns(self.work, sizing, sample, own, sample.asked_turns(), sample.judged_turns())

    def notes(self) -> list[str]:
        return []
