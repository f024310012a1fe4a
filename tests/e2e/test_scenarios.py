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
from turnbench.journal.threads import with_whole_requests
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
    records = with_whole_requests(map(json.loads, lines))  # (requests whole: journal.threads)
    return [r for r in records if r["kind"] == kind]


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


def test_a_user_that_ends_before_the_first_answer_fails_the_dialogue_not_the_run(env, tmp_path):
    """The greeting has no opening: a user model whose first message is only an end marker
    leaves nothing to judge. That dialogue fails (counted as the simulator's problem), the
    run completes instead of staying pending forever, and a resume asks nothing again;
    with --strict-user the user model is asked again and the conversation happens."""
    path = tmp_path / "support.yaml"
    path.write_text(SCENARIOS, "utf-8")

    def quitter(request: dict[str, Any]) -> str:
        greeting = "say hello" in request["messages"][0]["content"]
        return "[[GIVE_UP]]" if greeting and len(request["messages"]) == 2 else user_reply(request)

    with (
        FakeServer(responder=model_reply) as model,
        FakeServer(responder=quitter) as user,
        FakeServer(responder=judge_reply) as judge,
    ):
        out = tmp_path / "run"
        done = run_cli(command(model, user, judge, path, out), env)
        assert done.returncode == 0, done.stderr + done.stdout
        asked = (len(model.requests), len(user.requests), len(judge.requests))
        again = run_cli(command(model, user, judge, path, out), env)
        assert again.returncode == 0, again.stderr
        assert (len(model.requests), len(user.requests), len(judge.requests)) == asked
        strict_out = tmp_path / "strict"
        strict = run_cli([*command(model, user, judge, path, strict_out), "--strict-user"], env)
        assert strict.returncode == 0, strict.stderr
    assert asked == (2, 3, 2)  # the greeting: one user request, nothing sent to the model
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] is True
    assert results["counts"]["failed"] == 1 and results["counts"]["pending"] == 0
    [failure] = results["parse_failures"]
    assert failure["turn"] == 2 and "before the model's first answer" in failure["reason"]
    assert results["simulator"]["conversations_with"]["ended_before_start"] == 1
    assert results["simulator"]["ended"] == {"goal_met": 1, "abandoned": 1}
    assert "greeting-sim0" not in results["by_dialogue"] or (
        results["by_dialogue"]["greeting-sim0"] is None
    )
    # strict: the marker-only opening is asked again ("Hi! Hello to you."), then answered
    strict_results = json.loads((strict_out / "results.json").read_text("utf-8"))
    assert strict_results["complete"] is True and strict_results["counts"]["failed"] == 0
    assert strict_results["simulator"]["reasks"] == 1
    assert strict_results["by_dialogue"]["greeting-sim0"] == 1.0


def test_a_dry_run_counts_the_user_models_requests(env, tmp_path):
    """refund: the opening is the file's, turns 2-4 the user model's; greeting: turns 1-2;
    x 2 simulations = 10 user-model requests, each prompt holding the persona, priced
    like every other role (nothing is sent)."""
    import turnbench

    path = tmp_path / "support.yaml"
    path.write_text(SCENARIOS, "utf-8")
    unused = "http://127.0.0.1:9/v1"
    estimate = turnbench.estimate(
        "openai/model-under-test",
        benchmark=str(path),
        model_base_url=unused,
        judge="openai/judge-model",
        judge_base_url=unused,
        user="openai/user-model",
        user_base_url=unused,
        benchmark_options={"simulations": 2},
        out=tmp_path / "dry",
    )
    assert estimate.user_turns == 2 * (3 + 2)
    persona_tokens = len(PERSONA) // 4
    assert estimate.user_prompt_tokens > estimate.user_turns * persona_tokens
    assert estimate.user_completion_tokens > 0
    done = run_cli([*command_with(unused, path, tmp_path / "dry"), "--dry-run"], env)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "user turns" in line)
    assert row.split("│")[2].strip() == "10"
    assert "10 user turns written by the user model" in " ".join(done.stdout.split())


def command_with(url: str, path: Path, out: Path) -> list[str]:
    return [
        "run", "--benchmark", str(path), "--simulations", "2",
        "--model", "openai/model-under-test", "--model-base-url", url,
        "--user-model", "openai/user-model", "--user-base-url", url,
        "--judge", "openai/judge-model", "--judge-base-url", url, "--out", str(out),
    ]  # fmt: skip
