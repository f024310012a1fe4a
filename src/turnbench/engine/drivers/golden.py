"""Golden history: every judged turn is asked on its own, after the dataset's earlier answers.

No turn waits for another (the history is the dataset's, never the model's), so every
judged turn is one job and all of them run concurrently.
"""

from __future__ import annotations

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.drivers.turns import ask_turn, single_grading_plan, size_turns
from turnbench.engine.estimate import Sizing
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.record_keys import answer_key


class GoldenHistory:
    """The model answers each judged turn of a sample after the dataset's earlier turns."""

    def __init__(self, work: WorkSpec) -> None:
        self.work = work

    def plan(self) -> Plan:
        work = self.work
        plan = single_grading_plan(work)
        samples = work.benchmark.samples
        model = work.model
        assert model is not None
        plan.jobs = [PlannedJob(s, model, turn=t) for s in samples for t in s.judged_turns()]
        plan.keys["answers"] = {
            answer_key(model, sample.id, turn)
            for sample in samples
            for turn in sample.judged_turns()
        }
        return plan

    async def run(self, job: PlannedJob, ctx: RunContext) -> None:
        judges = ctx.judges
        assert job.model is not None and job.turn is not None
        work, sample, turn, model = self.work, job.sample, job.turn, job.model
        answered = await ask_turn(work, ctx, model, sample, turn, {})
        judging = work.turn_judging
        if answered is not None and not judging.judged(ctx, judges, model, sample, turn):
            await judging.judge_answer(ctx, judges, model, sample, turn, *answered)

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        filler = sizing.filler
        for job in plan.jobs:
            assert job.turn is not None
            own = {t: filler for t in range(1, len(job.sample.turns) + 1)}
            size_turns(self.work, sizing, job.sample, own, [job.turn], [job.turn])

    def notes(self) -> list[str]:
        return []
