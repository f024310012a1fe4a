"""Issue 22 items 7 and 9: values that used to pass the boundary and come out wrong (a model
named "", a NaN score, a token limit of 10^20, a name that breaks the table) or as a
traceback (a model name too long for a file name) are refused where they enter: exit 2,
one clear message, nothing sent.

Every case runs the real CLI in a child process against an endpoint nobody listens on (so a
case that slipped through would end in the preflight's exit 4, not 2).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import JUDGE_SPEC, MODEL_SPEC, assert_clean_error

NOWHERE = "http://127.0.0.1:9/v1"
BIG = "99999999999999999999"


def run_args(*extra: str) -> list[str]:
    return [
        "run",
        "--model",
        MODEL_SPEC,
        "--model-base-url",
        NOWHERE,
        "--judge",
        JUDGE_SPEC,
        "--judge-base-url",
        NOWHERE,
        "--max-attempts",
        "1",
        "--no-progress",
        *extra,
    ]


def bench(tmp: Path, *, weight: str = "1", tokens: str = "64") -> Path:
    path = tmp / "bench.yaml"
    path.write_text(
        f"""version: 1
name: bounds
answer: {{max_new_tokens: {tokens}}}
dialogues:
  - id: d1
    turns:
      - user: Say hello.
        rubric: {{text: Friendly., weight: {weight}}}
        checks: [{{contains: hello, weight: {weight}}}, {{max_words: 5, weight: {weight}}}]
