"""A judged turn that gets no judge request (checks that need no judge) is scored from its
answer once it is answered: the engine hands the answer text to `aggregate`, counts the turn
as judged, and sends nothing to the judge for it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import turnbench
from turnbench.benchmarks.base import (
    AnswerSet,
    Benchmark,
    BenchmarkSettings,
    JudgedTurn,
    JudgeTask,
    Pair,
    Sample,
    Turn,
)
from turnbench.benchmarks.tables import ScoreTables
from turnbench.testing.fake_server import FakeServer, Reply


class CheckedTables(ScoreTables):
    checked: dict[str, bool]  # dialogue -> whether its unjudged turn 2 says "ok"
    answers_seen: list[str]  # "<dialogue><turn>:<answer>" of every item aggregate was given


class HalfJudged(Benchmark):
    """Two two-turn dialogues: turn 1 is rated by the judge, turn 2 is checked
    only for the word "ok" in the answer."""

    name = "half-judged"
    description = "turn 1 judged, turn 2 checked without a judge (a test plug-in)"
    results_model = CheckedTables

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        super().__init__(files, settings)
        self._samples = [
            Sample(id=name, group="g", turns=(Turn(user=f"{name} one"), Turn(user=f"{name} two")))
            for name in ("a", "b")
        ]

    @property
    def samples(self) -> list[Sample]:
        return self._samples

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        if turn == 2:
            return []
        text = f"Rate this answer. Rating: [[rating]]\n{answer}"
        return [JudgeTask("rate", [{"role": "user", "content": text}])]

    def prompt_versions(self) -> dict[str, str]:
        return {"judge_prompts": "half-v1"}

    def load_answer_file(self, path: Path) -> AnswerSet:
        raise NotImplementedError

    def aggregate(self, judged: Sequence[JudgedTurn]) -> CheckedTables:
        checked = {
            str(j.sample.id): j.answer is not None and "ok" in j.answer
            for j in judged
            if j.turn == 2 and j.status == "scored"
        }
        ratings = [j.score for j in judged if j.turn == 1 and j.score is not None]
        return CheckedTables(
            overall=sum(ratings) / len(ratings) if ratings else None,
            overall_ci95=None,
            checked=checked,
            answers_seen=sorted(f"{j.sample.id}{j.turn}:{j.answer}" for j in judged),
        )


def responder(request: dict) -> Reply:
    if request["model"] == "judge":
        return Reply(content="Fine. Rating: [[7]]")
    user = request["messages"][-1]["content"]
    if user == "a two":
        return Reply(content="<think>hm</think>ok then")
    if user == "b two":
        return Reply(content="no")
    return Reply(content=f"answer to {user}")


def test_turns_without_judge_requests_are_scored_from_their_answers(tmp_path):
    server = FakeServer(responder=responder).start()
    try:
        result = turnbench.evaluate(
            "openai/model",
            benchmark=HalfJudged,
            model_base_url=server.base_url,
            judge="openai/judge",
            judge_base_url=server.base_url,
            out=tmp_path / "run",
        )
        judge_requests = [r for r in server.requests if r["model"] == "judge"]
    finally:
        server.stop()
    assert result.exit_code == 0 and result.complete
    results = result.results
    assert len(judge_requests) == 2  # turn 1 of each dialogue only
    assert results["counts"]["expected"] == results["counts"]["judged"] == 4
    assert results["counts"]["pending"] == 0 and results["overall"] == 7.0
    assert results["checked"] == {"a": True, "b": False}
    # every judged item carries the cleaned answer of its turn
    assert results["answers_seen"] == [
        "a1:answer to a one",
        "a2:ok then",
        "b1:answer to b one",
        "b2:no",
    ]
