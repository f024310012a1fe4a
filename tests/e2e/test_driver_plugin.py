"""A new kind of conversation is its driver module plus its benchmark package: the test-only
`tests.toy_talk` (two speakers who talk past each other, a tool the model may call several
times a reply, a "referee" role of its own, an outcome model with its own template) runs end
to end through the CLI and the Python API, resumes, and is scored per sample; its report
page, its viewer page and its conversations export show it whole, its own role is counted
under its own name in usage, failures and the dry run's estimate; no line of turnbench is
changed for it."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

import turnbench
from tests.conftest import REPO, run_cli
from tests.toy_talk import PAIRS, TalkPastBench
from tests.toy_talk.driver import ROUNDS
from turnbench.backends.openai_compat import wire_messages
from turnbench.benchmarks.recorded import named_benchmark
from turnbench.journal.threads import with_whole_requests
from turnbench.testing.fake_server import FakeServer, Reply, tool_call
from turnbench.view.app import build_app

TALK = "tests.toy_talk:TalkPastBench"
#: the model's requests (7: the tea lover takes notes first), the user model's (6 turns and
#: 2 referee verdicts)
MODEL_REQUESTS, USER_REQUESTS = 2 * ROUNDS + 1, 2 * ROUNDS + 2


@pytest.fixture
def plugin_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])}


def speaker(request: dict[str, Any]) -> Reply:
    """A speaker who keeps to its topic, except the tea lover, who first notes both topics
    (two tool calls in one reply) and asks about trains once it has heard of them; the
    referee says whether trains came up."""
    messages = request["messages"]
    if messages[0]["role"] == "user":  # (the referee's question)
        return Reply(content="yes" if "Trains?" in messages[0]["content"] else "no")
    persona = messages[0]["content"]
    if (
        "tea" in persona
        and "tools" in request
        and messages[-1]["role"] == "user"
        and (len(messages) == 2)
    ):
        return Reply(tool_calls=[tool_call("remember", {"topic": "tea"}, "note-1"),
                                 tool_call("remember", {"topic": "trains"}, "note-2")])  # fmt: skip
    heard = " ".join(m["content"] for m in messages[1:] if m["role"] == "user")
    if "tea" in persona and "trains" in heard:
        return Reply(content="Trains? Tell me more. But tea is better.")
    return Reply(content=f"Anyway: {persona.split('about ')[-1].rstrip('.')}.")


def read_log(out: Path) -> list[dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    return with_whole_requests(json.loads(line) for line in lines)


def run_args(out: Path, model: FakeServer, user: FakeServer) -> list[str]:
    return [
        "run", "--benchmark", TALK, "--model", "openai/m", "--model-base-url", model.base_url,
        "--user-model", "openai/u", "--user-base-url", user.base_url, "--out", str(out),
        "--no-progress",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def talk_run(tmp_path_factory) -> tuple[Path, list[dict[str, Any]]]:
    """One run of the toy through the CLI, resumed once: its directory and the model's
    requests."""
    from tests.conftest import cli_env, shared_data_dir

    root = tmp_path_factory.mktemp("talk")
    env = cli_env(shared_data_dir(), root / "env")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    out = root / "runs" / "talk"
    with FakeServer(responder=speaker) as model, FakeServer(responder=speaker) as user:
        done = run_cli(run_args(out, model, user), env)
        assert done.returncode == 0, done.stdout + done.stderr
        sent = (len(model.requests), len(user.requests))
        again = run_cli(run_args(out, model, user), env)  # resumes: nothing new is sent
        assert again.returncode == 0, again.stdout + again.stderr
        assert (len(model.requests), len(user.requests)) == sent
        assert sent == (MODEL_REQUESTS, USER_REQUESTS)
        return out, list(model.requests)


def test_a_new_kind_of_conversation_runs_through_the_cli_and_resumes(talk_run):
    out, model_requests = talk_run
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["benchmark"] == "talk-past" and results["complete"] is True
    assert results["counts"]["expected"] == results["counts"]["judged"] == len(PAIRS)
    assert results["overall"] == 0.5  # tea listened, jazz did not
    samples = {r["sample_id"]: r for r in read_log(out) if r["kind"] == "sample"}
    assert samples["tea-vs-trains"]["score"] == 1.0 and samples["jazz-vs-moss"]["score"] == 0.0
    assert samples["tea-vs-trains"]["detail"] == {
        "listened": True,
        "notes": ["tea", "trains"],
        "referee": "yes",
    }
    # each side hears only the other's lines as the user's, and the log keeps what was sent
    answers = [r for r in read_log(out) if r["kind"] == "answer"]
    assert sorted(json.dumps(wire_messages(r["messages"])) for r in answers) == sorted(
        json.dumps(r["messages"]) for r in model_requests
    )
    assert all("moss" not in json.dumps(r["messages"][0]) for r in model_requests)


def test_the_drivers_own_role_is_counted_under_its_name(talk_run):
    out, _ = talk_run
    results = json.loads((out / "results.json").read_text("utf-8"))
    usage = results["usage"]
    assert usage["referee"]["requests_logged"] == len(PAIRS)
    assert usage["model"]["requests_logged"] == MODEL_REQUESTS
    assert usage["user"]["requests_logged"] == 2 * ROUNDS
    replies = [r for r in read_log(out) if r["kind"] == "reply"]
    assert {r["role"] for r in replies} == {"referee"} and len(replies) == len(PAIRS)
    assert results["provenance"]["endpoints"]["referee"]  # (reached where the user model is)


def test_a_failing_referee_is_a_failure_of_the_referee(plugin_env, tmp_path):
    """Its failed request is a failure record of its own role, the conversation pending."""

    def referee_fails(request: dict[str, Any]) -> Reply:
        if request["messages"][0]["role"] == "user":
            return Reply(status=400, body={"error": {"message": "no referee today"}})
        return speaker(request)

    out = tmp_path / "talk"
    with FakeServer(responder=speaker) as model, FakeServer(responder=referee_fails) as user:
        done = run_cli(run_args(out, model, user), plugin_env)
    assert done.returncode == 1, done.stdout + done.stderr  # (incomplete: re-run to continue)
    failures = [r for r in read_log(out) if r["kind"] == "failure"]
    assert {(f["role"], f["stage"]) for f in failures} == {("referee", "reply")}
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] is False and results["counts"]["pending"] == len(PAIRS)
    assert {f["stage"] for f in results["request_failures"]} == {"reply"}


def test_the_export_gives_each_conversation_whole(talk_run, plugin_env, tmp_path):
    out, model_requests = talk_run
    target = tmp_path / "talk.jsonl"
    done = run_cli(
        ["export", str(out), "--format", "conversations", "--out", str(target),
         "--benchmark", TALK], plugin_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["sample_id"]: row for row in map(json.loads, target.read_text().splitlines())}
    assert set(rows) == set(PAIRS)
    tea = rows["tea-vs-trains"]
    assert (tea["benchmark"], tea["model"], tea["trial"], tea["score"]) == (
        "talk-past",
        "openai/m",
        None,
        1.0,
    )
    assert tea["outcome"] == {"listened": True, "notes": ["tea", "trains"], "referee": "yes"}
    # the model's last request, its reply, then the user's closing line it never answered
    last = [r for r in model_requests if "tea" in r["messages"][0]["content"]][-1]
    messages = tea["messages"]
    assert messages[: len(last["messages"])] == last["messages"]
    assert messages[len(last["messages"])] == {
        "role": "assistant",
        "content": "Trains? Tell me more. But tea is better.",
    }
    assert messages[-1]["role"] == "user" and len(messages) == len(last["messages"]) + 2
    # the two calls of one reply, each answered by its tool message
    calls = messages[2]
    assert calls["content"] is None  # (a reply of calls only, as OpenAI's API has it)
    assert [c["function"]["arguments"] for c in calls["tool_calls"]] == [
        '{"topic": "tea"}',
        '{"topic": "trains"}',
    ]
    assert messages[3:5] == [
        {"role": "tool", "tool_call_id": "note-1", "content": "noted"},
        {"role": "tool", "tool_call_id": "note-2", "content": "noted"},
    ]


def test_the_python_api_gives_the_same_conversations_with_who_said_what(talk_run):
    out, _ = talk_run
    finished = turnbench.load_run(out, benchmark=TALK)
    conversation = next(c for c in finished.conversations() if c.sample_id == "tea-vs-trains")
    assert [said.by for said in conversation.messages][:6] == [
        "benchmark",
        "benchmark",
        "model",
        "tool",
        "tool",
        "model",
    ]
    assert conversation.messages[-1].by == "user" and conversation.messages[-1].record
    assert conversation.outcome.notes == ["tea", "trains"]  # (typed: the toy's own model)


def test_the_report_draws_the_conversation_with_the_benchmarks_own_template(
    talk_run, plugin_env, tmp_path
):
    out, _ = talk_run
    page_path = tmp_path / "report.html"
    done = run_cli(["report", str(out), "--benchmark", TALK, "--out", str(page_path)], plugin_env)
    assert done.returncode == 0, done.stdout + done.stderr
    page = page_path.read_text("utf-8")
    assert_talk_transcript(page)
    assert "1 of 2 conversations passed" in page
    # what each role spent, the driver's own role among them
    assert '<td class="text">referee</td>' in page


def test_the_viewer_draws_the_conversation_with_the_benchmarks_own_template(talk_run):
    out, _ = talk_run
    app = build_app([out.parent], token=None, warm=False, benchmark=named_benchmark(TALK))

    async def fetch() -> tuple[int, str]:
        async with TestClient(TestServer(app)) as client:
            response = await client.get("/conversation/0/talk?sample=tea-vs-trains")
            return response.status, await response.text()

    status, page = asyncio.run(fetch())
    assert status == 200
    assert_talk_transcript(page)


def assert_talk_transcript(page: str) -> None:
    """The tea lover's conversation in the order it was held, with its own outcome."""
    assert "listened · noted tea, trains · the referee said: yes" in page
    order = [page.index(part) for part in (
        "Let me tell you about trains.", "<b>remember</b>", "Trains? Tell me more.",
    )]  # fmt: skip
    assert order == sorted(order)
    assert page.count("<b>remember</b>") >= 2  # (both calls of the one reply)


