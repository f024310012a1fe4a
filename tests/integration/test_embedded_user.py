"""The embedded model on both sides of a conversation: SmolLM2 plays the simulated user of a
one-scenario benchmark file and answers it as the model under test, in one worker process,
through the same path as any run (no judge: the scenario is scored by a check)."""

from __future__ import annotations

import json

import pytest

from tests.integration.bounded import turnbench_bounded

pytestmark = pytest.mark.integration
LIMIT_S = 600  # 6.8 s in a whole-suite run (load ~2); llama.cpp slows several-fold under load

SCENARIO = """
version: 1
name: tiny-support
dialogues:
  - id: hello
    simulated_user:
      persona: A friendly person who wants a short greeting.
      goal: Be greeted.
      opening: Hello! Can you greet me?
      max_turns: 2
    checks:
      - min_chars: 1
"""


def test_the_embedded_model_plays_the_user_and_the_model(env, tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(SCENARIO, "utf-8")
    out = tmp_path / "run"
    args = [
        "run",
        "--benchmark",
        str(path),
        "--model",
        "local/smollm2",
        "--user-model",
        "local/smollm2",
        "--max-new-tokens",
        "24",
        "--user-max-tokens",
        "24",
        "--out",
        str(out),
    ]
    # a time limit that, on expiry, says how far the run got (not a bare hang)
    done = turnbench_bounded(args, env, limit_s=LIMIT_S, run_dir=out)
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in (out / "log.jsonl").open()]
    turns = [r for r in records if r["kind"] == "user_turn"]
    answers = [r for r in records if r["kind"] == "answer"]
    assert turns[0]["origin"] == "template" and turns[0]["text"] == "Hello! Can you greet me?"
    # the user model wrote turn 2 (unless it ended the conversation with a bare marker)
    assert len(turns) == 2 and turns[1]["origin"] == "user-model"
    assert turns[1]["user"] == "local/smollm2" and turns[1]["outputs"]
    assert 1 <= len(answers) <= 2 and all(a["text"].strip() for a in answers)
    assert all(0 < a["usage"]["completion_tokens"] <= 24 for a in answers)
    # the model under test never saw the persona: only the user's messages
    assert all("friendly person" not in json.dumps(a["messages"]) for a in answers)
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] is True and results["judges"] == []
    assert results["usage"]["user"]["requests_logged"] == 1
    assert results["pass_hat_k"] == {"1": 1.0}
