"""A failed tau-bench conversation in the viewer (and the report): the transcript in the
order it was held with each tool call and its result folded, the outcome (score, how it
ended), the database diff against the gold state and the outputs never told; every text
the agent, the user or a tool wrote shown as text, never markup."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.conftest import run_cli
from turnbench.benchmarks.tau_bench.fakes import TauUser
from turnbench.testing.fake_server import FakeServer, Reply, tool_call
from turnbench.view.app import build_app

PROBE = '<img src=x onerror="window.__pwned=1">'
SCRIPT = "<script>window.__pwned=1</script>"


def hostile_agent(request: dict[str, Any]) -> Reply:
    """Looks up a reservation whose id is markup, then tells the user a script."""
    if not any(m["role"] == "tool" for m in request["messages"]):
        return Reply(tool_calls=[tool_call("get_reservation_details", {"reservation_id": PROBE},
                                           "call_0")])  # fmt: skip
    return Reply(content=f"Done. {SCRIPT}")


@pytest.fixture(scope="module")
def tau_run(tmp_path_factory) -> Path:
    from tests.conftest import cli_env, shared_data_dir

    data = shared_data_dir()
    env = cli_env(data, tmp_path_factory.mktemp("tau-env"))
    tasks = json.loads((data / "tau_bench" / "airline" / "tasks_test.json").read_text())
    root = tmp_path_factory.mktemp("tau-served")
    with FakeServer(responder=hostile_agent) as agent, FakeServer(responder=TauUser(tasks)) as user:
        done = run_cli(["run", "--benchmark", "tau-bench-airline", "--limit", "1",
                        "--model", "openai/agent", "--model-base-url", agent.base_url,
                        "--user-model", "openai/user", "--user-base-url", user.base_url,
                        "--out", str(root / "tau"), "--no-progress"], env)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    return root


def fetch(app: Any, *paths: str) -> list[tuple[int, str]]:
    async def go() -> list[tuple[int, str]]:
        async with TestClient(TestServer(app)) as client:
            found = []
            for path in paths:
                response = await client.get(path)
                found.append((response.status, await response.text()))
            return found

    return asyncio.run(go())


def test_the_viewer_shows_a_failed_conversation_with_its_tool_calls_and_diff(tau_run):
    app = build_app([tau_run], token=None)
    (status, run), (shown, page) = fetch(app, "/run/0/tau", "/conversation/0/tau?sample=0")
    assert status == shown == 200
    assert 'href="/conversation/0/tau?sample=0"' in run
    assert "no judge" in run and "no judge" in page and "judge ?" not in page  # (computed)
    # the transcript in the order it was held: user, the tool call (folded), agent, user
    assert_transcript(page)


def assert_transcript(page: str) -> None:
    """The conversation of task 0 as `hostile_agent` held it, with its outcome."""
    order = [page.index(part) for part in (
        "I am calling about task 0.", '<details class="tool-call">', "get_reservation_details",
        "Error: user not found", "Done. &lt;script&gt;", "###STOP###")]  # fmt: skip
    assert order == sorted(order)  # (the result, upstream's words for it, inside the fold)
    # the outcome and why it failed: the gold state's new reservation is missing
    assert "score 0.00" in page and "ended: user_stop" in page
    assert "Database against the gold state" in page and ">reservations</td>" in page
    assert "HATHAT" in page
    # nothing the agent or a tool wrote is markup
    assert SCRIPT not in page and PROBE not in page
    assert "&lt;img src=x onerror=" in page


def test_the_report_lists_the_failure_with_why_and_holds_its_transcript(tau_run, tmp_path):
    from tests.conftest import cli_env, shared_data_dir

    env = cli_env(shared_data_dir(), tmp_path / "env")
    out = tmp_path / "report.html"
    done = run_cli(["report", str(tau_run / "tau"), "--out", str(out)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    page = out.read_text("utf-8")
    assert "tau-bench-airline: conversations" in page and "0 of 1 conversation passed" in page
    # the failure's line: why, linked to its transcript in the same file
    assert 'href="#conversation-1-0-0"' in page
    assert '<details class="transcript" id="conversation-1-0-0" open>' in page  # (a failure)
    assert "database differs from the gold state" in page
    assert "pass^k" in page and "none (scored by the benchmark)" in page
    assert "Judge diagnostics" not in page  # (no judge took part)
    assert "no judge (scored by the benchmark)</li>" in page
    # what each role spent: the agent's answers and the simulated user's turns
    assert '<td class="text">answers</td>' in page and '<td class="text">user turns</td>' in page
    assert_transcript(page)
