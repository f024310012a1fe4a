"""Every request the engine sends equals the one the reference implementation builds.

../shared/data/golden/ holds a sha256 per request that FastChat's and OpenCompass's own code
built from the shared data (see its README for the hash rule). Here the real engine runs
each benchmark (judge-only, pairwise, golden-context generation) with an in-process backend
that records the messages it is sent instead of calling a server, and the hashes of what it
recorded must be exactly the golden ones: every request, none missing, none extra.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from turnbench.backends.base import BackendStats
from turnbench.benchmarks.answers import load_answer_sets
from turnbench.benchmarks.base import AnswerSet, BenchmarkSettings
from turnbench.benchmarks.mt_bench import MTBench
from turnbench.benchmarks.mt_bench.data import JUDGE_PROMPTS, QUESTIONS, REFERENCES
from turnbench.benchmarks.mt_bench_101 import MTBench101
from turnbench.benchmarks.mt_bench_101.data import DIALOGUES
from turnbench.benchmarks.mt_bench_101.data import JUDGE_PROMPTS as JUDGE_TEXTS
from turnbench.engine.context import RunContext
from turnbench.engine.execute import execute
from turnbench.engine.work import Work
from turnbench.journal.runlog import RunLog
from turnbench.judging.judge import Judge, JudgeSettings
from turnbench.types import Completion, Message, RequestParams, SamplingConfig

MT_BENCH_101_ANSWER = (
    "  The answer to {id}/{turn}, with {braces}, {history} and {prediction} kept.  \n"
)


def digest(messages: list[Message]) -> str:
    canonical = json.dumps(
        [{"role": m["role"], "content": m["content"]} for m in messages],
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Recorder:
    """A backend that records every request and answers with a valid rating or verdict."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.stats = BackendStats()
        self.sent: list[tuple[list[Message], RequestParams]] = []

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        self.sent.append((messages, params))
        text = "Verdict: [[C]]" if "[[A]]" in messages[0]["content"] else "Rating: [[5]]"
        return Completion(text=text)

    async def aclose(self) -> None: ...


def run(work: Work, tmp_path: Path, model: Recorder | None = None) -> Recorder:
    judge = Recorder("fake/judge")
    with RunLog(tmp_path / "run") as log:
        ctx = RunContext.of_model(log, model, judges=[Judge(work.judges[0], judge)])
        jobs = work.jobs(ctx)
        outcome = asyncio.run(execute(jobs, ctx, handle_signals=False))
    assert outcome.status == "finished"
    return judge


def golden(data_dir: Path, name: str) -> list[dict]:
    path = data_dir / "golden" / name
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


JUDGES = [JudgeSettings(spec="fake/judge", max_reasks=0)]


@pytest.fixture(scope="module")
def mt_bench(data_dir: Path) -> MTBench:
    files = {name: data_dir / name for name in (QUESTIONS, REFERENCES, JUDGE_PROMPTS)}
    return MTBench(files, BenchmarkSettings())


def test_mt_bench_single_and_pairwise_judge_requests(mt_bench, data_dir, tmp_path):
    rows = golden(data_dir, "mt_bench_judge_requests.jsonl")
    sets = load_answer_sets(mt_bench, data_dir / "mt_bench/model_answer")
    single = run(Work(mt_bench, JUDGES, "judge", answer_sets=sets), tmp_path / "single")
    expected = Counter(r["sha256"] for r in rows if r["kind"] == "single")
    assert Counter(digest(m) for m, _ in single.sent) == expected
    assert sum(expected.values()) == 320
    # the judge request's sampling is FastChat's: temperature 0, 2048 tokens
    assert {(p.temperature, p.max_tokens, p.n) for _, p in single.sent} == {(0.0, 2048, 1)}

    pairwise = Work(mt_bench, JUDGES, "judge", judging="pairwise-all", answer_sets=sets)
    games = run(pairwise, tmp_path / "pairs")
    expected = Counter(r["sha256"] for r in rows if r["kind"] == "pair")
    assert Counter(digest(m) for m, _ in games.sent) == expected
    assert sum(expected.values()) == 320


@pytest.fixture(scope="module")
def mt_bench_101(data_dir: Path) -> MTBench101:
    files = {DIALOGUES: data_dir / DIALOGUES, JUDGE_TEXTS: data_dir / JUDGE_TEXTS}
    return MTBench101(files, BenchmarkSettings(answer=SamplingConfig(max_tokens=1024)))


def test_mt_bench_101_judge_requests(mt_bench_101, data_dir, tmp_path):
    turns = {
        sample.id: {
            turn: MT_BENCH_101_ANSWER.replace("{id}", str(sample.id)).replace("{turn}", str(turn))
            for turn in sample.judged_turns()
        }
        for sample in mt_bench_101.samples
    }
    answers = AnswerSet(model="m", path=Path("m"), sha256="", turns=turns)
    judge = run(Work(mt_bench_101, JUDGES, "judge", answer_sets=[answers]), tmp_path)
    expected = Counter(r["sha256"] for r in golden(data_dir, "mt_bench_101_judge_requests.jsonl"))
    assert sum(expected.values()) == 3615
    assert Counter(digest(m) for m, _ in judge.sent) == expected


def test_mt_bench_101_golden_context_generation_requests(mt_bench_101, data_dir, tmp_path):
    model = Recorder("fake/model")
    run(Work(mt_bench_101, JUDGES, "run", model="fake/model"), tmp_path, model)
    expected = Counter(
        r["sha256"] for r in golden(data_dir, "mt_bench_101_generation_requests.jsonl")
    )
    assert sum(expected.values()) == 3615
    assert Counter(digest(m) for m, _ in model.sent) == expected