def test_a_new_kind_of_conversation_runs_through_the_api(tmp_path):
    with FakeServer(responder=speaker) as model, FakeServer(responder=speaker) as user:
        estimate = turnbench.estimate(
            "openai/m", benchmark=TalkPastBench, user_model="openai/u",
            model_base_url=model.base_url, user_base_url=[user.base_url],
        )  # fmt: skip
        assert (estimate.answers, estimate.user_turns) == (len(PAIRS) * ROUNDS,) * 2
        assert estimate.roles["referee"].requests == len(PAIRS)  # (its own role, by name)
        assert f"each conversation runs {ROUNDS} rounds" in estimate.notes[-1]
        result = turnbench.evaluate(
            "openai/m", benchmark=TalkPastBench, user_model="openai/u",
            model_base_url=model.base_url, user_base_url=[user.base_url], out=tmp_path / "api",
        )  # fmt: skip
    assert result.exit_code == 0 and result.complete and result.overall == 0.5
    assert result.typed().counts.judged == len(PAIRS)


def test_the_dry_run_prices_the_drivers_own_role(plugin_env):
    done = run_cli(
        ["run", "--benchmark", TALK, "--model", "openai/m", "--model-base-url",
         "http://127.0.0.1:9/v1", "--user-model", "openai/u", "--user-base-url",
         "http://127.0.0.1:9/v1", "--out", "unused", "--dry-run"], plugin_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "referee (openai/u)" in done.stdout
