"""The annotation routes on a real aiohttp server (127.0.0.1, a free port): CSRF and Origin
checks, validation, blind items, overlap, undo, a SIGKILL that loses nothing, and
`turnbench agreement --votes FILE.sqlite` on the result."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.annotate_support import (
    ALPACA,
    HOSTILE,
    HOSTILE_MODEL,
    VICUNA,
    ServerProcess,
    always_tie,
    hostile_answers,
    judge_run,
    rates,
)
from tests.conftest import cli_env, run_cli, shared_data_dir
from turnbench.view.annotate import add_annotation_routes, load_items

Scenario = Callable[["Client"], Awaitable[None]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("annotate-runs")
    env = cli_env(shared_data_dir(), root)
    answers = hostile_answers(shared_data_dir(), root / "answers", rename=True)
    single = root / "single-answers"
    single.mkdir()
    (single / f"{VICUNA}.jsonl").write_bytes(
        (shared_data_dir() / f"mt_bench/model_answer/{VICUNA}.jsonl").read_bytes()
    )
    return {
        "pairwise": judge_run(
            env, answers, root / "pairwise", "--mode", "pairwise-all", responder=always_tie
        ),
        "single": judge_run(env, single, root / "single", responder=rates(8)),
        "env": root,
    }


class Client:
    """A browser-like client: keeps cookies for 127.0.0.1, knows the page's CSRF token."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base
        self.token = ""

    async def open_page(self) -> str:
        async with self.session.get(self.base + "/annotate") as response:
            assert response.status == 200
            page = await response.text()
        self.token = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        return page

    async def next(self, annotator: str, **query: str) -> dict[str, Any]:
        params = {"annotator": annotator, **query}
        async with self.session.get(self.base + "/api/annotate/next", params=params) as response:
            assert response.status == 200, await response.text()
            return await response.json()

    async def post(
        self, path: str, body: Any, *, token: str | None = "", origin: str | None = ""
    ) -> tuple[int, dict[str, Any]]:
        headers = {}
        if token is not None:
            headers["X-CSRF-Token"] = token or self.token
        if origin is not None:
            headers["Origin"] = origin or self.base
        data = body if isinstance(body, str) else json.dumps(body)
        headers["Content-Type"] = "application/json"
        async with self.session.post(self.base + path, data=data, headers=headers) as response:
            return response.status, await response.json()


def serve(run: Path, votes: Path, scenario: Scenario, overlap: int = 2) -> None:
    async def main() -> None:
        app = web.Application()
        add_annotation_routes(app, run_dir=run, votes_path=votes, overlap=overlap)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        jar = aiohttp.CookieJar(unsafe=True)  # keep cookies for an IP address, as browsers do
        try:
            async with aiohttp.ClientSession(cookie_jar=jar) as session:
                client = Client(session, f"http://127.0.0.1:{port}")
                await client.open_page()
                await scenario(client)
        finally:
            await runner.cleanup()

    asyncio.run(main())


