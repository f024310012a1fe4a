"""The engine's side of `--judge-guard`: which texts of a judge request get wrapped.

A benchmark renders its judge requests from the answers it is given
(`Benchmark.judge_tasks(sample, turn, earlier, answer)`, `Benchmark.pair_task(...)`), so
the engine can harden every benchmark without touching its package: it renders the request
once as usual (to know every text the request holds), draws a boundary absent from all of
them, then renders again with the model's own answers wrapped in the boundary's markers and
adds the guard instruction. The model's own answers are the judged answer and, with
self-generated history, its earlier answers (golden history holds the dataset's answers,
which are left as they are).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from turnbench.engine.rules import BenchmarkRules
from turnbench.judging.guard import Boundary, guard_messages, new_boundary, random_nonce
from turnbench.samples import JudgeTask, Pair, Sample

Conversation = tuple[Sequence[Pair], str]


def own_turns(benchmark: BenchmarkRules, sample: Sample, turn: int) -> set[int]:
    """Earlier turns (1-based) whose answer in the request is the model's own."""
    if benchmark.history == "golden":
        return set()
    return {n for n in range(1, turn) if sample.turns[n - 1].asked}


def _texts(tasks: Sequence[JudgeTask], extra: Sequence[str]) -> list[str]:
    return [m["content"] for task in tasks for m in task.messages] + list(extra)


def _wrap_earlier(earlier: Sequence[Pair], own: Collection[int], boundary: Boundary) -> list[Pair]:
    return [
        (user, boundary.wrap(answer) if number in own else answer)
        for number, (user, answer) in enumerate(earlier, 1)
    ]


def _harden(task: JudgeTask, boundary: Boundary) -> JudgeTask:
    return replace(task, messages=guard_messages(task.messages, boundary))


def guarded_judge_tasks(
    benchmark: BenchmarkRules,
    sample: Sample,
    turn: int,
    earlier: Sequence[Pair],
    answer: str,
    *,
    plain: Sequence[JudgeTask] | None = None,
    token: Callable[[], str] = random_nonce,
) -> tuple[list[JudgeTask], Boundary]:
    """The judge requests of one answer, hardened, and the boundary they use (`plain`: the
    unguarded requests, when the caller already rendered them)."""
    if plain is None:
        plain = benchmark.judge_tasks(sample, turn, earlier, answer)
    own = own_turns(benchmark, sample, turn)
    boundary = new_boundary(_texts(plain, [answer, *(a for _, a in earlier)]), token)
    tasks = benchmark.judge_tasks(
        sample, turn, _wrap_earlier(earlier, own, boundary), boundary.wrap(answer)
    )
    return [_harden(task, boundary) for task in tasks], boundary


def guarded_pair_task(
    benchmark: BenchmarkRules,
    sample: Sample,
    turn: int,
    conversation_a: Conversation,
    conversation_b: Conversation,
    *,
    plain: JudgeTask | None = None,
    token: Callable[[], str] = random_nonce,
) -> tuple[JudgeTask, Boundary]:
    """The pairwise request, hardened: both models' answers are wrapped."""
    if plain is None:
        plain = benchmark.pair_task(sample, turn, conversation_a, conversation_b)
    own = own_turns(benchmark, sample, turn)
    answers = [
        text
        for earlier, answer in (conversation_a, conversation_b)
        for text in (answer, *(a for _, a in earlier))
    ]
    boundary = new_boundary(_texts([plain], answers), token)
    wrapped = [
        (_wrap_earlier(earlier, own, boundary), boundary.wrap(answer))
        for earlier, answer in (conversation_a, conversation_b)
    ]
    task = benchmark.pair_task(sample, turn, wrapped[0], wrapped[1])
    return _harden(task, boundary), boundary
