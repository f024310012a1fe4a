"""`turnbench view` under attack (issue 38), each as its reproduction was run: the real CLI
in a child process on 127.0.0.1, a hostile page played by raw requests, a careless second
process by a real one.

- a second handle on the votes file (the export) then another process that opens and
  closes it: no vote is lost, even to a SIGKILL;
- DNS rebinding: a Host or an Origin outside the allowlist is refused before anything runs;
- blind judging: the pages naming models are the operator's, item keys cannot be computed,
  an undo undoes only the votes of its own browser session;
- a locked votes file: 503 with the reason as JSON, and the other pages go on meanwhile;
- a token of non-ASCII bytes is a 401, not a 500.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.annotate_support import always_tie, hostile_answers, judge_run
from tests.conftest import REPO, cli_env, shared_data_dir
from tests.e2e.test_annotate_server import Client


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class View:
    """`turnbench view` as a user starts it, in a child process (so it can be SIGKILLed)."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "turnbench", "view", *args, "--port", str(self.port)]
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        self.process = subprocess.Popen(command, cwd=REPO, env=env, text=True, **pipes)
        self.errors = ""
        assert self.process.stdout is not None
        self.printed = ""
        while "serving" not in self.printed:
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError(f"view did not start: {self.process.stderr.read()}")
            self.printed += line
        found = re.search(r"\?token=([\w-]+) \(runs", self.printed)
        self.operator = found.group(1) if found else None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise AssertionError("view did not listen")

    def raw(self, request: bytes) -> tuple[int, bytes]:
        """One HTTP request as bytes (what a browser or an attacker's page may send)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as connection:
            connection.sendall(request)
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
        return int(answer.split(b" ", 2)[1]), answer

    def get(self, path: str, host: str | None = None, extra: str = "") -> int:
        host = host or f"127.0.0.1:{self.port}"
        head = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
        return self.raw(head.encode())[0]

    def deleted_votes_files(self) -> list[str]:
        """The votes files this process holds open that were deleted under it."""
        folder = Path(f"/proc/{self.process.pid}/fd")
        targets = []
        for fd in folder.iterdir():
            try:
                targets.append(os.readlink(fd))
            except OSError:
                continue
        return [t for t in targets if "votes.sqlite" in t and t.endswith("(deleted)")]

    def stop(self, kill: bool = False) -> None:
        """Stop it (SIGKILL with `kill`: no cleanup); what it wrote to stderr is `errors`."""
        if self.process.poll() is None:
            self.process.kill() if kill else self.process.terminate()
            self.process.wait(timeout=20)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None and not stream.closed:
                if stream is self.process.stderr:
                    self.errors += stream.read()
                stream.close()


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return cli_env(shared_data_dir(), tmp_path_factory.mktemp("attack-env"))


@pytest.fixture(scope="module")
def served(tmp_path_factory, env) -> Path:
    """A folder holding one pairwise run of two models (the items to judge)."""
    root = tmp_path_factory.mktemp("attack-served")
    answers = hostile_answers(shared_data_dir(), tmp_path_factory.mktemp("answers"))
    judge_run(env, answers, root / "pairwise", "--mode", "pairwise-all", responder=always_tie)
    return root


@pytest.fixture
def annotating(served, env, tmp_path) -> Iterator[View]:
    view = View(env, str(served), "--annotate", str(served / "pairwise"),
                "--votes", str(tmp_path / "votes.sqlite"))  # fmt: skip
    try:
        yield view
    finally:
        view.stop(kill=True)


async def _client(session: aiohttp.ClientSession, view: View) -> Client:
    client = Client(session, view.base)
    await client.open_page()
    return client


async def _vote(client: Client, annotator: str) -> tuple[int, dict[str, Any]]:
    item = (await client.next(annotator))["item"]
    return await client.post("/api/votes", {"annotator": annotator, "item": item["key"],
                                            "choice": "left"})  # fmt: skip


def _jar() -> aiohttp.CookieJar:
    return aiohttp.CookieJar(unsafe=True)


def test_no_confirmed_vote_is_lost_to_a_second_handle_or_a_second_process(annotating, tmp_path):
    votes = tmp_path / "votes.sqlite"

    async def first() -> str:
        async with aiohttp.ClientSession(cookie_jar=_jar()) as session:
            client = await _client(session, annotating)
            assert (await _vote(client, "ann"))[0] == 201
            headers = {"Authorization": f"Bearer {annotating.operator}"}
            async with session.get(annotating.base + "/api/votes/export.jsonl",
                                   headers=headers) as response:  # fmt: skip
                assert response.status == 200
                return await response.text()

    exported = asyncio.run(first())
    assert exported.count("\n") == 1
    # a careless second process opens the file read-write and closes it
    careless = "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); " \
               "db.execute('SELECT count(*) FROM votes').fetchone(); db.close()"  # fmt: skip
    subprocess.run([sys.executable, "-c", careless, str(votes)], check=True)
    assert annotating.deleted_votes_files() == []

    async def second() -> int:
        async with aiohttp.ClientSession(cookie_jar=_jar()) as session:
            return (await _vote(await _client(session, annotating), "bob"))[0]

    assert asyncio.run(second()) == 201
    annotating.stop(kill=True)  # SIGKILL: whatever is not on disk is lost
    with sqlite3.connect(votes) as db:
        assert [r[0] for r in db.execute("SELECT annotator FROM votes ORDER BY id")] == [
            "ann", "bob"
        ]  # fmt: skip


def test_a_host_or_origin_outside_the_allowlist_is_refused(served, env):
    view = View(env, str(served))
    try:
        assert view.get("/api/runs") == 200
        assert view.get("/api/runs", host=f"localhost:{view.port}") == 200
        assert view.get("/api/runs", host=f"attacker.example:{view.port}") == 403
        assert view.get("/", host="attacker.example") == 403
        assert view.get("/api/runs", host="127.0.0.1.attacker.example") == 403
    finally:
        view.stop()
    allowed = View(env, str(served), "--allow-host", "evals.internal")
    try:
        assert allowed.get("/api/runs", host=f"evals.internal:{allowed.port}") == 200
        assert allowed.get("/api/runs", host=f"attacker.example:{allowed.port}") == 403
    finally:
        allowed.stop()


def test_a_rebound_page_cannot_vote(annotating):
    """After a rebinding the browser sends the attacker's name as both Host and Origin (they
    agree, which is all the old check compared): refused, even with the right CSRF token and
    the annotator's cookie."""

    async def scenario() -> tuple[int, int]:
        async with aiohttp.ClientSession(cookie_jar=_jar()) as session:
            client = await _client(session, annotating)
            item = (await client.next("eve"))["item"]
            body = {"annotator": "eve", "item": item["key"], "choice": "left"}
            rebound = f"attacker.example:{annotating.port}"
            headers = {
                "Host": rebound,
                "Origin": f"http://{rebound}",
                "X-CSRF-Token": client.token,
                "Content-Type": "application/json",
            }
            url = annotating.base + "/api/votes"
            async with session.post(url, data=json.dumps(body), headers=headers) as response:
                refused = response.status
            return refused, (await client.post("/api/votes", body))[0]

    assert asyncio.run(scenario()) == (403, 201)


