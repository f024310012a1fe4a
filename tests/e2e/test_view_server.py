"""`turnbench view`: the API, the pages, the token, path safety and read-only browsing, on
runs made against the fake server (aiohttp's test client; one real CLI server)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.annotate_support import HOSTILE, HOSTILE_MODEL, hostile_answers, judge_run
from tests.conftest import cli_env, run_cli, shared_data_dir
from tests.e2e.test_report import make_run
from turnbench.view.app import OPERATOR, build_app
from turnbench.view.runs import LogTail


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return cli_env(shared_data_dir(), tmp_path_factory.mktemp("view-env"))


@pytest.fixture(scope="module")
def served(tmp_path_factory, env) -> Path:
    """A folder with two single-grading runs (one nested) and a run whose model name and
    answers are XSS probes."""
    root = tmp_path_factory.mktemp("served")
    make_run(root / "a", env)
    make_run(root / "nested" / "b", env, model="openai/other-model")
    answers = hostile_answers(shared_data_dir(), tmp_path_factory.mktemp("answers"), rename=True)
    judge_run(env, answers, root / "hostile")
    return root


def fetch(app: Any, *paths: str, headers: dict[str, str] | None = None) -> list[tuple]:
    async def go() -> list[tuple]:
        async with TestClient(TestServer(app)) as client:
            done = []
            for path in paths:
                response = await client.get(path, headers=headers or {})
                done.append((response.status, await response.text(), response.headers))
            return done

    return asyncio.run(go())


def tree_state(root: Path) -> dict[str, tuple]:
    state = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        state[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns, digest)
    return state


def test_api_runs_lists_every_run_directory_with_the_interface_fields(served):
    app = build_app([served], token=None)
    [(status, text, headers)] = fetch(app, "/api/runs")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    runs = {run["path"]: run for run in json.loads(text)}
    assert set(runs) == {"a", "nested/b", "hostile"}
    results = json.loads((served / "a" / "results.json").read_text())
    row = runs["a"]
    assert row["benchmark"] == "mt-bench"
    assert row["model"] == "openai/model-under-test"
    assert row["judge"] == "openai/judge-model"
    assert row["complete"] is True and row["state"] == "complete"
    assert row["overall"] == results["overall"]
    assert row["counts"]["judged"] == results["counts"]["judged"]
    assert row["counts"]["logged_judgments"] == results["counts"]["judged"]
    assert runs["nested/b"]["model"] == "openai/other-model"


def test_pages_render_the_reports_sections_conversations_and_comparison(served):
    app = build_app([served], token=None)
    pages = fetch(
        app,
        "/",
        "/run/0/a",
        "/conversation/0/a?sample=81",
        "/compare?a_root=0&a=a&b_root=0&b=nested/b",
        "/pair?a_root=0&a=a&b_root=0&b=nested/b&sample=81",
    )
    assert [status for status, _, _ in pages] == [200] * 5
    runs, run, conversation, compare, pair = (text for _, text, _ in pages)
    assert 'href="/run/0/nested/b"' in runs
    # the run page is the report's own sections (same builders as `turnbench report`)
    assert 'id="summary"' in run and 'id="judge"' in run and "Judge diagnostics" in run
    assert 'href="/conversation/0/a?sample=81"' in run
    # the conversation: the question, the answer, the judge's prompt and its raw reply
    record = next(
        json.loads(line)
        for line in (served / "a" / "log.jsonl").open()
        if '"kind":"judgment"' in line and '"sample_id":81' in line
    )
    assert "Compose an engaging travel blog post" in conversation
    assert record["outputs"][0].split("[[")[0].strip()[:20] in conversation
    assert "Prompt (" in conversation and "Raw reply" in conversation
    assert 'href="/conversation/0/nested/b?sample=81"' in conversation  # the other run
    assert "Paired comparison" in compare and "paired samples" in compare
    assert pair.count("Turn 1") == 2
    for _, _, headers in pages:
        policy = headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_hostile_model_names_and_answers_are_escaped(served):
    app = build_app([served], token=None)
    pages = fetch(app, "/", "/api/runs", "/run/0/hostile", "/conversation/0/hostile?sample=81")
    for status, text, headers in pages:
        assert status == 200
        if headers["Content-Type"].startswith("text/html"):
            assert "<script>window.__pwned" not in text
            assert HOSTILE_MODEL not in text
            assert "onerror=" not in text.replace("onerror=&#34;", "").replace("onerror=&quot;", "")
    assert "&lt;img src=y onerror=" in pages[0][1]  # the model name, shown as text
    assert "&lt;script&gt;window.__pwned=1" in pages[3][1]
    # imported answers carry no question: the dataset's is shown
    assert "Compose an engaging travel blog post" in pages[3][1]
    assert any(HOSTILE_MODEL in run["models"] for run in json.loads(pages[1][1]))
    assert HOSTILE.startswith("<script>")


def test_token_is_required_when_set(served):
    app = build_app([served], token="s3cret-token")

    async def go() -> None:
        async with TestClient(TestServer(app)) as client:
            for path in ("/", "/api/runs", "/run/0/a", "/static/view.js", "/api/events"):
                response = await client.get(path)
                assert response.status == 401, path
            wrong = await client.get("/api/runs", headers={"Authorization": "Bearer nope"})
            assert wrong.status == 401
            bearer = await client.get("/api/runs", headers={"Authorization": "Bearer s3cret-token"})
            assert bearer.status == 200
            query = await client.get("/?token=s3cret-token")
            assert query.status == 200
            cookie = query.cookies["turnbench_view_token"]
            assert cookie["httponly"] and cookie["samesite"] == "Strict"
            later = await client.get("/run/0/a")  # the cookie carries it now
            assert later.status == 200

    asyncio.run(go())


@pytest.mark.parametrize(
    "path",
    [
        "/run/0/..%2F..%2Fetc",
        "/run/0/a%2F%2E%2E%2F%2E%2E%2F%2E%2E",
        "/run/0/a/%2E%2E/%2E%2E",
        "/conversation/0/..%2F..?sample=1",
        "/compare?a_root=0&a=../..&b_root=0&b=a",
        "/compare?a_root=0&a=/etc&b_root=0&b=a",
        "/run/0/escape",
        "/run/1/a",
    ],
)
def test_paths_cannot_leave_the_served_folders(served, tmp_path, path):
    outside = tmp_path / "outside"
    shutil.copytree(served / "a", outside)
    root = tmp_path / "root"
    shutil.copytree(served / "a", root / "a")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    app = build_app([root], token=None)
    [(status, _, _), (_, listing, _)] = fetch(app, path, "/api/runs")
    assert status == 404
    assert [run["path"] for run in json.loads(listing)] == ["a"]  # the link is not a run


def test_browsing_never_writes_into_the_run_directories(served):
    before = tree_state(served)
    time.sleep(0.01)
    app = build_app([served], token=None)
    fetch(
        app,
        "/",
        "/api/runs",
        "/run/0/a",
        "/run/0/nested/b",
        "/run/0/hostile",
        "/conversation/0/a?sample=81",
        "/compare?a_root=0&a=a&b_root=0&b=nested/b",
        "/pair?a_root=0&a=a&b_root=0&b=hostile&sample=81",
    )
    assert tree_state(served) == before


def test_a_torn_last_line_is_skipped_until_it_is_complete(served, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(served / "a", root / "a")
    log = root / "a" / "log.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    judgment = next(line for line in lines if b'"kind":"judgment"' in line)
    record = json.loads(judgment)
    record["key"] = record["key"].replace("81", "9081")
    extra = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    app = build_app([root], token=None)

    async def go() -> None:
        async with TestClient(TestServer(app)) as client:

            async def counts() -> dict:
                response = await client.get("/api/runs")
                return (await response.json())[0]["counts"]

            first = await counts()
            with log.open("ab") as handle:
                handle.write(extra[: len(extra) // 2])
            assert (await counts())["logged_judgments"] == first["logged_judgments"]
            assert (await client.get("/run/0/a")).status == 200  # the report skips it too
            with log.open("ab") as handle:
                handle.write(extra[len(extra) // 2 :])
            assert (await counts())["logged_judgments"] == first["logged_judgments"] + 1

    asyncio.run(go())


def test_log_tail_reads_only_what_was_appended(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"kind":"config","key":"c1","ts":1.0,"config":{"model":"m"}}\n')
    tail = LogTail(log)
    tail.poll()
    assert tail.config == {"model": "m"} and not tail.ended
    with log.open("ab") as handle:
        handle.write(b'{"kind":"answer","key":"k1","text":"x"}\n{"kind":"judgment","key":"j')
    tail.poll()
    assert (len(tail.answers), len(tail.judgments)) == (1, 0)
    offset = tail.offset
    with log.open("ab") as handle:
        handle.write(b'1"}\n{"kind":"end","key":"e","status":"finished","ts":2.0}\n')
    tail.poll()
    assert (len(tail.answers), len(tail.judgments), tail.ended) == (1, 1, True)
    assert tail.offset > offset and tail.offset == log.stat().st_size


def test_log_tail_reads_keys_with_escapes_as_json_strings(tmp_path):
    """Keys are JSON strings: escaped quotes and backslashes belong to the key, a key that
    never closes (or holds no valid escape) is unreadable, not a shorter key."""
    keys = [
        json.dumps(["answer", 'm "quoted"', 1, 1]),
        json.dumps(["answer", "back\\slash\\", 1, 1]),
        json.dumps(["answer", "caf\u00e9", 1, 1]),
    ]
    compact = {"separators": (",", ":")}  # (as the log writes its records)
    lines = [json.dumps({"kind": "answer", "key": key, "text": "x"}, **compact) for key in keys]
    lines += ['{"kind":"judgment","key":"never closed', '{"kind":"judgment","key":"bad \\x"}']
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n", "utf-8")
    tail = LogTail(log)
    tail.poll()
    assert tail.answers == set(keys) and not tail.judgments
    assert tail.unreadable == 2


def test_server_sent_events_report_a_change(served, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(served / "a", root / "a")
    app = build_app([root], token=None)

    async def go() -> None:
        async with TestClient(TestServer(app)) as client:
            response = await client.get("/api/events")
            assert response.headers["Content-Type"].startswith("text/event-stream")

            async def event() -> list[dict]:
                data = b""
                while not data.endswith(b"\n\n"):
                    data += await asyncio.wait_for(response.content.readany(), 10)
                match = re.search(rb"^data: (.*)$", data, re.M)
                assert match is not None
                return json.loads(match.group(1))

            first = await event()
            with (root / "a" / "log.jsonl").open("ab") as handle:
                handle.write(b'{"kind":"answer","key":"new-answer","text":"x"}\n')
            second = await event()
            assert second[0]["counts"]["logged_answers"] == first[0]["counts"]["logged_answers"] + 1
            response.close()

    asyncio.run(go())


def test_annotation_routes_are_wired_when_asked(served, tmp_path):
    app = build_app(
        [served],
        token=None,
        annotate_run=served / "hostile",
        votes_path=tmp_path / "votes.sqlite",
    )
    operator = {"Authorization": f"Bearer {app[OPERATOR]}"}

    async def go() -> tuple[int, str, int, int]:
        async with TestClient(TestServer(app)) as client:
            page = await client.get("/annotate")
            runs = await client.get("/api/runs")
            as_operator = await client.get("/api/runs", headers=operator)
            return page.status, await page.text(), runs.status, as_operator.status

    status, text, api_status, operator_status = asyncio.run(go())
    # the annotators' page works; what names the models is the operator's alone
    assert status == 200 and "Human judging" in text
    assert api_status == 403 and operator_status == 200
    assert "export" not in text  # (the votes export names the models)
    assert (tmp_path / "votes.sqlite").exists()


def test_cli_refuses_bad_input(env, tmp_path):
    missing = run_cli(["view", str(tmp_path / "nope")], env, timeout=60)
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    votes = run_cli(["view", str(tmp_path), "--votes", str(tmp_path / "v.sqlite")], env, 60)
    assert votes.returncode == 2 and "--votes FILE is for --annotate" in votes.stderr
    port = run_cli(["view", str(tmp_path), "--port", "0"], env, timeout=60)
    assert port.returncode == 2 and "--port 0" in port.stderr
    assert "Traceback" not in missing.stderr + votes.stderr + port.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def public_server(served, env) -> Iterator[tuple[int, str]]:
    """`turnbench view --host 0.0.0.0` (no --token: one is generated and printed)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "turnbench", "view", str(served), "--host", "0.0.0.0",
         "--port", str(port)],
        env={**env, "PYTHONPATH": os.pathsep.join(sys.path)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"\?token=([A-Za-z0-9_-]+)", line)
        assert match is not None, line + (process.stderr.read() if process.stderr else "")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.1)
        yield port, match.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_non_loopback_bind_refuses_requests_without_its_generated_token(public_server):
    port, token = public_server
    base = f"http://127.0.0.1:{port}"
    for path in ("/", "/api/runs", f"/api/runs?token={token}x"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + path, timeout=10)
        assert refused.value.code == 401
    with urllib.request.urlopen(f"{base}/api/runs?token={token}", timeout=10) as response:
        assert response.status == 200 and len(json.loads(response.read())) == 3
    request = urllib.request.Request(
        f"{base}/api/runs", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def test_a_run_without_results_yet_is_listed_from_its_log(served, tmp_path):
    """A run still at work has no results.json (it is written when the invocation ends)."""
    (tmp_path / "root" / "fresh").mkdir(parents=True)
    lines = (served / "a" / "log.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "root" / "fresh" / "log.jsonl").write_bytes(b"".join(lines[:7]))
    app = build_app([tmp_path / "root"], token=None)
    [(status, listing, _), (page_status, page, _)] = fetch(app, "/api/runs", "/run/0/fresh")
    [row] = json.loads(listing)
    assert status == 200 and row["path"] == "fresh" and row["complete"] is False
    assert row["state"] == "incomplete" and row["overall"] is None  # no live writer
    assert row["benchmark"] == "mt-bench" and row["model"] == "openai/model-under-test"
    assert row["counts"]["logged_answers"] + row["counts"]["logged_judgments"] == 6
    assert page_status == 200 and "no results.json here" in page
