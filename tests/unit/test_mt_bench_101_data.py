"""MT-Bench-101 data: the real file's turn counts, --limit, options, and answer-file checks."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from turnbench.benchmarks.answers import load_answer_sets
from turnbench.benchmarks.base import AnswerSet, BenchmarkSettings
from turnbench.benchmarks.mt_bench_101.benchmark import MTBench101, select_dialogues
from turnbench.benchmarks.mt_bench_101.data import DIALOGUES, JUDGE_PROMPTS, Dialogue
from turnbench.engine.work import Work
from turnbench.errors import UserError
from turnbench.judging.judge import JudgeSettings
from turnbench.types import SamplingConfig

# docs: shared/data/README.md
DIALOGUES_PER_TASK = {
    "AR": 153,
    "IC": 150,
    "SI": 149,
    "CC": 147,
    "CR": 136,
    "MR": 108,
    "PI": 87,
    "TS": 83,
    "CM": 80,
    "SC": 77,
    "FR": 74,
    "SA": 73,
    "GR": 71,
}
SKIP_FIRST = {"CM", "AR", "CR", "FR", "SC", "SA"}


def make_benchmark(data_dir: Path, limit: int | None = None, **options: str) -> MTBench101:
    files = {DIALOGUES: data_dir / DIALOGUES, JUDGE_PROMPTS: data_dir / JUDGE_PROMPTS}
    settings = BenchmarkSettings(
        answer=SamplingConfig(max_tokens=1024), limit=limit, options=dict(options)
    )
    return MTBench101(files, settings)


def planned_keys(benchmark: MTBench101, mode: str, models: list[str]) -> dict[str, set[str]]:
    judges = [JudgeSettings(spec="openai/judge")]
    if mode == "run":
        return Work(benchmark, judges, "run", model=models[0]).planned_keys()
    sets = [AnswerSet(model=m, path=Path(m), sha256="", turns={}) for m in models]
    return Work(benchmark, judges, "judge", answer_sets=sets).planned_keys()


def test_real_data_counts(data_dir):
    benchmark = make_benchmark(data_dir)
    assert len(benchmark.dialogues) == 1388
    assert sum(len(d.history) for d in benchmark.dialogues) == 4208
    assert len(benchmark.turns) == 3615
    assert Counter(d.task for d in benchmark.planned) == DIALOGUES_PER_TASK
    assert benchmark.skip_first == SKIP_FIRST
    # judged turns = all turns minus the first turn of every skip-first dialogue
    per_task_turns = Counter(d.task for d, _ in benchmark.turns)
    for task, dialogues in DIALOGUES_PER_TASK.items():
        total = sum(len(d.history) for d in benchmark.dialogues if d.task == task)
        assert per_task_turns[task] == total - (dialogues if task in SKIP_FIRST else 0)
    assert all(t >= 2 for d, t in benchmark.turns if d.task in SKIP_FIRST)
    keys = planned_keys(benchmark, "run", ["m"])
    assert len(keys["answers"]) == len(keys["judgments"]) == 3615
    assert planned_keys(benchmark, "judge", ["a", "b"]).keys() == {"judgments"}
    assert len(planned_keys(benchmark, "judge", ["a", "b"])["judgments"]) == 2 * 3615


def test_limit_takes_the_lowest_ids_of_every_task(data_dir):
    benchmark = make_benchmark(data_dir, limit=2)
    assert Counter(d.task for d in benchmark.planned) == dict.fromkeys(DIALOGUES_PER_TASK, 2)
    for task in DIALOGUES_PER_TASK:
        ids = sorted(d.id for d in benchmark.dialogues if d.task == task)
        assert sorted(d.id for d in benchmark.planned if d.task == task) == ids[:2]


def test_select_dialogues_orders_by_id():
    rows = [
        Dialogue(task=task, id=i, history=[{"user": "u", "bot": "b"}])
        for i, task in [(5, "A"), (2, "A"), (9, "B"), (3, "A"), (1, "B")]
    ]
    assert [d.id for d in select_dialogues(rows, 2)] == [1, 2, 3, 9]
    assert [d.id for d in select_dialogues(rows, None)] == [1, 2, 3, 5, 9]


def test_options_are_recorded_and_checked(data_dir):
    assert make_benchmark(data_dir).config_options() == {
        "context": "golden",
        "reference_mode": "compat",
    }
    chosen = make_benchmark(data_dir, context="self", reference_mode="golden-answer")
    assert chosen.config_options() == {"context": "self", "reference_mode": "golden-answer"}
    with pytest.raises(UserError, match="--context 'mine'"):
        make_benchmark(data_dir, context="mine")
    with pytest.raises(UserError, match="baseline"):
        make_benchmark(data_dir, baseline="x")


def test_answer_temperature_defaults_to_zero(data_dir):
    benchmark = make_benchmark(data_dir)
    params = benchmark.answer_params(benchmark.samples[0])
    assert (params.temperature, params.max_tokens, params.n) == (0.0, 1024, 1)


# -- answer files for judge-only runs --------------------------------------------------------
def write(path: Path, rows: list) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def planned_rows(benchmark: MTBench101) -> list[dict]:
    return [{"id": d.id, "turn": t, "answer": f"a{d.id}-{t}"} for d, t in benchmark.turns]


def test_valid_answer_file(data_dir, tmp_path):
    benchmark = make_benchmark(data_dir, limit=1)
    rows = planned_rows(benchmark)
    (answer_set,) = load_answer_sets(benchmark, write(tmp_path / "my-model.jsonl", rows))
    assert answer_set.model == "my-model"
    assert answer_set.turns[rows[0]["id"]][rows[0]["turn"]] == rows[0]["answer"]
    assert sum(len(t) for t in answer_set.turns.values()) == len(benchmark.turns) == 30


def test_every_bad_row_is_reported_with_its_line(data_dir, tmp_path):
    benchmark = make_benchmark(data_dir, limit=1)
    rows = planned_rows(benchmark)
    sc = next(d for d in benchmark.planned if d.task == "SC")
    bad = [
        *rows,  # lines 1-30 are fine
        {"id": 5000, "turn": 1, "answer": "x"},  # 31: unknown id
        {"id": rows[0]["id"], "turn": 9, "answer": "x"},  # 32: no such turn
        {"id": sc.id, "turn": 1, "answer": "x"},  # 33: not judged
        dict(rows[1]),  # 34: duplicate
        {"id": "7", "turn": 1, "answer": "x"},  # 35: wrong type
        {"id": 7, "turn": 1.0, "answer": "x"},  # 36: wrong type
        {"id": 7, "turn": 1, "answer": 3},  # 37: wrong type
        {"id": 7, "turn": 1},  # 38: missing field
        "[1, 2]",  # 39: not an object
    ]
    path = write(tmp_path / "bad.jsonl", bad)
    with pytest.raises(UserError) as caught:
        load_answer_sets(benchmark, path)
    message = caught.value.message
    assert f"{path} has 9 problems" in message
    for line, text in [
        (31, "id 5000 is not an MT-Bench-101 dialogue"),
        (32, "has turns 1-"),
        (33, f"turn 1 of dialogue {sc.id} is not judged"),
        (34, "duplicate answer"),
        (35, "field 'id'"),
        (36, "field 'turn'"),
        (37, "field 'answer'"),
        (38, "missing field 'answer'"),
        (39, "expected a JSON object"),
    ]:
        assert any(f"{path}:{line}: " in part and text in part for part in message.splitlines())


def test_missing_planned_turns_are_listed(data_dir, tmp_path):
    benchmark = make_benchmark(data_dir, limit=1)
    rows = planned_rows(benchmark)
    path = write(tmp_path / "short.jsonl", rows[:-2])
    with pytest.raises(UserError, match="no answers for 2 planned turn"):
        load_answer_sets(benchmark, path)


def test_malformed_json_is_reported(data_dir, tmp_path):
    benchmark = make_benchmark(data_dir, limit=1)
    path = write(tmp_path / "broken.jsonl", [*planned_rows(benchmark), '{"id": 1,'])
    with pytest.raises(UserError, match=r"broken\.jsonl:31: malformed JSON"):
        load_answer_sets(benchmark, path)


def test_folder_gives_one_model_per_file(data_dir, tmp_path):
    benchmark = make_benchmark(data_dir, limit=1)
    folder = tmp_path / "answers"
    folder.mkdir()
    write(folder / "alpha.jsonl", planned_rows(benchmark))
    write(folder / "beta.jsonl", planned_rows(benchmark))
    assert [s.model for s in load_answer_sets(benchmark, folder)] == ["alpha", "beta"]
