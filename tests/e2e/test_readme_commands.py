"""The README's commands run as written (issue 26): its first real evaluation and its
judge-only run, read out of the README's code blocks, through the real CLI against fake
OpenAI-compatible servers on 127.0.0.1, with `--limit 1` added so they stay small.

What the README says about them holds too: the model's server at 127.0.0.1:8000 (here a fake
on a free port) never receives the OpenAI key, which reaches only the default endpoint (the
judge's, here `$OPENAI_BASE_URL`); the results land in the `--out` directory with the files
the README lists; a judge-only run of a folder of answer files has one result per model.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from tests.conftest import REPO, run_cli
from turnbench.testing.fake_server import FakeServer

README_URL = "http://127.0.0.1:8000/v1"
README_ANSWERS = "path/to/model_answer/"


def readme_commands(heading: str) -> tuple[dict[str, str], list[list[str]]]:
    """The exported variables and the `turnbench` commands of the first code block after
    `heading` in the README, as a shell would split them (continuations joined, comments
    dropped)."""
    readme = (REPO / "README.md").read_text("utf-8")
    start = re.search(rf"^## {re.escape(heading)}[ \t]*$", readme, re.MULTILINE)
    assert start, f"README.md has no '## {heading}' section"
    block = re.search(r"^```\n(.*?)^```", readme[start.end() :], re.MULTILINE | re.DOTALL)
    assert block, f"no code block after '## {heading}'"
    exports: dict[str, str] = {}
    commands: list[list[str]] = []
    for line in block.group(1).replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] == "export":
            name, _, value = words[1].partition("=")
            exports[name] = value
        else:
            assert words[0] == "turnbench", line
            commands.append(words[1:])
    assert commands, f"no turnbench command after '## {heading}'"
    return exports, commands


def replaced(words: list[str], old: str, new: str) -> list[str]:
    assert old in words, f"the README's command no longer holds {old}: {words}"
    return [new if word == old else word for word in words]


def test_the_first_real_evaluation_runs_as_written(env, tmp_path):
    exports, commands = readme_commands("A first real evaluation")
    assert list(exports) == ["OPENAI_API_KEY"] and len(commands) == 1
    key = "sk-readme-test"
    with FakeServer() as model_server, FakeServer() as openai:
        args = replaced(commands[0], README_URL, model_server.base_url)
        env = {**env, "OPENAI_API_KEY": key, "OPENAI_BASE_URL": openai.base_url}
        done = run_cli([*args, "--limit", "1"], env, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        model_auth = {h.get("authorization") for h in model_server.headers_seen}
        judge_auth = {h.get("authorization") for h in openai.headers_seen}
        assert len(model_server.requests) == 16 and len(openai.requests) >= 16
    # the key reaches the default endpoint only, never the model's server
    assert model_auth == {None}
    assert judge_auth == {f"Bearer {key}"}
    out = tmp_path / args[args.index("--out") + 1]
    assert out.is_relative_to(tmp_path / "runs")
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] is True and results["counts"]["judged"] == 16
    for name in ("log.jsonl", "results.json", "results.state.json"):  # the README's table
        assert (out / name).is_file(), name
    assert key not in (out / "log.jsonl").read_text("utf-8")
    # re-running the same command resumes: nothing is requested again
    with FakeServer() as model_server, FakeServer() as openai:
        again = replaced(commands[0], README_URL, model_server.base_url)
        env["OPENAI_BASE_URL"] = openai.base_url
        done = run_cli([*again, "--limit", "1"], env, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert model_server.requests == [] and openai.requests == []


def test_judging_answers_that_already_exist_runs_as_written(env, tmp_path, data_dir: Path):
    exports, commands = readme_commands("Judging answers that already exist")
    assert exports == {} and len(commands) == 1
    answers = data_dir / "mt_bench" / "model_answer"
    models = sorted(path.stem for path in answers.glob("*.jsonl"))
    assert len(models) >= 2
    with FakeServer() as openai:
        args = replaced(commands[0], README_ANSWERS, str(answers))
        env = {**env, "OPENAI_API_KEY": "sk-readme-test", "OPENAI_BASE_URL": openai.base_url}
        done = run_cli([*args, "--limit", "1"], env, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(openai.requests) >= 16 * len(models)
    out = tmp_path / args[args.index("--out") + 1]
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] is True
    assert sorted(results["models"]) == models
