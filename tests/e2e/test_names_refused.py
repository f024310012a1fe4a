"""Issue 38, class 9: invisible and bidi characters in model names, through the real CLI.

`--model 'openai/vicuna-13b-v1.3\\u200b'` (and the same in --judge, --user-model, an answer
file's name, an import's --judge-name) ran, and its results sat beside those of
`vicuna-13b-v1.3` as a second row that looked the same. Each is now refused at once: exit
status 2, one line naming the character (escaped, and as U+XXXX), no traceback, nothing
sent to any endpoint and no run folder written.
"""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import run_cli
from tests.e2e.test_import_fastchat import fastchat_folder, single_rows, write_rows
from turnbench.testing.fake_server import FakeServer
from turnbench.testing.simulated_fakes import SCENARIOS

CHARACTERS = ["\u200b", "\u061c", "\u2028", "\ufeff", "\U000e0041", "\u180e"]


def code(char: str) -> str:
    return f"U+{ord(char):04X}"


def assert_refused(done, char: str, flag_or_file: str) -> None:
    """Exit status 2 and one clear line: where, the name with the character escaped, its
    code point; never a traceback, never the raw character."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    [line] = lines
    assert line.startswith("error: ") and flag_or_file in line
    assert ascii(char)[1:-1] in line and code(char) in line
    assert char not in line.replace(flag_or_file, "")


@pytest.mark.parametrize("char", CHARACTERS, ids=code)
def test_a_model_name_with_an_invisible_character_is_refused(char, env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as server:
        done = run_cli(
            ["run", "--benchmark", "mt-bench", "--model", f"openai/vicuna-13b-v1.3{char}",
             "--model-base-url", server.base_url, "--judge", "openai/judge-model",
             "--judge-base-url", server.base_url, "--out", str(out), "--limit", "1"],
            env,
        )  # fmt: skip
        assert server.requests == []
    assert_refused(done, char, "--model")
    assert not out.exists()


def test_a_judge_and_a_user_model_are_refused_the_same_way(env, tmp_path):
    scenarios = tmp_path / "support.yaml"
    scenarios.write_text(SCENARIOS, "utf-8")
    with FakeServer() as server:
        url = server.base_url
        judge = run_cli(
            ["run", "--benchmark", "mt-bench", "--model", "openai/m", "--model-base-url", url,
             "--judge", "openai/judge\u200b", "--judge-base-url", url,
             "--out", str(tmp_path / "judged")],
            env,
        )  # fmt: skip
        user = run_cli(
            ["run", "--benchmark", str(scenarios), "--model", "openai/m", "--model-base-url", url,
             "--user-model", "openai/user\ufeff", "--user-base-url", url,
             "--judge", "openai/j", "--judge-base-url", url, "--out", str(tmp_path / "user")],
            env,
        )  # fmt: skip
        assert server.requests == []
    assert_refused(judge, "\u200b", "--judge")
    assert_refused(user, "\ufeff", "--user-model")


def test_an_answer_file_named_with_an_invisible_character_is_refused(env, tmp_path, data_dir):
    """A judge-only run names each model after its answer file: a copy of vicuna's answers
    under `vicuna-13b-v1.3` + U+200B is refused before it is read, not judged as a second
    vicuna; the same file under its own name is judged."""
    answers = tmp_path / "answers"
    answers.mkdir()
    source = data_dir / "mt_bench/model_answer/vicuna-13b-v1.3.jsonl"
    twin = answers / "vicuna-13b-v1.3\u200b.jsonl"
    shutil.copy(source, twin)
    out = tmp_path / "judged"
    with FakeServer() as server:
        args = ["judge", "--benchmark", "mt-bench", "--judge", "openai/judge-model",
                "--judge-base-url", server.base_url, "--out", str(out), "--limit", "1"]  # fmt: skip
        done = run_cli([*args, "--answers", str(source), "--answers", str(twin)], env)
        assert server.requests == []
        assert_refused(done, "\u200b", twin.name)
        assert "from the file's name" in done.stderr
        assert not out.exists()
        alone = run_cli([*args, "--answers", str(source)], env)  # the control: it runs
        assert alone.returncode == 0, alone.stderr
        assert len(server.requests) == 16


def test_an_import_judge_name_with_an_invisible_character_is_refused(env, tmp_path, data_dir):
    folder = fastchat_folder(data_dir, tmp_path / "FastChat")
    write_rows(folder / "model_judgment/gpt-4_single.jsonl", single_rows(data_dir))
    out = tmp_path / "imported"
    done = run_cli(
        ["import", "--format", "fastchat", str(folder), "--out", str(out),
         "--judge-name", "gpt-4\u2028"],
        env,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "\\u2028" in done.stderr and "U+2028" in done.stderr
    assert not out.exists()
