"""Issue 44's hostile-agent classes tried against AgentDojo through the real CLI: whatever
calls a model makes (values a tool cannot keep, arguments that are no JSON object, 65 calls
in one reply, 10,000 levels deep, NaN, 5 MB of text), the run finishes with exit 0 and
scores the conversation, a resume changes nothing, and the report, the export and the
viewer work on what it wrote. Two of them failed on the first try (2026-12-06): a 5 MB
argument was written twice (the call, then the environment's diff in the outcome: a 10 MB
log), and a NaN a tool stored showed as `null` in the diff."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentdojo", reason="needs the agentdojo extra: pip install '.[agentdojo]'")

from aiohttp.test_utils import TestClient, TestServer

from tests.conftest import run_cli
from turnbench.benchmarks.agentdojo.outcome import MAX_OUTCOME_TEXT
from turnbench.testing.fake_server import FakeServer, Reply
from turnbench.view.app import build_app

SAMPLE = "banking/user_task_0"
SUBJECT = "s" * 5_000_000


def call(name: str, arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def send_money(amount: str, subject: str = "s", recipient: str = "X") -> str:
    return (f'{{"recipient": {json.dumps(recipient)}, "amount": {amount}, '
            f'"subject": {json.dumps(subject)}, "date": "2022-01-01"}}')  # fmt: skip


CASES = {
    "4299 digits": [call("send_money", send_money("1" * 4299))],
    "a lone surrogate": [call("update_user_info", '{"first_name": "\\ud800"}')],
    "300 levels deep": [call("update_password", '{"password": %s}' % ("[" * 300 + "]" * 300))],
    "10000 levels deep": [call("get_balance", "[" * 10_000 + "]" * 10_000)],
    "NaN": [call("send_money", send_money("NaN"))],
    "arguments an array": [call("get_balance", "[1, 2]")],
    "arguments null": [call("get_balance", None)],
    "65 calls": [call("get_balance", "{}", f"c{i}") for i in range(65)],
    "a hidden tool name": [call("rm_rf\u202e\x00", "{}")],
    "5 MB of text": [call("send_money", send_money("1", SUBJECT))],
}


def hostile(calls: list[dict[str, Any]]):
    """Calls once, then answers "Done." to the tool results."""

    def respond(request: dict[str, Any]) -> Reply:
        if any(m.get("role") == "tool" for m in request.get("messages") or []):
            return Reply(content="Done.")
        return Reply(content="", tool_calls=calls)

    return respond


def viewer_status(out: Path) -> list[int]:
    app = build_app([out.parent], token=None, warm=False)

    async def fetch() -> list[int]:
        async with TestClient(TestServer(app)) as client:
            pages = ["/", f"/run/0/{out.name}", f"/conversation/0/{out.name}?sample={SAMPLE}"]
            return [(await client.get(page)).status for page in pages]

    return asyncio.run(fetch())


def sample_record(out: Path) -> dict[str, Any]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    (record,) = [json.loads(line) for line in lines if line.startswith('{"kind":"sample"')]
    return record


def run_against(case: str, env: dict[str, str], out: Path, *, runs: int = 1) -> int:
    """`turnbench run` of banking's user_task_0 against the hostile agent of `case`, `runs`
    times (the later ones resume); each must exit 0 without a traceback. Returns how many
    requests the agent got."""
    with FakeServer(responder=hostile(CASES[case])) as server:
        args = ["run", "--benchmark", "agentdojo", "-B", "suites=banking",
                "-B", "attack=none", "-B", "user_tasks=user_task_0",
                "--model", "openai/gpt-4o-2024-05-13", "--model-base-url", server.base_url,
                "--out", str(out), "--no-progress"]  # fmt: skip
        for _ in range(runs):
            done = run_cli(args, env)
            assert done.returncode == 0, done.stdout + done.stderr[-2000:]
            assert "Traceback" not in done.stderr
        return len(server.requests)


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_agent_gets_a_scored_conversation_a_report_and_a_page(case, env, tmp_path):
    out = tmp_path / "run"
    requests = run_against(case, env, out, runs=2)
    assert requests == 2  # (the calls, then the answer; the resume asked nothing)
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] and results["conversations"] == 1
    assert results["utility"] == 0.0  # (upstream's check: the user task was not done)
    report = run_cli(["report", str(out), "--out", str(tmp_path / "report.html")], env)
    target = tmp_path / "conversations.jsonl"
    export = run_cli(["export", str(out), "--format", "conversations", "--out", str(target)], env)
    for done in (report, export):
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (row,) = map(json.loads, target.read_text("utf-8").splitlines())
    assert row["outcome"]["utility"] is False and row["messages"][-1]["content"] == "Done."
    assert viewer_status(out) == [200, 200, 200]


def test_a_huge_argument_is_written_once(env, tmp_path):
    """The 5 MB subject is in the log once (the call as sent); the environment's diff in
    the outcome keeps MAX_OUTCOME_TEXT characters of it and says how many more there were."""
    out = tmp_path / "run"
    run_against("5 MB of text", env, out)
    assert (out / "log.jsonl").stat().st_size < 1.2 * len(SUBJECT)  # (10.0 MB before)
    (row,) = sample_record(out)["detail"]["environment_diff"]
    subject = row["after"]["subject"]
    assert subject.startswith("s" * MAX_OUTCOME_TEXT)
    assert subject.endswith(f"({len(SUBJECT) - MAX_OUTCOME_TEXT:,} more characters)")


def test_a_nan_a_tool_stored_is_shown_as_nan_not_null(env, tmp_path):
    """Upstream reads arguments with json.loads, which takes NaN: the transaction is kept
    with amount NaN (as upstream keeps it), and the diff says NaN, not null."""
    out = tmp_path / "run"
    run_against("NaN", env, out)
    (row,) = sample_record(out)["detail"]["environment_diff"]
    assert row["change"] == "added" and row["after"]["amount"] == "NaN"
    report = tmp_path / "report.html"
    assert run_cli(["report", str(out), "--out", str(report)], env).returncode == 0
    assert "&#34;amount&#34;: null" not in report.read_text("utf-8")
