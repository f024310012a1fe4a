"""Issue 22 item 7: JSON or YAML nested 100,000 deep, given to any reader, is one clear error
(exit 2, the file and what is wrong, no traceback), never Python's RecursionError (exit 1,
which the README reserves for an incomplete run).

Each case goes through the real CLI in a child process and points at an endpoint nobody
listens on: the file has to be refused before anything is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import JUDGE_SPEC, MODEL_SPEC, assert_clean_error

NOWHERE = "http://127.0.0.1:9/v1"
DEPTH = 100_000
DEEP = "[" * DEPTH + "]" * DEPTH
DEEP_ROW = '{"question_id": 81, "x": ' + DEEP + "}\n"
RUN = [
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
]

Case = Callable[[Path], tuple[list[str], str]]


def _file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def custom_json(tmp: Path):
    path = _file(tmp, "bench.json", DEEP)
    return ["run", "--benchmark", str(path), *RUN[1:]], "bench.json:1: JSON nested more than 100"


def custom_yaml(tmp: Path):
    path = _file(tmp, "bench.yaml", "version: 1\nname: deep\ndialogues:\n  " + DEEP + "\n")
    return ["run", "--benchmark", str(path), *RUN[1:]], "bench.yaml:4: nested more than 100"


def answers(tmp: Path):
    path = _file(tmp, "answers.jsonl", DEEP_ROW)
    args = ["judge", "--answers", str(path), "--judge", JUDGE_SPEC, "--judge-base-url", NOWHERE]
    return args, "answers.jsonl:1: JSON nested more than 100 levels deep"


def prices(tmp: Path):
    path = _file(tmp, "prices.json", '{"models": ' + DEEP + "}")
    return [*RUN, "--prices", str(path)], "prices.json: JSON nested more than 100 levels deep"


def reference_file(tmp: Path):
    path = _file(tmp, "refs.jsonl", DEEP_ROW)
    return [*RUN, "--reference-file", str(path)], "refs.jsonl:1: JSON nested more than 100"


def votes_lines(tmp: Path):
    path = _file(tmp, "votes.jsonl", DEEP_ROW)
    return ["agreement", "--votes", str(path)], "votes.jsonl:1: JSON nested more than 100"


def votes_list(tmp: Path):
    path = _file(tmp, "votes.json", "[" + DEEP + "]")
    return ["agreement", "--votes", str(path)], "votes.json:1: JSON nested more than 100"


def import_structflowbench(tmp: Path):
    path = _file(tmp, "m_evaluate.json", DEEP)
    args = ["import", "--format", "structflowbench", str(path)]
    return args, "m_evaluate.json:1: JSON nested more than 100 levels deep"


def model_extra(tmp: Path):
    # one command-line argument holds at most 128 KiB: 50,000 levels is far past the limit
    text = '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"
    return [*RUN, "--model-extra", text], "--model-extra: JSON nested more than 100 levels deep"


CASES: dict[str, Case] = {
    case.__name__: case
    for case in (
        custom_json,
        custom_yaml,
        answers,
        prices,
        reference_file,
        votes_lines,
        votes_list,
        import_structflowbench,
        model_extra,
    )
}


@pytest.mark.parametrize("case", list(CASES))
def test_deep_nesting_is_one_clear_error(case, env, tmp_path):
    args, expected = CASES[case](tmp_path)
    out = tmp_path / "run"
    done = run_cli([*args, "--out", str(out)] if args[0] != "agreement" else args, env)
    assert_clean_error(done, expected)
    assert "RecursionError" not in done.stderr
    assert len(done.stderr.splitlines()) <= 3, done.stderr  # the error, not a stack
    assert not out.exists()


def test_nesting_up_to_the_limit_is_read(env, tmp_path):
    """The limit refuses only what is deeper: a --model-extra 100 levels deep is accepted
    (the run then fails on the unreachable endpoint, not on the JSON)."""
    text = '{"a": ' + "[" * 99 + "]" * 99 + "}"
    done = run_cli([*RUN, "--model-extra", text, "--out", str(tmp_path / "run")], env)
    assert "nested" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 4, done.stderr  # the preflight's exit: the endpoint is not there
