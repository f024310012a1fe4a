"""The stress arms (`--perturb`) as a wrapper around a driver of fixed history.

Beside the unperturbed run (the wrapped driver's plan, unchanged), each arm answers and
judges the turns that have history again, with that history perturbed (a planted error, a
distractor, an injected instruction); its keys carry the arm's kind. With golden history an
arm's turn is a job of its own; with self history an arm's conversation forks from the
unperturbed one at the arm's first turn: its job asks the unperturbed turns before the fork
through the same keys (the context shares the one request with the unperturbed job, or
reads it from the log), then goes on under the arm. The jobs of all arms and the
unperturbed run are shuffled together (seeded: a resume asks in the same order), so the
judge's queue mixes them. A conversation whose history is made at run time (simulated
users, agents) has nothing fixed to perturb: the arms refuse it (`check`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import Driver, WorkSpec
from turnbench.engine.drivers.self_history import SelfHistory
from turnbench.engine.drivers.turns import ask_turn, size_turns
from turnbench.engine.estimate import Sizing
from turnbench.engine.history import Thread
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.errors import UserError
from turnbench.judging.judge import Judge
from turnbench.perturb.arms import Arm
from turnbench.record_keys import answer_key
from turnbench.samples import Sample

#: the histories the arms can perturb: fixed before the model is asked
FIXED_HISTORIES = ("golden", "self")


def check(work: WorkSpec) -> None:
    """Refuse arms on a benchmark whose history is made at run time, before anything is
    written."""
    history = work.benchmark.history
    if work.arms and history not in FIXED_HISTORIES:
        raise UserError(
            f"--perturb needs a fixed history, and {work.benchmark.name} makes its "
            f"conversation at run time ({history} history): there is no earlier exchange "
            "to perturb before the model is asked. Run it without --perturb."
        )


class StressArms:
    """`inner`'s plan and jobs, and every arm's beside them."""

    def __init__(self, work: WorkSpec, inner: Driver) -> None:
        check(work)
        self.work = work
        self.inner = inner

    def plan(self) -> Plan:
        work = self.work
        plan = self.inner.plan()
        model = work.model
        assert model is not None
        judging = work.turn_judging
        judge_ids = [judge.id for judge in work.judges]
        samples = work.benchmark.samples
        arm_jobs: list[PlannedJob] = []
        for arm in work.arms:
            for sample in samples:
                plan.keys["answers"].update(
                    answer_key(model, sample.id, turn, arm.kind) for turn in arm.answered(sample)
                )
                for turn in arm.items(sample):
                    plan.keys["judgments"].update(
                        judging.keys(judge_ids, model, sample, turn, arm.kind)
                    )
                if work.benchmark.history == "golden":
                    arm_jobs += [
                        PlannedJob(sample, model, turn=turn, arm=arm) for turn in arm.items(sample)
                    ]
                elif arm.items(sample):
                    arm_jobs.append(PlannedJob(sample, model, arm=arm))
        plan.jobs = [*plan.jobs, *arm_jobs]
        random.Random(work.shuffle_seed).shuffle(plan.jobs)
        return plan

    async def run(self, job: PlannedJob, ctx: RunContext) -> None:
        judges = ctx.judges
        if job.arm is None:
            await self.inner.run(job, ctx)
            return
        assert job.model is not None
        given = await self._needed(ctx, job.model, job.arm, job.sample)
        if given is None:
            return  # what its history needs failed: pending, asked again on resume
        if job.turn is not None:
            await self._one_turn(ctx, judges, job.model, job.sample, job.turn, job.arm, given)
        else:
            await self._fork(ctx, judges, job.model, job.sample, job.arm, given)

    async def _needed(
        self, ctx: RunContext, model: str, arm: Arm, sample: Sample
    ) -> dict[tuple[object, int], str] | None:
        """The unperturbed answers a stress arm's history holds (another sample's first
        answer, for a distractor), asked as that sample's job asks them (one request
        either way); None when one of them failed."""
        given: dict[tuple[object, int], str] = {}
        for other, turn in arm.needs(sample):
            answered = await ask_turn(self.work, ctx, model, other, turn, {})
            if answered is None:
                return None
            given[(other.id, turn)] = answered[1]
        return given

    async def _one_turn(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        model: str,
        sample: Sample,
        turn: int,
        arm: Arm,
        given: dict[tuple[object, int], str],
    ) -> None:
        answered = await ask_turn(self.work, ctx, model, sample, turn, {}, arm, given)
        judging = self.work.turn_judging
        if answered is not None and not judging.judged(ctx, judges, model, sample, turn, arm.kind):
            await judging.judge_answer(ctx, judges, model, sample, turn, *answered, arm.kind)

    async def _fork(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        model: str,
        sample: Sample,
        arm: Arm,
        given: dict[tuple[object, int], str],
    ) -> None:
        """Self history: the unperturbed turns before the arm's first (the same requests as
        the unperturbed job's), then the rest of the conversation under the arm."""
        fork = arm.answered(sample)[0]
        own: dict[int, str] = {}
        thread = Thread()
        for turn in sample.asked_turns():
            if turn >= fork:
                break
            answered = await ask_turn(self.work, ctx, model, sample, turn, own, thread=thread)
            if answered is None:
                return
            own[turn] = answered[1]
        assert isinstance(self.inner, SelfHistory)
        await self.inner.converse(ctx, judges, model, sample, own, arm, given)

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        """The unperturbed jobs as the wrapped driver sizes them; each arm's sized as the
        unperturbed requests (close enough)."""
        inner = [job for job in plan.jobs if job.arm is None]
        self.inner.estimate(Plan(jobs=inner, keys=plan.keys, items=plan.items), sizing)
        filler = sizing.filler
        for arm in self.work.arms:
            for sample in self.work.benchmark.samples:
                own = {t: filler for t in range(1, len(sample.turns) + 1)}
                size_turns(self.work, sizing, sample, own, arm.answered(sample), arm.items(sample))

    def notes(self) -> list[str]:
        return self.inner.notes()
