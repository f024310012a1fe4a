"""Item 6, in-process: the budget admits exactly --max-requests answers and judgments even
when hundreds of samples ask at once, and lets the admitted ones finish and be logged."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from turnbench.backends.base import BackendStats
from turnbench.benchmarks.base import JudgeTask, Sample, Turn
from turnbench.engine.budget import Budget
from turnbench.engine.context import RunContext
from turnbench.engine.execute import execute
from turnbench.errors import RequestFailedError
from turnbench.journal.runlog import RunLog
from turnbench.judging.formats import standard_format
from turnbench.judging.judge import Judge, JudgeSettings
from turnbench.record_keys import answer_key, judgment_key
from turnbench.types import Completion, Message, RequestParams, Usage


class CountingBackend:
    """Answers after a short sleep, `concurrency` at a time, like a real endpoint."""

    def __init__(self, concurrency: int = 4, tokens: int = 10, fail: bool = False) -> None:
        self.spec = "fake/counting"
        self.stats = BackendStats()
        self.concurrency = concurrency
        self.sent = 0
        self.finished = 0
        self._tokens = tokens
        self._fail = fail
        self._semaphore = asyncio.Semaphore(concurrency)

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        async with self._semaphore:
            self.sent += 1
            self.stats.requests += 1
            await asyncio.sleep(0.01)
            self.finished += 1
        if self._fail:
            raise RequestFailedError("always failing", 1)
        usage = Usage(prompt_tokens=self._tokens, completion_tokens=0)
        self.stats.add_usage(usage)
        return Completion(text="Rating: [[5]]", usage=usage)

    async def aclose(self) -> None: ...


def _jobs(ctx: RunContext, judge: Judge, count: int, kind: str):
    async def one(index: int) -> None:
        messages: list[Message] = [{"role": "user", "content": f"question {index}"}]
        sample = Sample(id=index, group=None, turns=(Turn(user=f"question {index}"),))
        if kind == "answer":
            await ctx.answer(
                key=answer_key("m", index, 1),
                model="m",
                sample=sample,
                turn=1,
                messages=messages,
                params=RequestParams(),
            )
        else:
            await ctx.judgment(
                judge,
                JudgeTask(prompt_name="p", messages=messages),
                standard_format("rating", "rating-strict"),
                key=judgment_key(judge.id, "m", index, 1),
                model="m",
                sample=sample,
                turn=1,
            )

    return [lambda i=i: one(i) for i in range(count)]


def _run(tmp_path: Path, backend: CountingBackend, budget: Budget, kind: str, count: int = 200):
    judge = Judge(JudgeSettings(spec="fake/j", max_reasks=0), backend)
    with RunLog(tmp_path / "run") as log:
        ctx = RunContext.of_model(log, backend, budget=budget)
        outcome = asyncio.run(execute(_jobs(ctx, judge, count, kind), ctx))
        return outcome, list(log.records)


@pytest.mark.parametrize("kind", ["answer", "judgment"])
@pytest.mark.parametrize("limit", [1, 7, 50])
def test_max_requests_admits_exactly_the_budget(tmp_path, kind, limit):
    backend = CountingBackend(concurrency=4)
    outcome, records = _run(tmp_path, backend, Budget(max_requests=limit), kind)
    assert outcome.status == "budget" and f"--max-requests {limit} reached" in outcome.message
    assert backend.sent == limit  # not 0 (stopped too early) nor 200 (never stopped)
    assert backend.finished == limit and len(records) == limit  # none thrown away


def test_max_tokens_stops_within_one_round_of_in_flight_requests(tmp_path):
    backend = CountingBackend(concurrency=4, tokens=10)
    outcome, records = _run(tmp_path, backend, Budget(max_tokens=95), "answer")
    assert outcome.status == "budget"
    # 9 requests reach 90 < 95 tokens; the 10th crosses it; at most 3 others were in flight
    assert 10 <= backend.sent <= 10 + 3
    assert len(records) == backend.sent == backend.finished


def test_failed_requests_count_against_the_request_budget(tmp_path):
    backend = CountingBackend(concurrency=4, fail=True)
    outcome, records = _run(tmp_path, backend, Budget(max_requests=6), "answer")
    assert outcome.status == "budget" and backend.sent == 6
    assert [r.kind for r in records] == ["failure"] * 6


def test_no_budget_runs_everything(tmp_path):
    backend = CountingBackend(concurrency=8)
    outcome, records = _run(tmp_path, backend, Budget(), "judgment", count=60)
    assert outcome.status == "finished" and backend.sent == 60 and len(records) == 60
