"""Issue 38, class 10: a simulated user that recites its hidden instructions, end to end.

A user model replying "My hidden instructions are: " + the system message it was sent
(persona, goal, facts, rules) had the model under test read all of it, with `problems`
empty, and the end markers the rules spell out recorded the conversation as abandoned.
docs/simulated-users.md promises the model under test never sees the persona. Here the real
CLI runs the persona scenarios against three fake servers (model, user, judge) on 127.0.0.1
with such a user model: the recited spans reach the model as RECITAL_MARK, every such turn
is counted under "recited_instructions", no conversation ends by the recital's markers, and
--strict-user asks the user model again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from turnbench.engine.user_quality import RECITAL_MARK, RECITED
from turnbench.engine.user_turns import MAX_USER_REASKS
from turnbench.journal.threads import with_whole_requests
from turnbench.testing.fake_server import FakeServer
from turnbench.testing.simulated_fakes import GOAL, PERSONA, SCENARIOS
from turnbench.testing.simulated_fakes import scenario_judge as judge_reply
from turnbench.testing.simulated_fakes import scenario_model as model_reply

#: what no request to the model under test may hold: both scenarios' personas and goals,
#: and the user model's rules
SECRETS = (
    PERSONA,
    GOAL,
    "Someone who only wants to say hello.",
    "Be greeted back.",
    "You play a user talking to an AI assistant",
    "Stay in this role",
    "Invent no facts",
    "reply with only",
    "GOAL_MET",
    "GIVE_UP",
)


def reciter(request: dict[str, Any]) -> str:
    """A user model that recites the system message it was sent, whatever it is asked."""
    return "My hidden instructions are: " + request["messages"][0]["content"]


def run(tmp_path: Path, env: dict[str, str], name: str, *extra: str) -> dict[str, Any]:
    """One run of the scenarios; what each role's server received, and the run folder."""
    path = tmp_path / "support.yaml"
    path.write_text(SCENARIOS, "utf-8")
    out = tmp_path / name
    with (
        FakeServer(responder=model_reply) as model,
        FakeServer(responder=reciter) as user,
        FakeServer(responder=judge_reply) as judge,
    ):
        done = run_cli(
            ["run", "--benchmark", str(path), "--model", "openai/model-under-test",
             "--model-base-url", model.base_url, "--user-model", "openai/user-model",
             "--user-base-url", user.base_url, "--judge", "openai/judge-model",
             "--judge-base-url", judge.base_url, "--out", str(out), *extra],
            env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr + done.stdout
        return {"out": out, "model": list(model.requests), "user": list(user.requests)}


def records(out: Path, kind: str) -> list[dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    return [r for r in with_whole_requests(map(json.loads, lines)) if r["kind"] == kind]


def test_a_recited_system_message_never_reaches_the_model_and_is_counted(env, tmp_path):
    done = run(tmp_path, env, "run")
    out = done["out"]
    # the model under test: neither persona, nor goal, nor rules, nor markers; the mark
    assert done["model"]
    for request in done["model"]:
        text = json.dumps(request["messages"], ensure_ascii=False)
        for secret in SECRETS:
            assert secret not in text, secret
    said = [m["content"] for r in done["model"] for m in r["messages"] if m["role"] == "user"]
    recited = [text for text in said if text.startswith("My hidden instructions are:")]
    assert recited and all(RECITAL_MARK in text for text in recited)
    # (the facts are the user's to give: they stay, between the two marks)
    assert all("order number 4417" in text for text in recited if "4417" in text)
    # every user-model turn is flagged, none ended the conversation
    turns = [t for t in records(out, "user_turn") if t["origin"] == "user-model"]
    assert turns and all(RECITED in t["problems"] for t in turns)
    assert all(t.get("ended") is None for t in turns)
    assert all(t["outputs"][0].startswith("My hidden instructions are: You play") for t in turns)
    # both conversations ran to max_turns (refund 4, greeting 2): the opening is the
    # template's, every other user turn the user model's
    by_sample: dict[str, int] = {}
    for turn in records(out, "user_turn"):
        by_sample[turn["sample_id"]] = by_sample.get(turn["sample_id"], 0) + 1
    assert by_sample == {"refund-sim0": 4, "greeting-sim0": 2}
    assert len(turns) == 3 + 2 and len(done["user"]) == len(turns)
    results = json.loads((out / "results.json").read_text("utf-8"))
    simulator = results["simulator"]
    assert simulator["conversations_with"][RECITED] == 2
    assert simulator["turns_with"][RECITED] == len(turns)
    assert simulator["ended"].get("abandoned", 0) == 0 and simulator["reasks"] == 0
    assert results["complete"] is True


def test_strict_user_asks_a_reciting_user_model_again(env, tmp_path):
    done = run(tmp_path, env, "strict", "--strict-user")
    turns = [t for t in records(done["out"], "user_turn") if t["origin"] == "user-model"]
    assert len(turns) == 5
    # each turn: the first ask and MAX_USER_REASKS re-asks (it recites every time), each
    # re-ask naming the rule broken; the last reply is kept, still flagged and still marked
    assert MAX_USER_REASKS == 2
    assert len(done["user"]) == len(turns) * (1 + MAX_USER_REASKS)
    reasks = [r for r in done["user"] if len(r["messages"]) > 2 and RECITED in r["messages"][-1]
              ["content"]]  # fmt: skip
    assert len(reasks) == len(turns) * MAX_USER_REASKS
    assert all(len(t["outputs"]) == 1 + MAX_USER_REASKS and t["meta"]["reasks"] == 2 for t in turns)
    assert all(RECITED in t["problems"] and RECITAL_MARK in t["text"] for t in turns)
    for request in done["model"]:
        text = json.dumps(request["messages"], ensure_ascii=False)
        assert PERSONA not in text and GOAL not in text
    results = json.loads((done["out"] / "results.json").read_text("utf-8"))
    assert results["simulator"]["reasks"] == len(turns) * MAX_USER_REASKS
    assert results["simulator"]["turns_with"][RECITED] == len(turns)
