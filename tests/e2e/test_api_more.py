"""More of the Python API: `ajudge_answers` inside a running event loop, a finished run's
turn rows and DataFrame, and a benchmark given as an instance instead of its class."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest

import turnbench
from tests.toy_bench import ToyBench
from turnbench.benchmarks.base import BenchmarkSettings
from turnbench.testing.fake_server import FakeServer

MODEL = "alpaca-13b"
JUDGED = 16  # MT-Bench with limit=1: one question per category (8), two turns each


@pytest.fixture(autouse=True)
def private_dirs(monkeypatch: pytest.MonkeyPatch, data_dir: Path, tmp_path: Path) -> None:
    """In-process runs see our data and a private cache, never the user's."""
    monkeypatch.setenv("TURNBENCH_DATA_DIR", str(data_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


def answer_file(data_dir: Path, tmp_path: Path) -> Path:
    path = tmp_path / f"{MODEL}.jsonl"
    shutil.copy(data_dir / "mt_bench" / "model_answer" / f"{MODEL}.jsonl", path)
    return path


def source_turns(path: Path) -> dict[tuple[str, int], str]:
    """(question id, turn) -> the answer text of a FastChat answer file."""
    turns = {}
    for line in path.read_text("utf-8").splitlines():
        row = json.loads(line)
        for number, text in enumerate(row["choices"][0]["turns"], start=1):
            turns[(str(row["question_id"]), number)] = text
    return turns


def test_ajudge_answers_works_inside_a_running_event_loop(fake_server, data_dir, tmp_path):
    answers = answer_file(data_dir, tmp_path)

    async def notebook() -> tuple[turnbench.RunResult, str]:
        result = await turnbench.ajudge_answers(
            answers,
            judge="openai/judge",
            judge_base_url=fake_server.base_url,
            out=tmp_path / "judged",
            data_dir=data_dir,
            limit=1,
        )
        with pytest.raises(RuntimeError) as refused:
            turnbench.judge_answers(answers, judge="openai/judge", out=tmp_path / "never")
        return result, str(refused.value)

    result, message = asyncio.run(notebook())
    assert result.exit_code == 0 and result.status == "finished" and result.complete
    counts = result.results["counts"]
    assert counts["expected"] == counts["judged"] == JUDGED
    assert counts["failed"] == counts["pending"] == 0
    assert result.results["models"][MODEL]["counts"]["judged"] == JUDGED
    judged = [r for r in fake_server.requests if r["model"] == "judge"]
    assert len(judged) == len(fake_server.requests) == JUDGED  # nothing but the judge ran
    on_disk = json.loads((tmp_path / "judged" / "results.json").read_text("utf-8"))
    assert on_disk["complete"] is True and on_disk["counts"]["judged"] == JUDGED
    # the sync form refused before doing anything, and named the async one
    assert "ajudge_answers" in message and "running event loop" in message
    assert not (tmp_path / "never").exists()


@pytest.fixture
def judged_run(fake_server: FakeServer, data_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "judged"
    result = turnbench.judge_answers(
        answer_file(data_dir, tmp_path),
        judge="openai/judge",
        judge_base_url=fake_server.base_url,
        out=out,
        data_dir=data_dir,
        limit=1,
    )
    assert result.complete and result.results["counts"]["judged"] == JUDGED
    return out


def test_turn_rows_of_a_finished_run(judged_run, tmp_path):
    run = turnbench.load_run(judged_run)
    rows = list(run.turns())
    assert len(rows) == JUDGED == run.results["counts"]["judged"]
    for row in rows:
        assert {"sample_id", "turn", "score", "answer"} <= set(row)
        assert row["model"] == MODEL and row["status"] == "scored"
        assert isinstance(row["score"], (int, float)) and 1 <= row["score"] <= 10
    keys = {(str(r["sample_id"]), r["turn"]) for r in rows}
    assert len(keys) == JUDGED and {turn for _, turn in keys} == {1, 2}
    # each row carries the answer that was judged, exactly as the answer file has it
    source = source_turns(tmp_path / f"{MODEL}.jsonl")
    assert all(row["answer"] == source[(str(row["sample_id"]), row["turn"])] for row in rows)
    scores = [row["score"] for row in rows]
    assert run.results["models"][MODEL]["overall"] == pytest.approx(sum(scores) / len(scores))


def test_to_pandas_gives_the_turn_rows_as_a_dataframe(judged_run):
    pandas = pytest.importorskip("pandas")
    run = turnbench.load_run(judged_run)
    frame = run.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    rows = list(run.turns())
    assert len(frame) == len(rows) == JUDGED
    assert {"sample_id", "turn", "score", "answer", "status"} <= set(frame.columns)
    assert sorted(frame["score"].tolist()) == sorted(row["score"] for row in rows)
    assert set(frame["turn"]) == {1, 2}


def test_to_pandas_without_pandas_says_how_to_install_it(judged_run, monkeypatch):
    run = turnbench.load_run(judged_run)
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    with pytest.raises(turnbench.UserError) as missing:
        run.to_pandas()
    assert "pip install pandas" in str(missing.value)
    assert len(list(run.turns())) == JUDGED  # the rows themselves need no pandas


@pytest.mark.parametrize("call", ["evaluate", "judge_answers"])
def test_a_benchmark_instance_is_refused_with_a_hint_to_pass_the_class(call, fake_server, tmp_path):
    instance = ToyBench({}, BenchmarkSettings())
    out = tmp_path / "instance-run"
    common = {
        "benchmark": instance,
        "judge": "openai/judge",
        "judge_base_url": fake_server.base_url,
        "out": out,
    }
    with pytest.raises(turnbench.UserError) as refused:
        if call == "evaluate":
            turnbench.evaluate("openai/model", model_base_url=fake_server.base_url, **common)
        else:
            turnbench.judge_answers(tmp_path / "toy-model.jsonl", **common)
    assert "class" in str(refused.value).lower(), str(refused.value)
    assert fake_server.requests == [] and not out.exists()  # refused before any work
