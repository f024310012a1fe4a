"""Scenarios with a persona and a goal (benchmark files with `simulated_user`), end to end:
the real CLI with three fake servers, one per role (model, user, judge), and what each
received."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from turnbench.testing.fake_server import FakeServer
from turnbench.testing.simulated_fakes import GOAL, PERSONA, SCENARIOS
from turnbench.testing.simulated_fakes import scenario_judge as judge_reply
from turnbench.testing.simulated_fakes import scenario_model as model_reply
from turnbench.testing.simulated_fakes import scenario_user as user_reply


def command(model: FakeServer, user: FakeServer, judge: FakeServer, path: Path, out: Path):
    return [
        "run",
        "--benchmark",
        str(path),
        "--model",
        "openai/model-under-test",
        "--model-base-url",
        model.base_url,
        "--user-model",
        "openai/user-model",
        "--user-base-url",
        user.base_url,
        "--judge",
        "openai/judge-model",
        "--judge-base-url",
        judge.base_url,
        "--out",
        str(out),
    ]


def log(out: Path, kind: str) -> list[dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


def test_a_persona_scenario_and_what_each_role_received(env, tmp_path):
    path = tmp_path / "support.yaml"
    path.write_text(SCENARIOS, "utf-8")
    with (
        FakeServer(responder=model_reply) as model,
        FakeServer(responder=user_reply) as user,
        FakeServer(responder=judge_reply) as judge,
    ):
        out = tmp_path / "run"
        done = run_cli([*command(model, user, judge, path, out), "--simulations", "2"], env)
        assert done.returncode == 0, done.stderr + done.stdout
        model_requests, user_requests = list(model.requests), list(user.requests)
        judge_requests = list(judge.requests)
    turns = log(out, "user_turn")
    # the model under test sees only the user's messages: never the persona, goal or facts
    for request in model_requests:
        text = json.dumps(request["messages"])
        assert PERSONA not in text and GOAL not in text and "bought on 3 March" not in text
        said = [m["content"] for m in request["messages"] if m["role"] == "user"]
        sample = next(
            a["sample_id"] for a in log(out, "answer") if a["messages"] == request["messages"]
        )
        mine = sorted((t for t in turns if t["sample_id"] == sample), key=lambda t: t["turn"])
        assert said == [t["text"] for t in mine][: len(said)]
        assert all(t["text"] for t in mine[: len(said)])  # a marker alone is never sent
    # the user model sees them, in its system message
    refund_asks = [r for r in user_requests if PERSONA in r["messages"][0]["content"]]
    assert refund_asks and all(GOAL in r["messages"][0]["content"] for r in refund_asks)
    assert all("order number 4417" in r["messages"][0]["content"] for r in refund_asks)
    # refund: opening (template), "order number 4417" (user model), then [[GOAL_MET]] alone:
    # 2 model requests per conversation; greeting: "Hi! Hello to you." then an end with text
    refund = sorted((t for t in turns if t["sample_id"] == "refund-sim0"), key=lambda t: t["turn"])
    assert [t["origin"] for t in refund] == ["template", "user-model", "user-model"]
    assert refund[-1]["text"] == "" and refund[-1]["ended"] == "goal_met"
    assert sum(1 for r in model_requests if "blender" in r["messages"][0]["content"]) == 4
    assert len(model_requests) == 2 * 2 + 2 * 2  # refund: 2 answers, greeting: 2, x2 sims
    # the judge: one rubric and one checklist per refund conversation, on the conversation
    assert len(judge_requests) == 2 * 2
    rubric = next(r for r in judge_requests if "Rating" in r["messages"][-1]["content"])
    assert "My blender stopped working." in rubric["messages"][-1]["content"]
    assert "Refund issued" in rubric["messages"][-1]["content"]
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] is True
    assert results["by_dialogue"] == {
        "refund-sim0": 1.0,
        "refund-sim1": 1.0,
        "greeting-sim0": 1.0,
        "greeting-sim1": 1.0,
    }
    assert results["success_rate"] == 1.0
    assert results["pass_hat_k"] == {"1": 1.0, "2": 1.0}
    assert results["by_scenario"] == {"refund": [1.0, 1.0], "greeting": [1.0, 1.0]}
    assert results["simulator"]["ended"] == {"goal_met": 4}
    assert results["usage"]["user"]["requests_logged"] == len(user_requests)


def test_a_failing_final_turn_counts_against_pass_hat_k(env, tmp_path):
    """The greeting's check reads the final turn: a model that never says hello fails it,
    so pass^k of that scenario is 0 and the success rate halves."""
    path = tmp_path / "support.yaml"
    path.write_text(SCENARIOS, "utf-8")

    def rude(request: dict[str, Any]) -> str:
        reply = model_reply(request)
        return "Go away." if reply.startswith("hello") else reply

    with (
        FakeServer(responder=rude) as model,
        FakeServer(responder=user_reply) as user,
        FakeServer(responder=judge_reply) as judge,
    ):
        out = tmp_path / "run"
        done = run_cli(command(model, user, judge, path, out), env)
        assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["by_dialogue"]["greeting-sim0"] == 0.0
    assert results["success_rate"] == 0.5
    assert results["pass_hat_k"] == {"1": 0.5}
    # max_turns 2: the greeting stopped at 2 assistant replies, no end marker
    greeting = [t for t in log(out, "user_turn") if t["sample_id"] == "greeting-sim0"]
    assert len(greeting) == 2 and not any(t.get("ended") for t in greeting)
    # the export names each judgment's scenario and simulation (the greeting has checks
    # only: no judgment, no row, as for any turn scored without a judge)
    table = tmp_path / "export.csv"
    done = run_cli(["export", str(out), "--format", "csv", "--out", str(table)], env)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(table.read_text("utf-8").splitlines()))
    assert {(r["sample_id"], r["conversation"], r["simulation"]) for r in rows} == {
        ("refund-sim0", "refund", "0")
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            SCENARIOS.replace("    rubric: Did", "    turns: [{user: hi}]\n    rubric: Did"),
            "a scenario (simulated_user) has no turns",
        ),
        (SCENARIOS.replace("      max_turns: 4", "      max_turns: 0"), "from 1 to 50"),
        (SCENARIOS.replace("    judge: final_turn", "    judge: halfway"), "must be one of"),
        (
            SCENARIOS.replace("      persona: Some", "      persona_: x\n      persona: Some"),
            "unknown key 'persona_' (did you mean 'persona'?)",
        ),
        (
            SCENARIOS + "  - id: scripted\n    turns: [{user: hi, rubric: ok}]\n",
            "all scripted (turns) or all scenarios",
        ),
        (
            "version: 1\nname: s\nsuccess_threshold: 0.5\ndialogues:\n"
            "  - id: a\n    turns: [{user: hi, rubric: ok}]\n",
            "unknown key 'success_threshold'",
        ),
    ],
)
def test_scenario_mistakes_are_located(env, tmp_path, text, message):
    path = tmp_path / "support.yaml"
    path.write_text(text, "utf-8")
    with FakeServer() as server:
        done = run_cli(command(server, server, server, path, tmp_path / "run"), env)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr
        assert not server.requests


def test_a_scenario_file_needs_a_user_model(env, tmp_path):
    path = tmp_path / "support.yaml"
    path.write_text(SCENARIOS, "utf-8")
    with FakeServer() as server:
        args = command(server, server, server, path, tmp_path / "run")
        at = args.index("--user-model")
        del args[at : at + 4]
        done = run_cli(args, env)
        assert done.returncode == 2
        assert "needs --user-model" in done.stderr
        assert not server.requests


def test_the_api_takes_the_user_model_and_benchmark_options(tmp_path):
    import turnbench

    path = tmp_path / "support.yaml"
    path.write_text(SCENARIOS, "utf-8")
    with (
        FakeServer(responder=model_reply) as model,
        FakeServer(responder=user_reply) as user,
        FakeServer(responder=judge_reply) as judge,
    ):
        result = turnbench.evaluate(
            "openai/model-under-test",
            benchmark=str(path),
            model_base_url=model.base_url,
            judge="openai/judge-model",
            judge_base_url=judge.base_url,
            user="openai/user-model",
            user_base_url=user.base_url,
            benchmark_options={"simulations": 3},
            out=tmp_path / "run",
        )
        assert {r["model"] for r in user.requests} == {"user-model"}
    assert result.complete and result.results["pass_hat_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}
    assert result.results["provenance"]["user"]["spec"] == "openai/user-model"