def rows(votes: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(votes) as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM votes ORDER BY id")]


def pair_vote(annotator: str = "ann", **changes: Any) -> dict[str, Any]:
    vote = {"annotator": annotator, "sample_id": 81, "turn": 1, "model_a": VICUNA,
            "model_b": HOSTILE_MODEL, "winner": "model_a"}  # fmt: skip
    return {**vote, **changes}


def test_a_vote_needs_the_csrf_token_and_a_same_origin_origin(runs, tmp_path):
    votes = tmp_path / "votes.sqlite"

    async def scenario(client: Client) -> None:
        refused = [
            await client.post("/api/votes", pair_vote(), token=None),  # no token
            await client.post("/api/votes", pair_vote(), token="0" * 64),  # a wrong one
            await client.post("/api/votes", pair_vote(), token="é" * 64),  # not even ASCII
            await client.post("/api/votes", pair_vote(), origin=None),  # no Origin
            await client.post("/api/votes", pair_vote(), origin="http://evil.example"),
            await client.post("/api/votes", pair_vote(), origin="http://127.0.0.1:1"),
        ]
        assert [status for status, _ in refused] == [403] * 6
        assert rows(votes) == []
        status, body = await client.post("/api/votes", pair_vote())
        assert status == 201 and body["id"] == 1
        # undo changes state too: the same two checks
        assert (await client.post("/api/votes/undo", {"annotator": "ann"}, token=None))[0] == 403
        foreign = await client.post(
            "/api/votes/undo", {"annotator": "ann"}, origin="https://evil.example"
        )
        assert foreign[0] == 403
        # another browser (a fresh cookie jar) cannot use this page's token
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as other:
            stranger = Client(other, client.base)
            stranger.token = client.token
            assert (await stranger.post("/api/votes", pair_vote("eve")))[0] == 403

    serve(runs["pairwise"], votes, scenario)
    stored = rows(votes)
    assert len(stored) == 1 and stored[0]["undone_at"] is None
    assert (stored[0]["annotator"], stored[0]["model_b"], stored[0]["winner"]) == (
        "ann", HOSTILE_MODEL, "model_a"
    )  # fmt: skip
    assert stored[0]["session_id"] and stored[0]["ts"] > 0


def test_every_field_is_validated(runs, tmp_path):
    votes = tmp_path / "votes.sqlite"

    async def scenario(client: Client) -> None:
        bad = {
            "unknown sample": pair_vote(sample_id=999),
            "unknown turn": pair_vote(turn=3),
            "unknown model": pair_vote(model_b="gpt-5"),
            "same model": pair_vote(model_b=VICUNA),
            "bad winner": pair_vote(winner="model_c"),
            "turn as text": pair_vote(turn="1"),
            "turn as bool": pair_vote(turn=True),
            "extra field": pair_vote(conversation_a=[]),
            "score on a pairwise run": {
                "annotator": "a",
                "sample_id": 81,
                "turn": 1,
                "model": VICUNA,
                "score": 5,
            },
            "control character in the name": pair_vote("a\x1b[2J"),
            "empty name": pair_vote(""),
            "unknown item": {"annotator": "a", "item": "nope", "choice": "left"},
            "not an object": [1, 2],
            "not JSON": "{nope",
            "nested too deep": "[" * 100_000 + "]" * 100_000,
        }
        for why, body in bad.items():
            status, answer = await client.post("/api/votes", body)
            assert status == 400, (why, status, answer)
            assert answer["error"], why
        key = (await client.next("a"))["item"]["key"]
        for body in (
            {"annotator": "a", "item": key, "score": 3},  # a score for a pairwise item
            {"annotator": "a", "item": key, "choice": "left", "score": 3},
            {"annotator": "a", "item": key},
            {"annotator": "a", "item": key, "choice": "middle"},
        ):
            assert (await client.post("/api/votes", body))[0] == 400, body
        assert rows(votes) == []
        assert (await client.post("/api/votes", pair_vote()))[0] == 201
        # the same pair named in the other order is the same item: one vote per annotator
        twice = await client.post(
            "/api/votes", pair_vote(model_a=HOSTILE_MODEL, model_b=VICUNA, winner="model_b")
        )
        assert twice[0] == 409
        async with client.session.get(
            client.base + "/api/annotate/next", params={"annotator": "x\n"}
        ) as response:
            assert response.status == 400

    serve(runs["pairwise"], votes, scenario)
    assert len(rows(votes)) == 1


def answer_owner(run: Path) -> dict[tuple[str, int, str], str]:
    """(sample id, turn, answer text) -> model, from the run log."""
    found = {}
    for line in (run / "log.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["kind"] == "answer":
            key = (str(record["sample_id"]), record["turn"], record["text"])
            found[key] = record["model"]
    return found


def test_items_are_blind_and_the_order_shown_is_recorded(runs, tmp_path):
    votes = tmp_path / "votes.sqlite"
    owners = answer_owner(runs["pairwise"])
    seen: list[tuple[str, dict[str, Any]]] = []

    async def scenario(client: Client) -> None:
        page = await client.open_page()
        assert HOSTILE not in page and "onerror" not in page  # answers never enter the HTML
        for annotator in [f"annotator-{n}" for n in range(8)]:
            shown = await client.next(annotator)
            item = shown["item"]
            text = json.dumps(shown)
            for name in (VICUNA, ALPACA, 'onerror=\\"window.__pwned=3'):
                assert name not in text  # no model name reaches the page
            assert item["kind"] == "pairwise" and len(item["sides"]) == 2
            assert any(side["answer"].startswith(HOSTILE) for side in item["sides"])
            choice = ["left", "right", "tie"][len(seen) % 3]
            status, _ = await client.post(
                "/api/votes", {"annotator": annotator, "item": item["key"], "choice": choice}
            )
            assert status == 201
            seen.append((choice, item))

    serve(runs["pairwise"], votes, scenario, overlap=8)
    stored = rows(votes)
    assert len(stored) == 8
    assert len({row["item_key"] for row in stored}) == 1  # overlap 8: all on the same item
    lefts = set()
    for (choice, item), row in zip(seen, stored, strict=True):
        left = owners[(item["sample_id"], item["turn"], item["sides"][0]["answer"])]
        right = owners[(item["sample_id"], item["turn"], item["sides"][1]["answer"])]
        assert row["shown_left"] == left
        lefts.add(left)
        assert (row["model_a"], row["model_b"]) == tuple(sorted((left, right)))
        expected = {"left": left, "right": right}.get(choice)
        winner = None if row["winner"] == "tie" else row[row["winner"]]
        assert winner == expected
    assert lefts == {VICUNA, HOSTILE_MODEL}  # the order is randomised per annotator


def test_overlap_skip_and_undo(runs, tmp_path):
    votes = tmp_path / "votes.sqlite"

    async def scenario(client: Client) -> None:
        first = (await client.next("a"))["item"]
        assert (await client.next("b"))["item"]["key"] == first["key"]  # the same order
        for annotator in ("a", "b"):
            body = {"annotator": annotator, "item": first["key"], "choice": "tie"}
            assert (await client.post("/api/votes", body))[0] == 201
        # two annotators voted: overlap 2 reached, a third one gets another item
        third = await client.next("c")
        assert third["item"]["key"] != first["key"]
        assert third["progress"] == {"yours": 0, "items": 16, "complete": 1,
                                     "open_for_you": 15, "overlap": 2}  # fmt: skip
        skipped = await client.next("c", skip=third["item"]["key"])
        assert skipped["item"]["key"] not in (first["key"], third["item"]["key"])
        status, undone = await client.post("/api/votes/undo", {"annotator": "b"})
        assert status == 200 and undone["undone"] == first["key"]
        assert undone["progress"]["complete"] == 0
        again = await client.next("b", item=first["key"])
        assert again["item"]["key"] == first["key"]
        nothing = await client.post("/api/votes/undo", {"annotator": "nobody"})
        assert nothing == (200, {"undone": None, "progress": nothing[1]["progress"]})

    serve(runs["pairwise"], votes, scenario)
    stored = rows(votes)
    assert [row["annotator"] for row in stored] == ["a", "b"]
    assert stored[0]["undone_at"] is None and stored[1]["undone_at"] is not None  # kept


def test_a_killed_server_loses_no_vote_and_agreement_reads_the_file(runs, tmp_path):
    votes = tmp_path / "votes.sqlite"
    env = cli_env(shared_data_dir(), tmp_path)

    async def cast(base: str, count: int, annotator: str) -> None:
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as session:
            client = Client(session, base)
            await client.open_page()
            for _ in range(count):
                item = (await client.next(annotator))["item"]
                body = {"annotator": annotator, "item": item["key"], "choice": "left"}
                assert (await client.post("/api/votes", body))[0] == 201

    server = ServerProcess(runs["pairwise"], votes, env)
    try:
        asyncio.run(cast(server.base, 5, "alice"))
        server.kill()  # SIGKILL right after the last answer: no close, no checkpoint
    finally:
        server.stop()
    # the votes are in the write-ahead log the killed server left; a read-only reader
    # (agreement) sees them there
    assert votes.with_name(votes.name + "-wal").stat().st_size > 0
    early = run_cli(
        ["agreement", "--votes", str(votes), "--run", str(runs["pairwise"]), "--json"], env
    )
    assert early.returncode == 0, early.stderr
    only_judge = json.loads(early.stdout)["openai/judge-model|human"]
    assert sum(t["S1"]["total"] for t in only_judge.values()) == 5
    assert len(rows(votes)) == 5
    again = ServerProcess(runs["pairwise"], votes, env)
    try:
        asyncio.run(cast(again.base, 5, "bob"))  # bob gets alice's five items first
        shown = run_cli(
            ["agreement", "--votes", str(votes), "--run", str(runs["pairwise"]), "--json"], env
        )
    finally:
        again.kill()
        again.stop()
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert sorted(report) == ["human|human", "openai/judge-model|human"]
    human = report["human|human"]
    assert sum(t["S1"]["total"] for t in human.values()) == 5
    judge = report["openai/judge-model|human"]
    assert sum(t["S1"]["total"] for t in judge.values()) == 10  # every human vote vs the run
    assert sum(t["S1"]["agree"] for t in judge.values()) == 0  # the judge always ties
    assert sum(t["S2"]["total"] for t in judge.values()) == 0  # so nothing is left in S2
    stored = rows(votes)
    assert [r["annotator"] for r in stored] == ["alice"] * 5 + ["bob"] * 5
    assert len({r["session_id"] for r in stored}) == 2
    assert {r["item_key"] for r in stored[:5]} == {r["item_key"] for r in stored[5:]}


def test_single_grading_scores_and_their_agreement(runs, tmp_path):
    votes = tmp_path / "votes.sqlite"
    env = cli_env(shared_data_dir(), tmp_path)

    async def scenario(client: Client) -> None:
        item = (await client.next("a"))["item"]
        assert item["kind"] == "single" and len(item["sides"]) == 1
        for annotator, score in (("a", 6), ("b", 7)):
            body = {"annotator": annotator, "item": item["key"], "score": score}
            assert (await client.post("/api/votes", body))[0] == 201
        by_name = {"annotator": "c", "sample_id": int(item["sample_id"]),
                   "turn": item["turn"], "model": VICUNA, "score": 11}  # fmt: skip
        assert (await client.post("/api/votes", by_name))[0] == 400
        assert (await client.post("/api/votes", {**by_name, "score": 10}))[0] == 201
        pairwise = {"annotator": "d", "item": item["key"], "choice": "left"}
        assert (await client.post("/api/votes", pairwise))[0] == 400

    serve(runs["single"], votes, scenario)
    shown = run_cli(
        ["agreement", "--votes", str(votes), "--run", str(runs["single"]), "--json"], env
    )
    assert shown.returncode == 0, shown.stderr
    scores = json.loads(shown.stdout)["scores"]
    # the judge rates every answer 8: 6, 7 and 10 against it
    judge = next(iter(scores["openai/judge-model|human"].values()))
    assert (judge["agree"], judge["within_1"], judge["total"]) == (0, 1, 3)
    assert judge["mean_abs_diff"] == pytest.approx((2 + 1 + 2) / 3)
    human = next(iter(scores["human|human"].values()))
    assert (human["agree"], human["within_1"], human["total"]) == (0, 1, 3)  # 6-7, 6-10, 7-10
    table = run_cli(["agreement", "--votes", str(votes), "--run", str(runs["single"])], env)
    assert table.returncode == 0 and "Score agreement" in table.stdout


def test_items_carry_the_question_earlier_turns_and_the_reference(runs):
    items = load_items(runs["pairwise"])
    assert items.kind == "pairwise" and len(items.items) == 16  # 8 questions x 2 turns
    data = shared_data_dir() / "mt_bench"
    questions = {
        str(q["question_id"]): q
        for q in map(json.loads, (data / "question.jsonl").read_text("utf-8").splitlines())
    }
    references = {
        str(r["question_id"]): r["choices"][0]["turns"]
        for r in map(json.loads, (data / "reference_answer/gpt-4.jsonl").read_text().splitlines())
    }
    owners = answer_owner(runs["pairwise"])
    with_reference = 0
    for item in items.items:
        question = questions[item.sample_id]
        assert item.question == question["turns"][item.turn - 1]
        if question["category"] in ("math", "reasoning", "coding"):
            assert item.reference == references[item.sample_id][item.turn - 1]
            with_reference += 1
        else:
            assert item.reference is None
        assert item.models == tuple(sorted((VICUNA, HOSTILE_MODEL)))
        for side in item.sides:
            assert owners[(item.sample_id, item.turn, side.answer)] == side.model
            assert len(side.earlier) == item.turn - 1
            if item.turn == 2:
                user, reply = side.earlier[0]
                assert user == question["turns"][0]
                assert owners[(item.sample_id, 1, reply)] == side.model  # its own answer
    assert with_reference == 6  # math, reasoning, coding: both turns


def test_a_single_grading_run_of_two_models_gives_pairwise_items(tmp_path):
    env = cli_env(shared_data_dir(), tmp_path)
    run = judge_run(env, shared_data_dir() / "mt_bench/model_answer", tmp_path / "both")
    items = load_items(run)
    assert items.kind == "pairwise" and len(items.items) == 16
    assert {item.models for item in items.items} == {tuple(sorted((VICUNA, ALPACA)))}
    assert len({item.key for item in items.items}) == 16
