"""Item 4, config drift: resuming with settings that would make old records invalid is
refused with a message naming what differs; --allow-new-judge adds a judge beside the old."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli, shared_data_dir
from tests.reliability.helpers import (
    JUDGE_SPEC,
    PLANNED_JUDGMENTS,
    assert_clean_error,
    invoke,
    is_judge,
    of_kind,
    read_log,
    results,
    run_args,
)
from turnbench.testing.fake_server import FakeServer, Reply


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as running:
        yield running


@pytest.fixture(scope="module")
def finished_run(server: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("drift") / "run"
    env = cli_env(shared_data_dir(), out.parent)
    done = run_cli(run_args(server.base_url, out), env)
    assert done.returncode == 0, done.stderr
    return out


def _swap(args: list[str], flag: str, value: str) -> list[str]:
    changed = list(args)
    changed[changed.index(flag) + 1] = value
    return changed


# name -> (how the resumed command differs, what the refusal must name)
DRIFTS: dict[str, tuple[list[str], list[str]]] = {
    "model": (["--model", "openai/another-model"], ["model: ", "openai/another-model"]),
    "judge": (
        ["--judge", "openai/another-judge"],
        ["judge: openai/judge-model -> openai/another-judge", "--allow-new-judge"],
    ),
    "parser": (["--parser", "compat"], ['parser: "strict" -> "compat"']),
    "answer temperature": (["--temperature", "0.5"], ["answer_sampling.temperature"]),
    "answer max tokens": (["--max-new-tokens", "77"], ["answer_sampling.max_tokens"]),
    "judge temperature": (["--judge-temperature", "0.3"], ["judge_sampling.temperature"]),
    "judge max tokens": (["--judge-max-tokens", "99"], ["judge_sampling.max_tokens"]),
    "re-asks": (["--max-reasks", "0"], ["max_reasks: 2 -> 0", "prompt_versions.reask"]),
    "system prompt": (["--system-prompt", "Be brief."], ["answer_sampling.system_prompt"]),
    "judge extra fields": (["--judge-extra", '{"seed": 7}'], ["judge_sampling.extra.seed"]),
    "reference answers": (["--reference-file", "REFERENCES"], ["reference_sha256: null -> "]),
}


@pytest.mark.parametrize("drift", list(DRIFTS))
def test_resume_with_different_settings_is_refused(
    drift, finished_run, server, env, tmp_path, capsys, monkeypatch
):
    change, expected = DRIFTS[drift]
    if "REFERENCES" in change:  # replaced reference answers: a new file for question 101
        references = tmp_path / "refs.jsonl"
        row = {"question_id": 101, "choices": [{"index": 0, "turns": ["first", "second"]}]}
        references.write_text(json.dumps(row) + "\n")
        change = [str(references) if c == "REFERENCES" else c for c in change]
    args = run_args(server.base_url, finished_run)
    if change[0] in args:
        args = _swap(args, change[0], change[1])
    else:
        args += change
    log_before = (finished_run / "log.jsonl").read_bytes()
    sent = len(server.requests)
    done = invoke(args, env, capsys, monkeypatch)
    assert_clean_error(done, "different settings", *expected)
    assert (finished_run / "log.jsonl").read_bytes() == log_before
    assert len(server.requests) == sent


def test_changed_prompt_version_is_refused(finished_run, server, env, tmp_path):
    # (a real process here, so refusals are also checked end to end)
    """A run directory written with an older version of a prompt (simulated by editing its
    config record, as an older turnbench would have written it) is not resumed."""
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy)
    lines = (copy / "log.jsonl").read_text("utf-8").splitlines()
    config = json.loads(lines[0])
    assert config["kind"] == "config"
    current = config["config"]["prompt_versions"]["judge_prompts"]
    config["config"]["prompt_versions"]["judge_prompts"] = "fastchat-2023:single-v0"
    lines[0] = json.dumps(config)
    (copy / "log.jsonl").write_text("".join(line + "\n" for line in lines), "utf-8")
    done = run_cli(run_args(server.base_url, copy), env)
    assert_clean_error(
        done,
        "different settings",
        f'prompt_versions.judge_prompts: "fastchat-2023:single-v0" -> "{current}"',
    )


def test_free_settings_may_change(finished_run, server, env):
    """Concurrency, --limit, endpoints, timeouts and budgets do not touch old records."""
    args = run_args(server.base_url, finished_run, "--concurrency", "3", "--max-attempts", "4")
    sent = len(server.requests)
    done = run_cli(args, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(server.requests) == sent


def test_allow_new_judge_keeps_old_judgments_and_reports_the_new_judge(
    finished_run, server, env, tmp_path
):
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy)
    old = results(copy)
    with FakeServer(responder=lambda request: Reply(content="Rating: [[9]]")) as second:
        args = run_args(server.base_url, copy, judge="openai/judge-two", judge_url=second.base_url)
        refused = run_cli(args, env)
        assert_clean_error(refused, "--allow-new-judge")
        sent = len(server.requests)
        done = run_cli([*args, "--allow-new-judge"], env)
        new_requests = list(second.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(server.requests) == sent  # answers were reused, nothing sent to the old one
    assert len(new_requests) == PLANNED_JUDGMENTS and all(is_judge(r) for r in new_requests)
    records = read_log(copy)
    judgments = of_kind(records, "judgment")
    assert Counter(r["judge"] for r in judgments) == {
        JUDGE_SPEC: PLANNED_JUDGMENTS,
        "openai/judge-two": PLANNED_JUDGMENTS,
    }
    now = results(copy)
    assert now["judge"] == "openai/judge-two" and now["complete"]
    assert now["overall"] == 9.0 and old["overall"] != 9.0
    assert now["usage"]["model"] == old["usage"]["model"]


def test_judge_mode_refuses_a_changed_answer_file(server: FakeServer, tmp_path: Path):
    """Judgments of old answers must not be mixed with new answers under one model name."""
    data = shared_data_dir()
    answers = tmp_path / "answers"
    answers.mkdir()
    source = data / "mt_bench/model_answer/alpaca-13b.jsonl"
    shutil.copy(source, answers / "alpaca-13b.jsonl")
    out = tmp_path / "judged"
    env = cli_env(data, tmp_path)
    args = [
        "judge",
        "--answers",
        str(answers),
        "--judge",
        JUDGE_SPEC,
        "--judge-base-url",
        server.base_url,
        "--out",
        str(out),
        "--limit",
        "1",
    ]
    assert run_cli(args, env).returncode == 0
    sent = len(server.requests)
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    rows[0]["choices"][0]["turns"][0] = "A different answer."
    (answers / "alpaca-13b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    again = run_cli(args, env)
    assert again.returncode == 2
    assert "answers of alpaca-13b: the answer file changed" in again.stderr
    assert len(server.requests) == sent