def test_blind_judging_names_no_model_to_the_annotators(annotating, served):
    view = annotating
    # every page that names a model is the operator's: 403 to an annotator
    for path in ("/", "/api/runs", "/run/0/pairwise", "/conversation/0/pairwise?sample=81",
                 "/api/votes/export.jsonl", "/api/events"):  # fmt: skip
        assert view.get(path) == 403, path
    bearer = f"Authorization: Bearer {view.operator}\r\n"
    assert view.get("/conversation/0/pairwise?sample=81", extra=bearer) == 200
    assert view.get("/api/votes/export.jsonl", extra=bearer) == 200

    async def scenario() -> tuple[dict[str, Any], tuple[int, dict], tuple[int, dict]]:
        async with (
            aiohttp.ClientSession(cookie_jar=_jar()) as one,
            aiohttp.ClientSession(cookie_jar=_jar()) as other,
        ):
            ann, mallory = await _client(one, view), await _client(other, view)
            item = (await ann.next("ann"))["item"]
            body = {"annotator": "ann", "item": item["key"], "choice": "left"}
            assert (await ann.post("/api/votes", body))[0] == 201
            # another browser under the same name cannot undo ann's vote; ann can
            theirs = await mallory.post("/api/votes/undo", {"annotator": "ann"})
            mine = await ann.post("/api/votes/undo", {"annotator": "ann"})
            return item, theirs, mine

    item, theirs, mine = asyncio.run(scenario())
    assert theirs[0] == 200 and theirs[1]["undone"] is None
    assert mine[0] == 200 and mine[1]["undone"] == item["key"]
    # the key is no hash anyone can compute from the run's models
    models = sorted(json.loads((served / "pairwise" / "results.json").read_text())["models"])
    for sample in range(81, 161):
        for turn in (1, 2):
            text = json.dumps([str(sample), turn, *models], ensure_ascii=False)
            assert hashlib.sha256(text.encode()).hexdigest()[:20] != item["key"]
    assert "vicuna" not in json.dumps(item) and "alpaca" not in json.dumps(item)


def test_a_locked_votes_file_is_a_503_and_the_other_pages_go_on(annotating, tmp_path):
    locker = (
        "import sqlite3, sys, time; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
        "db.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(30)"
    )
    holder = subprocess.Popen([sys.executable, "-c", locker, str(tmp_path / "votes.sqlite")],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        finished: list[str] = []

        async def vote(client: Client) -> tuple[int, dict[str, Any]]:
            body = {"annotator": "ann", "sample_id": 81, "turn": 1, "model_a": "alpaca-13b",
                    "model_b": "vicuna-13b-v1.3", "winner": "tie"}  # fmt: skip
            answer = await client.post("/api/votes", body)
            finished.append("vote")
            return answer

        async def page(session: aiohttp.ClientSession) -> int:
            await asyncio.sleep(0.3)  # (the vote is waiting for the lock by now)
            async with session.get(annotating.base + "/annotate") as response:
                finished.append("page")
                return response.status

        async def scenario() -> tuple[tuple[int, dict[str, Any]], int]:
            async with aiohttp.ClientSession(cookie_jar=_jar()) as session:
                client = await _client(session, annotating)
                return await asyncio.gather(vote(client), page(session))

        (status, body), page_status = asyncio.run(scenario())
    finally:
        holder.kill()
        holder.wait()
    assert status == 503 and "locked" in body["error"] and "nothing was stored" in body["error"]
    assert page_status == 200 and finished == ["page", "vote"]  # the loop was never blocked
    annotating.stop()
    assert "Traceback" not in annotating.errors


def test_a_token_of_non_ascii_bytes_is_refused_with_401(served, env):
    view = View(env, str(served), "--token", "s3cret")
    try:
        head = b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % view.port
        request = head + b"Authorization: Bearer \xc3\xa9t\xe9\r\nConnection: close\r\n\r\n"
        status, _ = view.raw(request)
        assert status == 401
        assert view.get("/api/runs", extra="Authorization: Bearer s3cret\r\n") == 200
    finally:
        view.stop()
    assert "Traceback" not in view.errors
