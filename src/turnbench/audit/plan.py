"""What an audit asks the judge, rendered with the benchmark's own judge prompts.

Per probe question:
- single grading (the benchmark's single-grading request for turn 1 of a one-turn sample
  made of the probe question): the right answer (`repeats` times: the stability probe), the
  wrong answer, the right answer padded by repetition, and every manipulation probe; then the
  wrong answer and every manipulation probe again with `--judge-guard`'s hardening;
- pairwise (when the benchmark has pairwise judging): right vs right_alt and right vs wrong,
  each in both orders.
Every request is a log key of its own (the probe variant stands where a model name stands),
so an interrupted audit resumes where its log ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from turnbench.audit.probes import (
    MANIPULATION_KINDS,
    ProbeQuestion,
    ProbeSuite,
    manipulated,
    padded,
)
from turnbench.benchmarks.base import Benchmark, JudgeTask, Sample, Turn
from turnbench.engine.guarded import guarded_judge_tasks
from turnbench.errors import UserError
from turnbench.judging.guard import Boundary
from turnbench.record_keys import game_key, judgment_key

Order = Literal["AB", "BA"]
PAIR_OTHERS = ("right_alt", "wrong")
GUARDED = "guarded"


def probe_model(variant: str) -> str:
    return f"probe:{variant}"


def probe_sample(question: ProbeQuestion) -> Sample:
    return Sample(id=question.id, group=question.category, turns=(Turn(user=question.question),))


def answer_text(suite: ProbeSuite, question: ProbeQuestion, variant: str) -> str:
    if variant in ("right", "right_alt", "wrong"):
        return str(getattr(question, variant))
    if variant == "padded":
        return padded(question.right)
    return manipulated(suite, variant, question)


@dataclass(frozen=True)
class SingleProbe:
    question: ProbeQuestion
    variant: str  # right | wrong | padded | a manipulation kind
    guarded: bool = False
    repeat: int = 0

    @property
    def model(self) -> str:
        """The name it is logged under (where a run logs a model name)."""
        return probe_model(f"{self.variant}+{GUARDED}" if self.guarded else self.variant)

    def key(self, judge: str) -> str:
        return judgment_key(judge, self.model, self.question.id, 1, repeat=self.repeat)


@dataclass(frozen=True)
class PairProbe:
    question: ProbeQuestion
    other: str  # right_alt | wrong (model_1 is always the right answer)
    order: Order

    @property
    def models(self) -> tuple[str, str]:
        return probe_model("right"), probe_model(self.other)

    def key(self, judge: str) -> str:
        return game_key(judge, *self.models, self.question.id, 1, self.order)


@dataclass(frozen=True)
class AuditPlan:
    suite: ProbeSuite
    questions: list[ProbeQuestion]
    repeats: int
    pairwise: bool

    def singles(self, question: ProbeQuestion) -> list[SingleProbe]:
        probes = [SingleProbe(question, "right", repeat=r) for r in range(self.repeats)]
        probes += [SingleProbe(question, v) for v in ("wrong", "padded", *MANIPULATION_KINDS)]
        probes += [SingleProbe(question, v, True) for v in ("wrong", *MANIPULATION_KINDS)]
        return probes

    def pairs(self, question: ProbeQuestion) -> list[PairProbe]:
        if not self.pairwise:
            return []
        return [PairProbe(question, other, o) for other in PAIR_OTHERS for o in ("AB", "BA")]

    def keys(self, judge: str) -> set[str]:
        return {
            probe.key(judge)
            for question in self.questions
            for probe in (*self.singles(question), *self.pairs(question))
        }


def single_task(
    benchmark: Benchmark, suite: ProbeSuite, probe: SingleProbe
) -> tuple[JudgeTask, Boundary | None]:
    """The benchmark's single-grading request for a probe (hardened when `guarded`)."""
    sample = probe_sample(probe.question)
    answer = answer_text(suite, probe.question, probe.variant)
    try:
        if probe.guarded:
            tasks, boundary = guarded_judge_tasks(benchmark, sample, 1, [], answer)
        else:
            tasks, boundary = benchmark.judge_tasks(sample, 1, [], answer), None
    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as error:
        raise UserError(
            f"--benchmark {benchmark.name}: its judge prompts cannot be filled for a probe "
            f"question ({type(error).__name__}); audit-judge needs a benchmark whose judge "
            "grades one answer to one question (mt-bench does)"
        ) from None
    if len(tasks) != 1 or tasks[0].kind != "rating":
        raise UserError(
            f"--benchmark {benchmark.name}: audit-judge needs exactly one rating request per "
            f"judged answer (this benchmark makes {len(tasks)})"
        )
    return tasks[0], boundary


def pair_task(benchmark: Benchmark, suite: ProbeSuite, probe: PairProbe) -> tuple[JudgeTask, str]:
    """The benchmark's pairwise request for a probe pair in one order; (task, model shown as
    A)."""
    sample = probe_sample(probe.question)
    right = answer_text(suite, probe.question, "right")
    other = answer_text(suite, probe.question, probe.other)
    first, second = (right, other) if probe.order == "AB" else (other, right)
    shown_a = probe.models[0] if probe.order == "AB" else probe.models[1]
    return benchmark.pair_task(sample, 1, ([], first), ([], second)), shown_a
