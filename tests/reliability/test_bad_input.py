"""Item 3, bad input: one clear error (exit 2, file:line, no traceback) and nothing written.

Every case points --out at a directory that must still not exist afterwards, and at an
endpoint nobody listens on: validation has to happen before anything is opened or sent.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import JUDGE_SPEC, MODEL_SPEC, assert_clean_error, invoke

NOWHERE = "http://127.0.0.1:9/v1"  # the discard port: a request would fail, not hang
ANSWERS = "mt_bench/model_answer/alpaca-13b.jsonl"

Case = Callable[[Path, Path], tuple[list[str], list[str]]]


def rows(data_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (data_dir / ANSWERS).read_text("utf-8").splitlines()]


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def judge_args(answers: Path, *extra: str) -> list[str]:
    return ["judge", "--answers", str(answers), "--judge", JUDGE_SPEC, "--limit", "1", *extra]


def run_args(*extra: str) -> list[str]:
    return [
        "run",
        "--model",
        MODEL_SPEC,
        "--model-base-url",
        NOWHERE,
        "--judge",
        JUDGE_SPEC,
        *extra,
    ]


def with_row(data_dir: Path, index: int, change: Callable[[dict], object]) -> list[str]:
    lines = [json.dumps(row) for row in rows(data_dir)]
    row = rows(data_dir)[index]
    change(row)
    lines[index] = json.dumps(row)
    return lines


def malformed_line(tmp: Path, data: Path):
    lines = [json.dumps(row) for row in rows(data)]
    lines[5] = lines[5][:40]  # a line cut in the middle
    return judge_args(write_jsonl(tmp / "answers.jsonl", lines)), [
        "answers.jsonl has 1 problem",
        "answers.jsonl:6: malformed JSON",
    ]


def missing_field(tmp: Path, data: Path):
    lines = with_row(data, 3, lambda row: row.pop("choices"))
    return judge_args(write_jsonl(tmp / "answers.jsonl", lines)), [
        "answers.jsonl:4: missing field 'choices'"
    ]


def wrong_typed_field(tmp: Path, data: Path):
    lines = with_row(data, 2, lambda row: row["choices"][0].update(turns=[1, 2]))
    return judge_args(write_jsonl(tmp / "answers.jsonl", lines)), [
        "answers.jsonl:3: field 'choices.0.turns.0': input should be a valid string"
    ]


def wrong_typed_id(tmp: Path, data: Path):
    lines = with_row(data, 0, lambda row: row.update(question_id="eighty-one"))
    return judge_args(write_jsonl(tmp / "answers.jsonl", lines)), [
        "answers.jsonl:1: field 'question_id'"
    ]


def unknown_benchmark(tmp: Path, data: Path):
    return judge_args(data / ANSWERS, "--benchmark", "mt-bench-3000"), [
        "unknown benchmark 'mt-bench-3000'",
        "known benchmarks: ",
    ]


def unknown_question_in_answers(tmp: Path, data: Path):
    lines = [json.dumps(row) for row in rows(data)]
    lines.append(json.dumps({**rows(data)[0], "question_id": 999}))
    return judge_args(write_jsonl(tmp / "answers.jsonl", lines)), [
        "answers.jsonl:81: question_id 999 is not an MT-Bench question"
    ]


def unknown_question_in_reference_file(tmp: Path, data: Path):
    reference = {"question_id": 7, "choices": [{"index": 0, "turns": ["a", "b"]}]}
    path = write_jsonl(tmp / "refs.jsonl", [json.dumps(reference)])
    return run_args("--reference-file", str(path), "--judge-base-url", NOWHERE), [
        "refs.jsonl:1: question_id 7 is not an MT-Bench question"
    ]


def unknown_dialogue_mt_bench_101(tmp: Path, data: Path):
    path = write_jsonl(tmp / "answers.jsonl", [json.dumps({"id": 5000, "turn": 1, "answer": "x"})])
    return judge_args(path, "--benchmark", "mt-bench-101"), [
        "answers.jsonl:1: id 5000 is not an MT-Bench-101 dialogue"
    ]


def duplicate_ids(tmp: Path, data: Path):
    lines = [json.dumps(row) for row in rows(data)]
    lines.append(lines[0])
    return judge_args(write_jsonl(tmp / "answers.jsonl", lines)), [
        "answers.jsonl:81: duplicate id 81 (first on line 1)"
    ]


def ids_of_another_benchmark(tmp: Path, data: Path):
    """Well-formed FastChat rows, but numbered 1-80 (as another benchmark would be)."""
    lines = [json.dumps({**row, "question_id": row["question_id"] - 80}) for row in rows(data)]
    return judge_args(write_jsonl(tmp / "answers.jsonl", lines)), [
        "answers.jsonl has 82 problems",
        "none of its question_ids is an MT-Bench question (ids are 81-160): is it an answer "
        "file of another benchmark?",
        "no answers for 8 planned question(s)",
        "answers.jsonl:1: question_id 1 is not an MT-Bench question (ids are 81-160)",
    ]


def file_of_another_benchmark(tmp: Path, data: Path):
    return judge_args(data / "mt_bench_101/mtbench101.jsonl"), [
        "no answers for 8 planned question(s)",
        "mtbench101.jsonl:1: missing field 'question_id'; missing field 'choices'",
    ]


def empty_file(tmp: Path, data: Path):
    return judge_args(write_jsonl(tmp / "answers.jsonl", ["", "  "])), [
        "answers.jsonl: the file is empty"
    ]


def non_utf8_file(tmp: Path, data: Path):
    path = tmp / "answers.jsonl"
    good = "".join(json.dumps(row) + "\n" for row in rows(data)[:2]).encode("utf-8")
    path.write_bytes(good + b'{"question_id": 83, "x": "caf' + b'\xe9"}\n')
    return judge_args(path), ["answers.jsonl:3: not valid UTF-8 (byte 0xe9"]


def unknown_provider_model(tmp: Path, data: Path):
    return ["run", "--model", "acme/model-x", "--judge", JUDGE_SPEC], [
        "--model 'acme/model-x': unknown provider 'acme'"
    ]


def unknown_provider_judge(tmp: Path, data: Path):
    return [*judge_args(data / ANSWERS)[:-4], "--judge", "acme/judge", "--limit", "1"], [
        "--judge 'acme/judge': unknown provider 'acme'"
    ]


def unknown_provider_user_model(tmp: Path, data: Path):
    args = ["run", "--benchmark", "lost-in-conversation-translation", "--model", MODEL_SPEC]
    return [*args, "--judge", JUDGE_SPEC, "--user-model", "acme/user"], [
        "--user-model 'acme/user': unknown provider 'acme'"
    ]


def corrupt_data_file(tmp: Path, data: Path):
    copy = tmp / "data"
    shutil.copytree(data / "mt_bench", copy / "mt_bench")
    target = copy / "mt_bench/question.jsonl"
    content = bytearray(target.read_bytes())
    content[1000] ^= 0x01  # one flipped bit
    target.write_bytes(bytes(content))
    return judge_args(data / ANSWERS, "--data-dir", str(copy)), [
        f"data file {target} does not match its pinned checksum"
    ]


def several_row_errors(tmp: Path, data: Path):
    """Malformed JSON, a missing field, a wrong type and a duplicate: all in one report."""
    lines = [json.dumps(row) for row in rows(data)]
    lines[2] = "{not json"
    lines[9] = json.dumps({"question_id": 90})
    lines[20] = json.dumps({**rows(data)[20], "question_id": "x"})
    lines.append(lines[0])
    return judge_args(write_jsonl(tmp / "answers.jsonl", lines)), [
        "answers.jsonl has 5 problems",
        "answers.jsonl: no answers for 1 planned question(s): 101",  # line 21 was question 101
        "answers.jsonl:3: malformed JSON",
        "answers.jsonl:10: missing field 'choices'",
        "answers.jsonl:21: field 'question_id'",
        "answers.jsonl:81: duplicate id 81 (first on line 1)",
    ]


def too_many_row_errors(tmp: Path, data: Path):
    lines = [json.dumps({"question_id": 81 + n}) for n in range(30)]
    return judge_args(write_jsonl(tmp / "answers.jsonl", lines)), [
        "answers.jsonl has 31 problems",  # 30 rows + the planned questions left unanswered
        "answers.jsonl: no answers for 8 planned question(s)",
        "answers.jsonl:19: missing field 'choices'",
        "... and 11 more problem(s)",
    ]


CASES: dict[str, Case] = {
    case.__name__: case
    for case in (
        malformed_line,
        missing_field,
        wrong_typed_field,
        wrong_typed_id,
        unknown_benchmark,
        unknown_question_in_answers,
        unknown_question_in_reference_file,
        unknown_dialogue_mt_bench_101,
        duplicate_ids,
        ids_of_another_benchmark,
        file_of_another_benchmark,
        empty_file,
        non_utf8_file,
        unknown_provider_model,
        unknown_provider_judge,
        unknown_provider_user_model,
        corrupt_data_file,
        several_row_errors,
        too_many_row_errors,
    )
}


def full_args(args: list[str], out: Path) -> list[str]:
    # --max-attempts 1: should validation ever let a case through, it fails fast
    return [*args, "--judge-base-url", NOWHERE, "--out", str(out), "--max-attempts", "1"]


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_clear_error_and_writes_nothing(
    case, env, tmp_path, data_dir, capsys, monkeypatch
):
    args, expected = CASES[case](tmp_path, data_dir)
    out = tmp_path / "run"
    done = invoke(full_args(args, out), env, capsys, monkeypatch)
    assert_clean_error(done, *expected)
    assert not out.exists(), "a rejected input must not create the run directory"


@pytest.mark.parametrize("case", ["malformed_line", "corrupt_data_file", "unknown_provider_model"])
def test_bad_input_in_a_real_process(case, env, tmp_path, data_dir):
    """The same through a child process: what a user sees, exit status and stderr included."""
    args, expected = CASES[case](tmp_path, data_dir)
    out = tmp_path / "run"
    done = run_cli(full_args(args, out), env)
    assert_clean_error(done, *expected)
    assert not out.exists()


def test_row_errors_are_capped_but_counted(env, tmp_path, data_dir, capsys, monkeypatch):
    args, _ = too_many_row_errors(tmp_path, data_dir)
    done = invoke(full_args(args, tmp_path / "run"), env, capsys, monkeypatch)
    listed = [line for line in done.stderr.splitlines() if "answers.jsonl:" in line]
    assert len(listed) == 20  # 20 problems (file-level first, then by line), then a count
    assert "answers.jsonl:20:" not in done.stderr
