"""A benchmark written outside turnbench: three two-turn dialogues and a rubric judge.

It exists to prove that a benchmark plugs in with no edit to turnbench (the API takes the
class, the CLI takes `--benchmark tests.toy_bench:ToyBench`). Its content is inline, so it
needs no data files; its answer files use turnbench's generic `{"id", "turn", "answer"}`
format.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turnbench.answers import load_turn_answers
from turnbench.benchmarks.base import (
    AnswerSet,
    Benchmark,
    BenchmarkSettings,
    JudgedTurn,
    JudgeTask,
    Pair,
    Sample,
    Turn,
    select_first,
)
from turnbench.scoring import mean

DIALOGUES = {
    "greet": ("small-talk", ["Say hello.", "Now say it in French."]),
    "count": ("numbers", ["Count to three.", "Now backwards."]),
    "sum": ("numbers", ["What is 2 + 2?", "And times 3?"]),
}
RUBRIC = (
    "You grade the assistant's last answer for helpfulness. Reply with a short reason, then "
    'your rating strictly as "Rating: [[rating]]", a number from 1 to 10.'
)


class ToyBench(Benchmark):
    name = "toy-bench"
    description = "Three two-turn dialogues graded by a rubric (a test plug-in)"
    sample_noun = "dialogues"
    group_kind = "topic"

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        super().__init__(files, settings)
        self._samples = [
            Sample(id=name, group=group, turns=tuple(Turn(user=text) for text in turns))
            for name, (group, turns) in DIALOGUES.items()
        ]
        self._planned = select_first(self._samples, settings.limit)

    @property
    def samples(self) -> list[Sample]:
        return self._planned

    def all_samples(self) -> list[Sample]:
        return self._samples

    @property
    def history(self) -> str:
        return "self"

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        transcript = "".join(f"User: {q}\nAssistant: {a}\n" for q, a in earlier)
        transcript += f"User: {sample.turns[turn - 1].user}\nAssistant: {answer}\n"
        return [
            JudgeTask(
                prompt_name="toy-rubric-v1",
                messages=[
                    {"role": "system", "content": RUBRIC},
                    {"role": "user", "content": transcript},
                ],
            )
        ]

    def prompt_versions(self) -> dict[str, str]:
        return {"judge_prompts": "toy-rubric-v1", "parser": "rating-strict"}

    def load_answer_file(self, path: Path) -> AnswerSet:
        samples = {s.id: s for s in self._samples}
        return load_turn_answers(
            path,
            samples,
            [(s.id, t) for s in self._planned for t in s.judged_turns()],
            unknown_id=lambda i: f"id {i!r} is not a toy dialogue",
            not_judged=lambda s, t: f"turn {t} of {s.id} is not judged",
        )

    def aggregate(self, judged: Sequence[JudgedTurn]) -> dict[str, Any]:
        scores = [(j.sample.group, j.score) for j in judged if j.score is not None]
        topics = list(dict.fromkeys(s.group for s in self._planned))
        return {
            "overall": mean(score for _, score in scores),
            "overall_ci95": None,
            "by_topic": {t: mean(s for g, s in scores if g == t) for t in topics},
        }


class ToyBenchCopy(ToyBench):
    """Another plug-in that calls itself toy-bench: naming it for a run of `ToyBench` is
    naming a different class, refused even though the benchmark names agree."""