""",
        encoding="utf-8",
    )
    return path


def refused(done, *expected: str) -> None:
    assert_clean_error(done, *expected)
    assert len(done.stderr.splitlines()) <= 5, done.stderr


# -- numbers ----------------------------------------------------------------------------------
def test_custom_weights_whose_sum_overflows_are_refused(env, tmp_path):
    """1e308 weights made the turn score inf/inf = NaN, shown as `nan`, overall null, exit 0."""
    path = bench(tmp_path, weight="1.0e+308")
    done = run_cli(run_args("--benchmark", str(path), "--out", str(tmp_path / "run")), env)
    refused(done, "bench.yaml:8: dialogues[0].turns[0].rubric.weight: a weight is a number from")
    assert "1e+06" in done.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("weight", ["0.5", "1000000"])
def test_weights_within_the_bounds_are_accepted(tmp_path, weight):
    from turnbench.benchmarks.custom.spec import load_spec

    spec = load_spec(bench(tmp_path, weight=weight))
    assert spec.dialogues[0].turns[0].rubric.weight == float(weight)


def test_custom_max_new_tokens_out_of_bounds_is_refused(env, tmp_path):
    path = bench(tmp_path, tokens=BIG)
    done = run_cli(run_args("--benchmark", str(path), "--out", str(tmp_path / "run")), env)
    refused(done, "answer.max_new_tokens: a whole number from 1 to 1000000, got " + BIG)


@pytest.mark.parametrize("flag", ["--max-new-tokens", "--judge-max-tokens", "--reask-max-tokens"])
def test_token_flags_out_of_bounds_are_refused(env, tmp_path, flag):
    done = run_cli(run_args(flag, BIG, "--out", str(tmp_path / "run")), env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "less than or equal to 1000000" in " ".join(done.stderr.split())
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ('{"max_tokens": ' + BIG + "}", "max_tokens must be a whole number from 1 to 1000000"),
        ('{"max_completion_tokens": 0}', "max_completion_tokens must be a whole number"),
        ('{"seed": 1, "temperature": 1e400}', "numbers must be finite, got inf"),
        ('{"logit_bias": {"50256": NaN}}', "numbers must be finite, got nan"),
    ],
)
def test_model_extra_values_out_of_bounds_are_refused(env, tmp_path, extra, expected):
    done = run_cli(run_args("--model-extra", extra, "--out", str(tmp_path / "run")), env)
    refused(done, "--model-extra: " + expected)


# -- names ------------------------------------------------------------------------------------
def _fastchat_folder(data_dir: Path, root: Path, models: list[str]) -> Path:
    folder = root / "data" / "mt_bench"
    for sub in ("model_answer", "model_judgment", "reference_answer"):
        (folder / sub).mkdir(parents=True)
    shutil.copy(data_dir / "mt_bench/question.jsonl", folder)
    shutil.copy(data_dir / "mt_bench/reference_answer/gpt-4.jsonl", folder / "reference_answer")
    shutil.copy(data_dir / "mt_bench/judge_prompts.jsonl", root / "data")
    shutil.copy(data_dir / "mt_bench/model_answer/alpaca-13b.jsonl", folder / "model_answer")
    questions = [
        json.loads(line)["question_id"]
        for line in (data_dir / "mt_bench/question.jsonl").read_text("utf-8").splitlines()
    ]
    rows = [
        {"question_id": q, "model": model, "judge": ["gpt-4", "single-v1" if t == 1 else
         "single-v1-multi-turn"], "user_prompt": "p", "judgment": "Rating: [[5]]",
         "score": 5.0, "turn": t, "tstamp": 1.0}
        for model in models for q in questions for t in (1, 2)
    ]  # fmt: skip
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (folder / "model_judgment/gpt-4_single.jsonl").write_text(text, "utf-8")
    return folder


def test_fastchat_model_name_too_long_for_a_file_is_one_clear_error(env, tmp_path, data_dir):
    """A 300-character model name made `is_file()` raise OSError: File name too long."""
    folder = _fastchat_folder(data_dir, tmp_path / "fc", ["m" * 300])
    out = tmp_path / "imported"
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(out)], env)
    refused(done, "none of the 1 model(s) its judgments name can be imported", "too long for a")
    assert not out.exists()


def test_fastchat_long_name_beside_good_models_is_skipped_with_a_note(env, tmp_path, data_dir):
    folder = _fastchat_folder(data_dir, tmp_path / "fc", ["alpaca-13b", "m" * 300])
    out = tmp_path / "imported"
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(out)], env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "too long for a file name (306 bytes, at most 255)" in " ".join(done.stdout.split())
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert list(results["models"]) == ["alpaca-13b"]


def test_structflowbench_file_named_only_evaluate_is_refused(env, tmp_path, data_dir):
    """`_evaluate.json` imported a model named "", which `rank` then dropped silently."""
    source = tmp_path / "evaluation"
    source.mkdir()
    released = data_dir / "structflowbench/evaluation"
    shutil.copy(released / "gpt4o_evaluate.json", source / "_evaluate.json")
    shutil.copy(released / "mistral_7b_instruct_v0_3_evaluate.json", source)
    out = tmp_path / "imported"
    done = run_cli(["import", "--format", "structflowbench", str(source), "--out", str(out)], env)
    refused(done, "_evaluate.json: the file name gives no model name; name the file MODEL_")
    assert not out.exists()


def test_answer_file_named_with_a_newline_is_refused(env, tmp_path, data_dir):
    """The model of an answer file is its name: a newline in it broke the terminal table."""
    folder = tmp_path / "answers"
    folder.mkdir()
    shutil.copy(data_dir / "mt_bench/model_answer/alpaca-13b.jsonl", folder / "evil\nmodel.jsonl")
    args = ["judge", "--answers", str(folder), "--judge", JUDGE_SPEC, "--judge-base-url", NOWHERE]
    done = run_cli([*args, "--limit", "1", "--out", str(tmp_path / "run")], env)
    refused(done, "the model name 'evil\\nmodel'", "holds the control character U+000A")
    assert done.stderr.count("\n") == 1  # the message itself is on one line


@pytest.mark.parametrize(
    ("flag", "spec", "shown"),
    [
        ("--model", "openai/a\nb", "'openai/a\\nb'"),
        ("--judge", "openai/j\x1b[31m", "U+001B"),
    ],
)
def test_model_and_judge_specs_with_control_characters_are_refused(
    env, tmp_path, flag, spec, shown
):
    args = run_args("--out", str(tmp_path / "run"))
    args[args.index(flag) + 1] = spec
    done = run_cli(args, env)
    refused(done, f"error: {flag} ", shown, "control character")
    assert "\x1b" not in done.stderr


def test_vote_names_with_control_characters_are_refused(env, tmp_path):
    votes = tmp_path / "votes.jsonl"
    row = {"question_id": 81, "model_a": "a", "model_b": "b", "winner": "model_a", "turn": 1}
    votes.write_text(
        json.dumps({**row, "judge": "gpt4\rfake"}) + "\n" + json.dumps({**row, "judge": "h"}),
        "utf-8",
    )
    done = run_cli(["agreement", "--votes", str(votes)], env)
    refused(done, "votes.jsonl:1: judge 'gpt4\\rfake' holds the control character U+000D")
