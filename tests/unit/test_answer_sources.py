"""What `--answers` names: one source or several, files named after their model, and the
folder per model of FastChat's forks (`MODEL/results.jsonl`, named after the folder)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from turnbench.benchmarks.answers import answer_model_name, answer_sources, load_answer_sets
from turnbench.benchmarks.base import BenchmarkSettings
from turnbench.benchmarks.mt_bench.benchmark import MTBench
from turnbench.benchmarks.mt_bench.data import JUDGE_PROMPTS, QUESTIONS, REFERENCES
from turnbench.errors import UserError
from turnbench.options import EvalOptions

VICUNA, ALPACA = "vicuna-13b-v1.3", "alpaca-13b"


@pytest.fixture(scope="module")
def mt_bench(data_dir: Path) -> MTBench:
    files = {name: data_dir / name for name in (QUESTIONS, REFERENCES, JUDGE_PROMPTS)}
    return MTBench(files, BenchmarkSettings(limit=1))


def answer_file(data_dir: Path, model: str) -> Path:
    return data_dir / "mt_bench" / "model_answer" / f"{model}.jsonl"


def test_answers_given_twice_are_both_judged(mt_bench, data_dir):
    sets = load_answer_sets(
        mt_bench, [answer_file(data_dir, ALPACA), answer_file(data_dir, VICUNA)]
    )
    assert [s.model for s in sets] == [ALPACA, VICUNA]
    # the same file named twice is one source, not a clash
    again = answer_sources([answer_file(data_dir, ALPACA), answer_file(data_dir, ALPACA)])
    assert again == [answer_file(data_dir, ALPACA)]


def test_two_sources_of_one_model_are_refused_naming_both(mt_bench, data_dir, tmp_path):
    copy = tmp_path / "elsewhere" / f"{ALPACA}.jsonl"
    copy.parent.mkdir()
    shutil.copy(answer_file(data_dir, ALPACA), copy)
    with pytest.raises(UserError, match="two answer sources name the same model") as error:
        load_answer_sets(mt_bench, [answer_file(data_dir, ALPACA), copy])
    assert str(copy) in error.value.message


def test_a_folder_per_model_is_named_after_the_folder(mt_bench, data_dir, tmp_path):
    root = tmp_path / "model_answer"
    for model in (VICUNA, ALPACA):
        (root / model).mkdir(parents=True)
        shutil.copy(answer_file(data_dir, model), root / model / "results.jsonl")
        (root / model / "config.json").write_text("{}", "utf-8")
    assert answer_model_name(root / VICUNA / "results.jsonl") == VICUNA
    assert answer_model_name(root / "other.jsonl") == "other"
    # one file, the model's folder, or the folder of folders: the model is the folder's name
    for given in (root / VICUNA / "results.jsonl", root / VICUNA):
        assert [s.model for s in load_answer_sets(mt_bench, given)] == [VICUNA]
    assert [s.model for s in load_answer_sets(mt_bench, root)] == [ALPACA, VICUNA]


def test_a_folder_without_answers_lists_what_it_holds(tmp_path):
    (tmp_path / "notes.txt").write_text("x", "utf-8")
    (tmp_path / "sub").mkdir()
    with pytest.raises(UserError, match=r"expected \*\.jsonl answer files") as error:
        answer_sources(tmp_path)
    assert "found: notes.txt, sub/" in error.value.message


def test_the_api_takes_one_source_or_several(tmp_path):
    assert EvalOptions(answers=tmp_path).answers == [tmp_path]
    assert EvalOptions(answers=[tmp_path, tmp_path / "b"]).answers == [tmp_path, tmp_path / "b"]
    assert EvalOptions().answers is None
