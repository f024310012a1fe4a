"""A benchmark written outside turnbench, through the CLI and the Python API; the API inside
a running event loop; keys that never collide; timing keys of results.json."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest

import turnbench
from tests.conftest import REPO, run_cli
from tests.toy_bench import DIALOGUES, ToyBench
from turnbench.testing.fake_server import FakeServer, default_content

TOY = "tests.toy_bench:ToyBench"
TURNS = sum(len(turns) for _, turns in DIALOGUES.values())  # 6


@pytest.fixture
def plugin_env(env: dict[str, str]) -> dict[str, str]:
    """The CLI in a child process must find the test package, as a user's own module."""
    return {**env, "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])}


def toy_answers(path: Path) -> Path:
    rows = [
        {"id": name, "turn": turn, "answer": f"{name} answer {turn}"}
        for name, (_, turns) in DIALOGUES.items()
        for turn in range(1, len(turns) + 1)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    return path


def log_records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "log.jsonl").read_text("utf-8").splitlines()]


def expected_overall(requests: list[dict]) -> float:
    scores = [
        float(default_content(r).split("[[")[1].split("]]")[0])
        for r in requests
        if r["model"] == "judge"
    ]
    return sum(scores) / len(scores)


def test_a_plugin_benchmark_runs_through_the_cli(fake_server, plugin_env, tmp_path):
    out = tmp_path / "toy-run"
    args = [
        "run", "--benchmark", TOY, "--model", "openai/model", "--model-base-url",
        fake_server.base_url, "--judge", "openai/judge", "--judge-base-url",
        fake_server.base_url, "--out", str(out), "--no-progress",
    ]  # fmt: skip
    done = run_cli(args, plugin_env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["benchmark"] == "toy-bench" and results["complete"] is True
    assert results["counts"]["expected"] == results["counts"]["judged"] == TURNS
    assert set(results["by_topic"]) == {"small-talk", "numbers"}
    assert results["overall"] == pytest.approx(expected_overall(fake_server.requests))
    assert results["provenance"]["benchmark_ref"] == TOY
    # turn 2 was asked after the model's own turn-1 answer (the toy uses self history)
    second = [r for r in fake_server.requests if r["model"] == "model" and len(r["messages"]) == 3]
    assert len(second) == 3 and all(m["messages"][1]["role"] == "assistant" for m in second)
    # the plug-in's results render and compare like a built-in's (named: a run directory's
    # own benchmark_ref is never imported)
    shown = run_cli(
        ["report", str(out), "--out", str(tmp_path / "r.html"), "--benchmark", TOY], plugin_env
    )
    assert shown.returncode == 0, shown.stderr
    assert "by_topic" not in shown.stderr and (tmp_path / "r.html").stat().st_size > 0
    again = run_cli(args, plugin_env)  # resumes: nothing new is sent
    assert again.returncode == 0 and len(fake_server.requests) == 2 * TURNS


def test_a_plugin_benchmark_judges_answer_files_through_the_cli(fake_server, plugin_env, tmp_path):
    answers = toy_answers(tmp_path / "toy-model.jsonl")
    out = tmp_path / "toy-judged"
    done = run_cli(
        ["judge", "--benchmark", TOY, "--answers", str(answers), "--judge", "openai/judge",
         "--judge-base-url", fake_server.base_url, "--out", str(out), "--no-progress"],
        plugin_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert list(results["models"]) == ["toy-model"]
    assert results["models"]["toy-model"]["counts"]["judged"] == TURNS
    judged = [r for r in fake_server.requests if r["model"] == "judge"]
    assert any("greet answer 1" in r["messages"][1]["content"] for r in judged)


def test_the_api_runs_a_benchmark_class_and_judges_answers(fake_server, tmp_path):
    seen: list[tuple[str, str]] = []
    result = turnbench.evaluate(
        "openai/model",
        benchmark=ToyBench,
        model_base_url=fake_server.base_url,
        judge="openai/judge",
        judge_base_url=fake_server.base_url,
        out=tmp_path / "api-run",
        progress=lambda stage, outcome: seen.append((stage, outcome)),
    )
    assert result.exit_code == 0 and result.complete
    assert result.overall == pytest.approx(expected_overall(fake_server.requests))
    assert Counter(stage for stage, _ in seen) == {"answers": TURNS, "judgments": TURNS}
    typed = result.typed()  # (typed by the benchmark: its tables are fields of their own)
    from turnbench.results.shapes import SingleRunResults

    assert isinstance(typed, SingleRunResults) and typed.counts.judged == TURNS
    assert type(typed).__name__ == "ToyBenchRunResults" and "by_topic" in type(typed).model_fields

    judged = turnbench.judge_answers(
        toy_answers(tmp_path / "m.jsonl"),
        benchmark=ToyBench,
        out=tmp_path / "api-judged",
        **_judge_url(fake_server),  # a judge given as a JudgeOption (endpoints attached)
    )
    assert judged.complete and list(judged.results["models"]) == ["m"]

    run = turnbench.load_run(tmp_path / "api-run", benchmark=ToyBench)
    rows = list(run.turns())
    assert len(rows) == TURNS and {r["status"] for r in rows} == {"scored"}
    assert {r["sample_id"] for r in rows} == set(DIALOGUES)
    assert run.overall == result.overall and run.typed().complete


def _judge_url(server: FakeServer) -> dict:
    from turnbench.options import JudgeOption

    return {"judge": [JudgeOption(spec="openai/judge", base_urls=(server.base_url,))]}


def test_the_api_works_inside_a_running_event_loop(fake_server, tmp_path, capsys):
    """As in a notebook: the async calls work in the running loop; the sync ones refuse
    clearly; nothing is printed."""

    async def notebook() -> tuple[object, str]:
        result = await turnbench.aevaluate(
            "openai/model",
            benchmark=ToyBench,
            model_base_url=fake_server.base_url,
            out=tmp_path / "in-loop",
            **_judge_url(fake_server),
        )
        with pytest.raises(RuntimeError) as refused:
            turnbench.evaluate("openai/model", benchmark=ToyBench, out=tmp_path / "x")
        loaded = await turnbench.aload_run(tmp_path / "in-loop")
        assert loaded.complete
        return result, str(refused.value)

    result, message = asyncio.run(notebook())
    assert result.complete and result.results["counts"]["judged"] == TURNS  # type: ignore[attr-defined]
    assert "aevaluate" in message and "running event loop" in message
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_the_package_root_exports_the_api():
    for name in ("evaluate", "aevaluate", "judge_answers", "ajudge_answers", "load_run",
                 "aload_run"):  # fmt: skip
        assert name in turnbench.__all__ and callable(getattr(turnbench, name))


def test_version_flag(env):
    done = run_cli(["--version"], env, process=True)
    assert done.returncode == 0 and done.stdout.strip() == turnbench.__version__


def test_model_names_with_separators_never_share_a_key(fake_server, env, tmp_path, data_dir):
    """Pairwise games of models named `a|b`, `c`, `a`, `b|c` (the old `|`-joined keys made
    (a|b, c) and (a, b|c) one game)."""
    source = (data_dir / "mt_bench/model_answer/alpaca-13b.jsonl").read_text("utf-8")
    answers = tmp_path / "answers"
    answers.mkdir()
    names = ["a|b", "c", "a", "b|c"]
    for name in names:
        (answers / f"{name}.jsonl").write_text(source, "utf-8")
    out = tmp_path / "pairs"
    done = run_cli(
        ["judge", "--benchmark", "mt-bench", "--mode", "pairwise-all", "--answers", str(answers),
         "--judge", "openai/judge", "--judge-base-url", fake_server.base_url, "--out", str(out),
         "--limit", "1", "--no-progress"],
        env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    games = [r for r in log_records(out) if r["kind"] == "judgment"]
    pairs = 6  # every pair of 4 models
    assert len(games) == pairs * 8 * 2 * 2 == len(fake_server.requests)
    assert len({g["key"] for g in games}) == len(games)
    for kind in ("answer", "judgment"):
        keys = [r["key"] for r in log_records(out) if r["kind"] == kind]
        assert len(keys) == len(set(keys))
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] and set(results["models"]) == set(names)
    assert results["counts"]["pairs"]["expected"] == pairs * 8 * 2


def test_timing_keys_span_every_invocation(fake_server, env, tmp_path):
    out = tmp_path / "timed"
    args = [
        "run", "--benchmark", "mt-bench", "--model", "openai/model", "--model-base-url",
        fake_server.base_url, "--judge", "openai/judge", "--judge-base-url",
        fake_server.base_url, "--out", str(out), "--limit", "1", "--no-progress",
    ]  # fmt: skip
    assert run_cli([*args, "--max-requests", "3"], env).returncode == 1  # stopped by budget
    first = json.loads((out / "results.json").read_text("utf-8"))
    time.sleep(1.1)
    assert run_cli(args, env).returncode == 0
    second = json.loads((out / "results.json").read_text("utf-8"))
    assert second["started_at"] == first["started_at"]
    assert second["finished_at"] > first["finished_at"]
    assert second["wall_seconds"] > first["wall_seconds"] > 0
    assert second["started_at"].endswith("+00:00")
