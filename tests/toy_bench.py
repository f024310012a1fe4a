"""A benchmark written outside turnbench: three two-turn dialogues and a rubric judge.

It proves that a benchmark plugs in with no edit to turnbench (the API takes the class, the
CLI takes `--benchmark tests.toy_bench:ToyBench`) and that the base class's defaults carry
it: the --limit, the generic `{"id", "turn", "answer"}` answer files, the prompt versions of
the run's identity and the mean score per topic with its bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Sequence

from turnbench.benchmarks.base import Benchmark, JudgeTask, Pair, Sample, Turn

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
    history = "self"

    def all_samples(self) -> list[Sample]:
        return [
            Sample(id=name, group=group, turns=tuple(Turn(user=text) for text in turns))
            for name, (group, turns) in DIALOGUES.items()
        ]

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        transcript = "".join(f"User: {q}\nAssistant: {a}\n" for q, a in earlier)
        transcript += f"User: {sample.turns[turn - 1].user}\nAssistant: {answer}\n"
        rubric = {"role": "system", "content": RUBRIC}
        return [JudgeTask("toy-rubric-v1", [rubric, {"role": "user", "content": transcript}])]


class ToyBenchCopy(ToyBench):
    """Another plug-in that calls itself toy-bench: naming it for a run of `ToyBench` is
    naming a different class, refused even though the benchmark names agree."""
