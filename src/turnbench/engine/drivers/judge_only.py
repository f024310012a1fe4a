"""Judge-only: answers read from files (or an earlier run) are recorded, then judged.

Every answer is written to the log first, so the run directory is self-contained, and then
judged exactly as a generated answer would be. One job per answer set and sample.
"""

from __future__ import annotations

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.drivers.turns import single_grading_plan, size_turns
from turnbench.engine.estimate import Sizing
from turnbench.engine.history import cut_off, earlier_pairs
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.engine.turn_judging import together
from turnbench.record_keys import answer_key
from turnbench.samples import AnswerSet, Sample


def record_answers(
    ctx: RunContext, answer_set: AnswerSet, sample: Sample, cut: set[int]
) -> dict[int, str]:
    """Record a sample's answers from a file; returns the recorded (cleaned) texts, and
    adds to `cut` the turns whose answer was cut off inside <think>."""
    own: dict[int, str] = {}
    for turn, text in sorted(answer_set.turns.get(sample.id, {}).items()):
        record = ctx.import_answer(
            key=answer_key(answer_set.model, sample.id, turn),
            model=answer_set.model,
            sample=sample,
            turn=turn,
            text=text,
        )
        own[turn] = record.text or ""
        if cut_off(record):
            cut.add(turn)
    return own


class JudgeOnly:
    """Judge the given answers of one or more models, each turn on its own answers."""

    def __init__(self, work: WorkSpec) -> None:
        self.work = work

    def plan(self) -> Plan:
        work = self.work
        plan = single_grading_plan(work)
        plan.jobs = [
            PlannedJob(sample, answer_set.model, answers=answer_set)
            for answer_set in work.answer_sets
            for sample in work.benchmark.samples
        ]
        return plan

    async def run(self, job: PlannedJob, ctx: RunContext) -> None:
        judges = ctx.judges
        assert job.answers is not None
        work, sample, answer_set = self.work, job.sample, job.answers
        judging = work.turn_judging
        history = work.benchmark.history
        cut: set[int] = set()
        own = record_answers(ctx, answer_set, sample, cut)
        model = answer_set.model
        # (turns judged already get no task: a resume of a large run has tens of thousands)
        pending = [
            turn
            for turn in sample.judged_turns()
            if not judging.judged(ctx, judges, model, sample, turn)
        ]
        await together(
            [
                judging.judge_answer(
                    ctx,
                    judges,
                    model,
                    sample,
                    turn,
                    earlier_pairs(sample, turn, history, own),
                    own[turn],
                    turn in cut,
                )
                for turn in pending
            ]
        )

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        """Prompt sizes from the answers given."""
        filler = sizing.filler
        for job in plan.jobs:
            assert job.answers is not None
            sample = job.sample
            own = job.answers.turns.get(sample.id) or {
                t: filler for t in range(1, len(sample.turns) + 1)
            }
            size_turns(self.work, sizing, sample, own, [], sample.judged_turns())

    def notes(self) -> list[str]:
        return []
