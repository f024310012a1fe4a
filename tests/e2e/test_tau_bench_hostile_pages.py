"""Issue 44, classes 6 and 9: what an agent run directory holds, shown safely by the viewer and
the report.

- A lone surrogate in a stored value (an agent's message, a tool's arguments and output, the
  diff's `found`): new runs no longer store one, but an old or hostile run directory may
  hold one; 6f7f1ce answered 500 on the conversation page and `report` was a traceback.
- An agent's message of a million characters: the viewer cuts every text at 200,000
  characters, as docs/view.md says; 6f7f1ce served the transcript's messages whole (the
  issue's 60-million-character message was a 61.5 MB page), in the viewer and the report.
- A tool's name holding NUL and U+202E (the model chooses it): shown with those characters
  made visible (^@, \\u202e), as the names rule shows a refused name; 6f7f1ce put them on the
  page as they were (escaped as HTML, invisible to the reader).
- A NaN the agent sent for the database: 6f7f1ce stored it and its diff showed `found` as
  null; the call is an error observation now and nothing is written (the diff would show
  a NaN as NaN: tests/unit/test_tau_reward.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.conftest import cli_env, run_cli, shared_data_dir
from turnbench.benchmarks.tau_bench.fakes import TauUser, gold_trajectory
from turnbench.testing.fake_server import FakeServer, Reply, tool_call
from turnbench.view.app import build_app

MARK = "SURROGATE-HERE"  # replaced in the run's files by the JSON escape of a lone surrogate
HIDDEN_NAME = "get\x00user\u202edetails\u200b"  # NUL, a right-to-left override, a zero width
SHOWN_NAME = "get^@user\\u202edetails\\u200b"
LONG = 1_000_000  # characters of the agent's long message (the user's: half)


def fetch(root: Path, *paths: str) -> list[tuple[int, str]]:
    async def go() -> list[tuple[int, str]]:
        async with TestClient(TestServer(build_app([root], token=None, warm=False))) as client:
            found = []
            for path in paths:
                response = await client.get(path)
                found.append((response.status, (await response.read()).decode("utf-8")))
            return found

    return asyncio.run(go())


def report(run: Path, home: Path) -> tuple[Any, str]:
    env = cli_env(shared_data_dir(), home)
    out = home / "report.html"
    done = run_cli(["report", str(run), "--out", str(out)], env)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stdout + done.stderr
    return done, out.read_bytes().decode("utf-8")  # (strict: the file is valid UTF-8)


def imported(home: Path, entry: dict[str, Any]) -> Path:
    """`entry` imported as a run directory (`home/run`)."""
    source = home / "trajectories.json"
    source.write_text(json.dumps([entry]))
    run = home / "run"
    done = run_cli(["import", "--format", "tau-bench", "--benchmark", "tau-bench-airline",
                    str(source), "--out", str(run), "--model-name", "agent"],
                   cli_env(shared_data_dir(), home))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return run


def _booking(entry: dict[str, Any]) -> dict[str, Any]:
    """The arguments of the trajectory's book_reservation call (edited in place)."""
    for message in entry["traj"]:
        for call in message.get("tool_calls") or []:
            if call["function"]["name"] == "book_reservation":
                return call["function"]
    raise AssertionError("no booking")


# -- a lone surrogate -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def surrogate_run(tmp_path_factory) -> Path:
    """Task 0 done with the first passenger's name replaced by a lone surrogate, and an agent
    message holding one: the run directory as a version that stored them wrote it."""
    home = tmp_path_factory.mktemp("surrogate")
    entry = gold_trajectory(shared_data_dir(), "airline", 0)
    function = _booking(entry)
    arguments = json.loads(function["arguments"])
    arguments["passengers"][0]["first_name"] = MARK
    function["arguments"] = json.dumps(arguments)
    entry["traj"].insert(2, {"role": "assistant", "content": f"Hello {MARK}!"})
    entry["traj"].insert(3, {"role": "user", "content": "Go on."})
    run = imported(home, entry)
    for name in ("log.jsonl", "results.json"):
        path = run / name
        text = path.read_text("utf-8")
        assert MARK in text
        path.write_text(text.replace(MARK, "\\ud800"), "utf-8")  # (the escape, in JSON)
    assert "\\ud800" in (run / "log.jsonl").read_text("utf-8")
    return run


