"""A benchmark of a kind of conversation turnbench has no driver for (`driver.TalkPast`):
the benchmark package names its driver, its outcome's model and the template that draws
it (`outcome.html`), and that is all it takes."""

from __future__ import annotations

from collections.abc import Sequence

from tests.toy_talk.driver import Listened, TalkPast
from turnbench.benchmarks.base import Benchmark, JudgeTask, Pair, Sample, Turn

PAIRS = {"tea-vs-trains": ("tea", "trains"), "jazz-vs-moss": ("jazz", "moss")}


class TalkPastBench(Benchmark):
    name = "talk-past"
    description = "Two speakers who each only talk about their own topic (a test plug-in)"
    needs_judge = False
    user_model = "required"
    outcome_model = Listened
    outcome_template = "outcome.html"

    def all_samples(self) -> list[Sample]:
        return [
            Sample(id=name, group="pairs", turns=(Turn(user=""),), source=topics)
            for name, topics in PAIRS.items()
        ]

    def driver(self, work):
        return TalkPast(work)

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        return []
