"""A new kind of conversation is its driver module plus its benchmark package: the test-only
`tests.toy_talk` (two speakers who talk past each other) runs end to end through the CLI and
the Python API, resumes, and is scored per sample, with no line of turnbench changed for it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import turnbench
from tests.conftest import REPO, run_cli
from tests.toy_talk import PAIRS, TalkPastBench
from tests.toy_talk.driver import ROUNDS
from turnbench.journal.threads import with_whole_requests
from turnbench.testing.fake_server import FakeServer

TALK = "tests.toy_talk:TalkPastBench"


@pytest.fixture
def plugin_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])}


def speaker(request: dict[str, Any]) -> str:
    """A speaker who keeps to its topic, except the tea lover, who asks about trains once
    it has heard of them (it listened)."""
    persona = request["messages"][0]["content"]
    heard = " ".join(m["content"] for m in request["messages"][1:] if m["role"] == "user")
    if "tea" in persona and "trains" in heard:
        return "Trains? Tell me more. But tea is better."
    return f"Anyway: {persona.split('about ')[-1].rstrip('.')}."


def read_log(out: Path) -> list[dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    return with_whole_requests(json.loads(line) for line in lines)


def test_a_new_kind_of_conversation_runs_through_the_cli_and_resumes(plugin_env, tmp_path):
    out = tmp_path / "talk"
    with FakeServer(responder=speaker) as model, FakeServer(responder=speaker) as user:
        args = [
            "run", "--benchmark", TALK, "--model", "openai/m", "--model-base-url",
            model.base_url, "--user-model", "openai/u", "--user-base-url", user.base_url,
            "--out", str(out), "--no-progress",
        ]  # fmt: skip
        done = run_cli(args, plugin_env)
        assert done.returncode == 0, done.stdout + done.stderr
        sent = (len(model.requests), len(user.requests))
        again = run_cli(args, plugin_env)  # resumes: nothing new is sent
        assert again.returncode == 0, again.stdout + again.stderr
        assert (len(model.requests), len(user.requests)) == sent == (2 * ROUNDS, 2 * ROUNDS)
        model_requests = list(model.requests)
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["benchmark"] == "talk-past" and results["complete"] is True
    assert results["counts"]["expected"] == results["counts"]["judged"] == len(PAIRS)
    assert results["overall"] == 0.5  # tea listened, jazz did not
    samples = {r["sample_id"]: r for r in read_log(out) if r["kind"] == "sample"}
    assert samples["tea-vs-trains"]["score"] == 1.0 and samples["jazz-vs-moss"]["score"] == 0.0
    # each side hears only the other's lines as the user's, and the log keeps what was sent
    answers = [r for r in read_log(out) if r["kind"] == "answer"]
    assert sorted(json.dumps(r["messages"]) for r in answers) == sorted(
        json.dumps(r["messages"]) for r in model_requests
    )
    assert all("moss" not in json.dumps(r["messages"][0]) for r in model_requests)


def test_a_new_kind_of_conversation_runs_through_the_api(tmp_path):
    with FakeServer(responder=speaker) as model, FakeServer(responder=speaker) as user:
        estimate = turnbench.estimate(
            "openai/m", benchmark=TalkPastBench, user_model="openai/u",
            model_base_url=model.base_url, user_base_url=[user.base_url],
        )  # fmt: skip
        assert (estimate.answers, estimate.user_turns) == (len(PAIRS) * ROUNDS,) * 2
        assert f"each conversation runs {ROUNDS} rounds" in estimate.notes
        result = turnbench.evaluate(
            "openai/m", benchmark=TalkPastBench, user_model="openai/u",
            model_base_url=model.base_url, user_base_url=[user.base_url], out=tmp_path / "api",
        )  # fmt: skip
    assert result.exit_code == 0 and result.complete and result.overall == 0.5
    assert result.typed().counts.judged == len(PAIRS)