def test_the_viewer_shows_a_lone_surrogate_as_a_replacement_character(surrogate_run):
    """6f7f1ce: the conversation page answered 500 (UnicodeEncodeError)."""
    (status, page), (run_status, _run_page) = fetch(
        surrogate_run.parent, "/conversation/0/run?sample=0", "/run/0/run"
    )
    assert status == 200, page[-2000:]
    assert run_status == 200
    assert "Hello \ufffd!" in page  # the agent's message
    # and the call's arguments and the diff (the tool's result shown is the one the model
    # was sent, as the trajectory recorded it: the name it was given then)
    assert page.count("\ufffd") >= 3
    assert "first_name" in page and "Database against the gold state" in page


def test_the_report_shows_a_lone_surrogate_as_a_replacement_character(surrogate_run, tmp_path):
    """6f7f1ce: `report` was a traceback (UnicodeEncodeError writing the page)."""
    _done, page = report(surrogate_run, tmp_path)
    assert "Hello \ufffd!" in page and page.count("\ufffd") >= 3


# -- a message of a million characters, and a tool's name that hides characters --------------
@pytest.fixture(scope="module")
def long_run(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("long")
    entry = gold_trajectory(shared_data_dir(), "airline", 0)
    call = tool_call(HIDDEN_NAME, {}, "call_hidden")
    entry["traj"][2:2] = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_hidden", "content": "Unknown action"},
        {"role": "assistant", "content": "Ω" * LONG},
        {"role": "user", "content": "Ж" * (LONG // 2)},
    ]
    return imported(home, entry)


def assert_cut_and_named(page: str) -> None:
    assert len(page) < 1_000_000, len(page)
    assert page.count("Ω") == page.count("Ж") == 200_000  # (each text at its cut)
    assert f"{LONG - 200_000:,} more characters not shown" in page
    assert f"{LONG // 2 - 200_000:,} more characters not shown" in page  # (the user's)
    # the name as the tool call's title; NUL and U+202E nowhere (the tool's output echoes
    # the name: machine text, its controls shown as the terminal shows them)
    assert f"<b>{SHOWN_NAME}</b>" in page
    assert "\x00" not in page and "\u202e" not in page


def test_the_viewer_cuts_a_huge_message_and_shows_a_tools_hidden_characters(long_run):
    """6f7f1ce: a 1.5 MB page holding both messages whole, and the tool's name with its NUL,
    U+202E and U+200B as they were."""
    ((status, page),) = fetch(long_run.parent, "/conversation/0/run?sample=0")
    assert status == 200
    assert_cut_and_named(page)


def test_the_report_cuts_a_huge_message_and_shows_a_tools_hidden_characters(long_run, tmp_path):
    """The report draws the same transcript (its first 50,000 characters, the rest of the
    cut text folded)."""
    _done, page = report(long_run, tmp_path)
    assert_cut_and_named(page)


def test_a_live_agents_hidden_tool_name_is_made_visible(tmp_path):
    """One step beyond: the name from a model server in a run (not a file), through the
    OpenAI path: an unknown action for the agent, a visible name on the page."""
    data = shared_data_dir()
    env = cli_env(data, tmp_path)
    tasks = json.loads((data / "tau_bench" / "airline" / "tasks_test.json").read_text())

    def agent(request: dict[str, Any]) -> Reply:
        if not any(m["role"] == "tool" for m in request["messages"]):
            return Reply(tool_calls=[tool_call(HIDDEN_NAME, {}, "call_0")])
        return Reply(content="Done.")

    with FakeServer(responder=agent) as model, FakeServer(responder=TauUser(tasks)) as user:
        done = run_cli(["run", "--benchmark", "tau-bench-airline", "--limit", "1",
                        "--model", "openai/agent", "--model-base-url", model.base_url,
                        "--user-model", "openai/user", "--user-base-url", user.base_url,
                        "--out", str(tmp_path / "run"), "--no-progress"], env)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    ((status, page),) = fetch(tmp_path, "/conversation/0/run?sample=0")
    assert status == 200 and f"<b>{SHOWN_NAME}</b>" in page
    assert "\u202e" not in page and "\x00" not in page
    _done, page = report(tmp_path / "run", tmp_path)
    assert f"<b>{SHOWN_NAME}</b>" in page and "\u202e" not in page and "\x00" not in page


# -- a NaN stored in the database -------------------------------------------------------------
def _nan_entry() -> dict[str, Any]:
    entry = gold_trajectory(shared_data_dir(), "airline", 0)
    function = _booking(entry)
    arguments = json.loads(function["arguments"])
    arguments["passengers"][0]["dob"] = float("nan")  # (inner values are the tool's to check)
    function["arguments"] = json.dumps(arguments)  # (Python writes NaN, as a model may)
    return entry


def _steps(run: Path) -> list[dict[str, Any]]:
    lines = (run / "log.jsonl").read_text("utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == "step"]


def test_a_nan_in_the_arguments_never_reaches_the_database(tmp_path):
    """Issue 44, class 9: 6f7f1ce stored the NaN and wrote `found: null` in the sample record,
    results.json's failures, the viewer and the report. Arguments are JSON as RFC 8259 has
    it now (class 4): the call is an error observation and nothing is written, so no diff
    row can hide a NaN (were one in a database, the diff shows it as NaN:
    tests/unit/test_tau_reward.py)."""
    run = imported(tmp_path, _nan_entry())
    (booked,) = [s for s in _steps(run) if s["name"] == "book_reservation"]
    assert booked["output"].startswith("Error: the arguments of book_reservation")
    results = json.loads((run / "results.json").read_text())
    (failure,) = results["failures"]
    assert not [d for d in failure["diff"] if d["path"].startswith("passengers")]
    ((status, page),) = fetch(run.parent, "/conversation/0/run?sample=0")
    assert status == 200 and "Database against the gold state" in page
    _done, page = report(run, tmp_path)
    assert "Database against the gold state" in page


def test_a_nan_a_live_agent_sends_never_reaches_the_database(tmp_path):
    """One step beyond: the same booking made by an agent in a run (the driver's scoring
    path, not the importer's)."""
    data = shared_data_dir()
    env = cli_env(data, tmp_path)
    tasks = json.loads((data / "tau_bench" / "airline" / "tasks_test.json").read_text())
    booking = _booking(_nan_entry())["arguments"]  # (the text, NaN as Python writes it)

    def agent(request: dict[str, Any]) -> Reply:
        if not any(m["role"] == "tool" for m in request["messages"]):
            return Reply(tool_calls=[tool_call("book_reservation", booking, "call_0")])
        return Reply(content="Booked.")

    with FakeServer(responder=agent) as model, FakeServer(responder=TauUser(tasks)) as user:
        done = run_cli(["run", "--benchmark", "tau-bench-airline", "--limit", "1",
                        "--model", "openai/agent", "--model-base-url", model.base_url,
                        "--user-model", "openai/user", "--user-base-url", user.base_url,
                        "--out", str(tmp_path / "run"), "--no-progress"], env)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (booked,) = [s for s in _steps(tmp_path / "run") if s["name"] == "book_reservation"]
    assert booked["output"].startswith("Error: the arguments of book_reservation")
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    (failure,) = results["failures"]
    assert not [d for d in failure["diff"] if d["path"].startswith("passengers")]
