"""Issue 44, class 7: a simulated user whose reply only calls tools (it is offered none) wrote
no user turn. 6f7f1ce took each such reply as an empty user turn: the agent answered silence
until its step limit, the run said "complete", the agent scored 0 for `step_limit`, and no
simulator problem was counted. Now it is a broken reply, as one with no message at all is:
a failure of the user's request, listed with its reason, the conversation pending (not
scored, never the agent's fault), and asked again on resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.conftest import run_cli
from turnbench.benchmarks.tau_bench.fakes import LazyAgent, PerfectAgent, TauUser
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_server import FakeServer, Reply, tool_call
from turnbench.testing.simulated_fakes import SCENARIOS
from turnbench.testing.simulated_fakes import scenario_judge as judge_reply
from turnbench.testing.simulated_fakes import scenario_model as model_reply
from turnbench.view.app import build_app

REASON = "the user model replied with tool calls and no message"


def calls_only(request: dict[str, Any]) -> Reply:
    """A user model that answers every request with a tool call and no text."""
    return Reply(tool_calls=[tool_call("transfer_to_human_agents", {"summary": "x"}, "call_u")])


def tau_run(env, out: Path, domain: str, agent: Any, user: Any, *extra: str):
    with FakeServer(responder=agent) as model, FakeServer(responder=user) as simulated:
        return run_cli(["run", "--benchmark", f"tau-bench-{domain}", "--limit", "1",
                        "--model", "openai/agent", "--model-base-url", model.base_url,
                        "--user-model", "openai/user", "--user-base-url", simulated.base_url,
                        "--out", str(out), "--no-progress", *extra], env)  # fmt: skip


def records(out: Path, kind: str) -> list[dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


def assert_failed_not_scored(done: Any, out: Path, env: dict[str, str], turn: int = 1) -> None:
    """The user's request failed (with its reason), the conversation is pending, unscored,
    and `report` and `view` show the run."""
    assert done.returncode == 1, done.stdout + done.stderr  # incomplete: re-run to continue
    assert "Traceback" not in done.stderr and REASON in done.stdout
    results = json.loads((out / "results.json").read_text())
    assert not results["complete"] and results["counts"]["pending"] == 1
    (failure,) = results["request_failures"]
    assert failure["stage"] == "user_turn" and REASON in failure["error"]
    assert records(out, "sample") == []  # never scored as the agent's step limit
    assert [t["turn"] for t in records(out, "user_turn")] == list(range(1, turn))
    assert all(t["text"] for t in records(out, "user_turn"))  # no empty user turn
    report = run_cli(["report", str(out), "--out", str(out.parent / "report.html")], env)
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr

    async def page() -> tuple[int, str]:
        async with TestClient(TestServer(build_app([out.parent], token=None))) as client:
            response = await client.get(f"/conversation/0/{out.name}?sample=0")
            return response.status, await response.text()

    status, text = asyncio.run(page())
    assert status == 200 and REASON in text


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_a_user_that_only_calls_tools_fails_its_request(env, tmp_path, domain):
    """6f7f1ce: exit 0, "Run complete", 31 empty user turns and the agent scored 0 for
    step_limit (airline and retail alike)."""
    out = tmp_path / "run"
    done = tau_run(env, out, domain, LazyAgent(), calls_only)
    assert_failed_not_scored(done, out, env)


def test_the_failed_turn_is_asked_again_on_resume(env, data_dir, tmp_path):
    """Retried like any failed request: once the user model writes its message, the same
    conversation is held and scored (the agent that does its task scores 1)."""
    tasks = json.loads((data_dir / "tau_bench" / "airline" / "tasks_test.json").read_text())
    out = tmp_path / "run"
    assert tau_run(env, out, "airline", PerfectAgent(tasks), calls_only).returncode == 1
    done = tau_run(env, out, "airline", PerfectAgent(tasks), TauUser(tasks))
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] and results["overall"] == 1.0 and not results["request_failures"]


def test_a_user_that_calls_tools_mid_conversation_fails_that_turn(env, data_dir, tmp_path):
    """One step beyond: the user opens as asked, then only calls tools: its second turn
    fails; the agent's step before it stands, and nothing is scored."""
    tasks = json.loads((data_dir / "tau_bench" / "airline" / "tasks_test.json").read_text())
    opening = TauUser(tasks)

    def user(request: dict[str, Any]) -> Any:
        said = [m for m in request["messages"] if m.get("role") == "assistant"]
        return calls_only(request) if said else opening(request)

    out = tmp_path / "run"
    done = tau_run(env, out, "airline", LazyAgent(), user)
    assert_failed_not_scored(done, out, env, turn=2)
    assert len(records(out, "answer")) == 1


def test_an_anthropic_user_that_only_uses_tools_fails_its_request(env, tmp_path):
    """One step beyond: the other provider (Anthropic's `tool_use` blocks, no text)."""

    def user(body: dict[str, Any]) -> dict[str, Any]:
        return {"text": "", "tool_use": [{"id": "toolu_1", "name": "transfer_to_human_agents",
                                          "input": {"summary": "x"}}]}  # fmt: skip

    out = tmp_path / "run"
    with (
        FakeServer(responder=LazyAgent()) as model,
        FakeAnthropic(api_key="k", responder=user) as u,
    ):
        done = run_cli(["run", "--benchmark", "tau-bench-airline", "--limit", "1",
                        "--model", "openai/agent", "--model-base-url", model.base_url,
                        "--user-model", "anthropic/claude-user", "--user-base-url", u.base_url,
                        "--user-api-key-env", "TEST_USER_KEY", "--out", str(out),
                        "--no-progress"], {**env, "TEST_USER_KEY": "k"})  # fmt: skip
    assert_failed_not_scored(done, out, env)


def test_a_scenario_user_that_only_calls_tools_fails_its_request(env, tmp_path):
    """One step beyond: the same rule for every simulated user (a benchmark file's persona
    scenarios): the model under test is never sent an empty user turn."""
    path = tmp_path / "support.yaml"
    path.write_text(SCENARIOS, "utf-8")
    out = tmp_path / "run"
    with (
        FakeServer(responder=model_reply) as model,
        FakeServer(responder=calls_only) as user,
        FakeServer(responder=judge_reply) as judge,
    ):
        done = run_cli(["run", "--benchmark", str(path), "--model", "openai/model-under-test",
                        "--model-base-url", model.base_url, "--user-model", "openai/user-model",
                        "--user-base-url", user.base_url, "--judge", "openai/judge-model",
                        "--judge-base-url", judge.base_url, "--out", str(out)], env)  # fmt: skip
        sent = list(model.requests)
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text())
    failures = results["request_failures"]
    assert failures and all(f["stage"] == "user_turn" and REASON in f["error"] for f in failures)
    assert all(t["text"] for t in records(out, "user_turn"))
    for request in sent:  # (what the model was sent: only real user turns)
        assert all(m["content"] for m in request["messages"] if m["role"] == "user")
