"""What the engine needs of a benchmark, as a Protocol.

The engine sits below the benchmarks (`turnbench.benchmarks` builds on it, not the other
way round), so it names no benchmark class: any object with these members runs, and
`turnbench.benchmarks.base.Benchmark` has them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from turnbench.judging.formats import ReplyFormat
from turnbench.samples import History, JudgeTask, Pair, Sample, UserAsk, UserTurn
from turnbench.types import Message, RequestParams, SamplingConfig


class AnswerSampling(Protocol):
    """The part of a benchmark's settings the engine reads: how the model is asked."""

    @property
    def answer(self) -> SamplingConfig | None: ...


class BenchmarkRules(Protocol):
    """A benchmark as the turn loop sees it: its samples, how a turn is asked and judged."""

    name: str
    sample_noun: str

    @property
    def settings(self) -> AnswerSampling: ...

    @property
    def samples(self) -> list[Sample]: ...

    @property
    def history(self) -> History: ...

    def answer_params(self, sample: Sample) -> RequestParams: ...

    def answer_messages(
        self, sample: Sample, turn: int, earlier: Sequence[Pair]
    ) -> list[Message]: ...

    def user_turn(
        self, sample: Sample, turn: int, earlier: Sequence[Pair]
    ) -> UserTurn | UserAsk | None: ...

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]: ...

    def pair_task(
        self,
        sample: Sample,
        turn: int,
        conversation_a: tuple[Sequence[Pair], str],
        conversation_b: tuple[Sequence[Pair], str],
    ) -> JudgeTask: ...

    def check_pairwise(self) -> None: ...

    def reply_format(self, task: JudgeTask) -> ReplyFormat: ...

    def prompt_versions(self) -> dict[str, str]: ...

    def pairwise_prompt_versions(self) -> dict[str, str]: ...

    def config_options(self) -> dict[str, Any]: ...

    def driver(self, work: Any) -> Any:
        """The driver of this benchmark's conversations (an `engine.drivers.Driver`) for
        `work` (typed loosely here: the drivers build on this protocol)."""
        ...
