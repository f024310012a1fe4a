"""Judging one answered turn: the step every driver that grades answers ends a turn with.

A turn's judge requests (its criteria) never depend on the answer's text, so they are
rendered once per turn with a stand-in answer (`criteria`) and the plan, the resume check
and results all name the same judgments. `judge_answer` asks every judge (every repeat,
with --judge-guard a fresh boundary each) for every request of the turn, side by side.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnbench.engine.context import RunContext
from turnbench.engine.guarded import guarded_judge_tasks
from turnbench.engine.history import earlier_pairs
from turnbench.engine.rules import BenchmarkRules
from turnbench.judging.guard import guarded_format
from turnbench.judging.judge import Judge
from turnbench.record_keys import judgment_key
from turnbench.samples import Pair, Sample


async def together(steps: list[Coroutine[Any, Any, Any]]) -> None:
    """Await `steps` side by side; a single one directly (no task around it: there are
    thousands of them in a large run, and a task costs more than the step's own code)."""
    if len(steps) == 1:
        await steps[0]
    elif steps:
        await asyncio.gather(*steps)


@dataclass
class TurnJudging:
    """How the answered turns of one benchmark are judged, `repeats` times by every judge."""

    benchmark: BenchmarkRules
    repeats: int = 1
    _criteria_of: dict[tuple[object, int], list[str | None]] = field(
        default_factory=dict, init=False, repr=False
    )

    def criteria(self, sample: Sample, turn: int) -> list[str | None]:
        """The criteria of a judged turn's judge requests (rendered once per turn with a
        stand-in answer: which requests a turn gets never depends on the answer's text)."""
        found = self._criteria_of.get((sample.id, turn))
        if found is None:
            earlier = earlier_pairs(sample, turn, "golden", {})
            tasks = self.benchmark.judge_tasks(sample, turn, earlier, "")
            found = self._criteria_of[(sample.id, turn)] = [task.criterion for task in tasks]
        return found

    def keys(
        self, judge_ids: Sequence[str], model: str, sample: Sample, turn: int, arm: str | None
    ) -> list[str]:
        """The log keys of every judgment of one answered turn."""
        return [
            judgment_key(judge, model, sample.id, turn, criterion=criterion, repeat=r, arm=arm)
            for criterion in self.criteria(sample, turn)
            for judge in judge_ids
            for r in range(self.repeats)
        ]

    def judged(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        model: str,
        sample: Sample,
        turn: int,
        arm: str | None = None,
    ) -> bool:
        """Whether every judgment of this turn is in the log already (a resume)."""
        done = ctx.done
        return all(
            judgment_key(
                judge.id, model, sample.id, turn, criterion=criterion, repeat=repeat, arm=arm
            )
            in done
            for criterion in self.criteria(sample, turn)
            for judge in judges
            for repeat in range(self.repeats)
        )

    async def judge_answer(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        model: str,
        sample: Sample,
        turn: int,
        earlier: Sequence[Pair],
        answer: str,
        cut: bool = False,
        arm: str | None = None,
    ) -> None:
        """Every judgment of one answered turn, side by side (callers skip a turn whose
        judgments are all in the log already: `judged`). An answer cut off inside <think>
        is not judged (`history.cut_off`): results count the turn as failed, with the
        reason. `arm`: the stress arm the answer was given in (only the keys tell it
        apart)."""
        if cut:
            ctx.skip_judgments(self.keys([judge.id for judge in judges], model, sample, turn, arm))
            return
        benchmark = self.benchmark
        plain = benchmark.judge_tasks(sample, turn, earlier, answer)
        requests = []
        for judge in judges:
            for repeat in range(self.repeats):
                tasks, boundary = plain, None
                if judge.settings.guard:  # a fresh boundary for every request
                    tasks, boundary = guarded_judge_tasks(
                        benchmark, sample, turn, earlier, answer, plain=plain
                    )
                for task in tasks:
                    reply = benchmark.reply_format(task)
                    requests.append(
                        ctx.judgment(
                            judge,
                            task,
                            reply if boundary is None else guarded_format(reply, boundary),
                            key=judgment_key(
                                judge.id,
                                model,
                                sample.id,
                                turn,
                                criterion=task.criterion,
                                repeat=repeat,
                                arm=arm,
                            ),
                            model=model,
                            sample=sample,
                            turn=turn,
                            repeat=repeat,
                            meta=None if boundary is None else {"guard": boundary.record()},
                            arm=arm,
                        )
                    )
        await together(requests)
