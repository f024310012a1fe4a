"""lost-in-conversation-translation end to end: simulated (templated) user turns, BLEU at
every turn, reliability over repeated conversations, resume, all through the real CLI
against a fake server that translates by lookup.

The fake model translates every chunk its last user message holds, perfectly, and forgets
everything before it: with the whole document in one turn (`full`) it is perfect, in a
sharded conversation its final answer is the last chunk's translation only. The expected
figures are computed with sacrebleu directly, from the data file
(`turnbench.testing.simulated_fakes`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from turnbench.journal.threads import with_whole_requests
from turnbench.testing.fake_server import FakeServer
from turnbench.testing.simulated_fakes import (
    Translator,
    bleu,
    chunk_lookup,
    last_chunk_english,
)
from turnbench.testing.simulated_fakes import translation_documents as documents

BENCHMARK = "lost-in-conversation-translation"


def args(server: FakeServer, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--benchmark",
        BENCHMARK,
        "--model",
        "openai/translator",
        "--model-base-url",
        server.base_url,
        "--out",
        str(out),
        *extra,
    ]


def records(out: Path, kind: str) -> list[dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    records = with_whole_requests(map(json.loads, lines))  # (requests whole: journal.threads)
    return [r for r in records if r["kind"] == kind]


def test_degradation_against_a_perfect_but_forgetful_model(env, tmp_path, data_dir):
    lookup = chunk_lookup(data_dir)
    docs = documents(data_dir)[:4]
    with FakeServer(responder=Translator(lookup)) as server:
        out = tmp_path / "run"
        kinds = ("--conversation", "full", "--conversation", "sharded")
        done = run_cli(args(server, out, *kinds, "--simulations", "2", "--limit", "4"), env)
        assert done.returncode == 0, done.stderr
        requests = list(server.requests)
    results = json.loads((out / "results.json").read_text("utf-8"))
    sharded = [bleu(last_chunk_english(d, lookup), d["document_en"]) for d in docs]
    expected = 1 - (sum(sharded) / len(sharded)) / 1.0
    assert results["complete"] is True
    assert results["judges"] == [] and results["judge"] == ""
    assert results["degradation"]["value"] == pytest.approx(expected, abs=1e-12)
    assert results["degradation"]["ci_low"] <= expected <= results["degradation"]["ci_high"]
    full = results["by_conversation"]["full"]
    assert full["mean"] == 1.0 and full["aptitude"] == 1.0 and full["unreliability"] == 0.0
    assert (full["samples"], full["simulations"]) == (4, 2)
    assert results["by_conversation"]["sharded"]["mean"] == pytest.approx(
        sum(sharded) / len(sharded), abs=1e-12
    )
    assert results["overall"] == results["by_conversation"]["sharded"]["mean"]
    # the first answer of a sharded conversation translates all it has seen: perfect
    assert results["score_by_turn"]["sharded"]["1"] == 1.0
    assert results["score_by_turn"]["sharded"]["2"] < 1.0
    chunks = sum(len([s for s in d["shards"] if s["shard"].strip()]) for d in docs)
    assert len(requests) == 2 * (len(docs) + chunks)  # 2 simulations of full and sharded
    assert results["counts"]["answers"] == len(requests)

    # every user turn is logged with the shards it revealed and its conversation's seed
    turns = records(out, "user_turn")
    assert len(turns) == len(requests)
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for turn in turns:
        by_sample.setdefault(turn["sample_id"], []).append(turn)
    first = docs[0]
    shards = [s["shard_id"] for s in first["shards"] if s["shard"].strip()]
    sharded_turns = sorted(by_sample[f"{first['task_id']}-sharded-0"], key=lambda t: t["turn"])
    assert [t["revealed"] for t in sharded_turns] == [[i] for i in shards]
    assert by_sample[f"{first['task_id']}-full-0"][0]["revealed"] == shards
    seeds = {t["sample_id"]: t["meta"]["seed"] for t in turns}
    assert len(set(seeds.values())) == len(seeds) == 4 * 2 * 2
    # the model under test got each conversation's seed, and one new chunk per turn
    answers = records(out, "answer")
    for answer in answers:
        assert answer["params"]["seed"] == seeds[answer["sample_id"]]
        user_messages = [m for m in answer["messages"] if m["role"] == "user"]
        assert len(user_messages) == answer["turn"]
    conversations = {c["sample_id"]: c for c in results["conversations"]}
    assert (
        conversations[f"{first['task_id']}-sharded-1"]["seed"]
        == seeds[f"{first['task_id']}-sharded-1"]
    )
    assert len(conversations[f"{first['task_id']}-sharded-0"]["by_turn"]) == len(shards)


def test_killed_in_turn_4_resumes_at_turn_4_and_pays_nothing_again(env, tmp_path, data_dir):
    """One sharded conversation; the process is killed while turn 4 is in flight."""
    lookup = chunk_lookup(data_dir)
    document = documents(data_dir)[0]
    chunks = [s for s in document["shards"] if s["shard"].strip()]
    assert len(chunks) == 5
    translator = Translator(lookup, hang_after=3)
    with FakeServer(responder=translator) as server:
        out = tmp_path / "run"
        command = args(server, out, "--conversation", "sharded", "--limit", "1", "-c", "1")
        child = subprocess.Popen(
            [sys.executable, "-m", "turnbench", *command],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while len(server.requests) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(server.requests) == 4
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert [a["turn"] for a in records(out, "answer")] == [1, 2, 3]
        assert [t["turn"] for t in records(out, "user_turn")] == [1, 2, 3, 4]
        hung = server.requests[3]

        translator.hang_after = None
        resumed = run_cli(command, env)
        assert resumed.returncode == 0, resumed.stderr
        again = server.requests[4:]
    # turns 4 and 5 only; turn 4 exactly as it was sent before the kill
    assert len(again) == 2
    assert again[0]["messages"] == hung["messages"]
    assert [a["turn"] for a in records(out, "answer")] == [1, 2, 3, 4, 5]
    assert [t["turn"] for t in records(out, "user_turn")] == [1, 2, 3, 4, 5]
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] is True
    expected = bleu(lookup[chunks[-1]["shard"].strip()], document["document_en"])
    assert results["by_conversation"]["sharded"]["mean"] == pytest.approx(expected, abs=1e-12)


def test_raising_simulations_only_adds_conversations(env, tmp_path, data_dir):
    lookup = chunk_lookup(data_dir)
    docs = documents(data_dir)[:2]
    with FakeServer(responder=Translator(lookup)) as server:
        out = tmp_path / "run"
        base = ["--conversation", "full", "--conversation", "sharded", "--limit", "2"]
        first = run_cli(args(server, out, *base, "--simulations", "2"), env)
        assert first.returncode == 0, first.stderr
        before = len(server.requests)
        seeds_before = {r["seed"] for r in server.requests}
        second = run_cli(args(server, out, *base, "-B", "simulations=3"), env)
        assert second.returncode == 0, second.stderr
        added = server.requests[before:]
    chunks = sum(len([s for s in d["shards"] if s["shard"].strip()]) for d in docs)
    assert before == 2 * (len(docs) + chunks)
    assert len(added) == len(docs) + chunks  # the third simulation, nothing else
    assert not seeds_before & {r["seed"] for r in added}
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["by_conversation"]["sharded"]["simulations"] == 3
    assert results["simulations"] == 3 and results["complete"] is True


def test_a_conversation_type_that_does_not_exist_is_refused(env, tmp_path):
    with FakeServer() as server:
        done = run_cli(args(server, tmp_path / "run", "--conversation", "halves"), env)
        assert done.returncode == 2
        assert "halves is not one of: full, concat, sharded" in done.stderr
        assert "Traceback" not in done.stderr
        assert not server.requests
    assert not (tmp_path / "run").exists()


def test_concat_holds_every_chunk_in_one_turn(env, tmp_path, data_dir):
    lookup = chunk_lookup(data_dir)
    with FakeServer(responder=Translator(lookup)) as server:
        out = tmp_path / "run"
        done = run_cli(args(server, out, "-B", "conversation=concat", "--limit", "2"), env)
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == 2
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert list(results["by_conversation"]) == ["concat"]
    assert results["by_conversation"]["concat"]["mean"] == 1.0
    assert "degradation" not in results and results["score_by_turn"] == {}
    turn = next(t for t in records(out, "user_turn") if t["sample_id"].endswith("-concat-0"))
    assert turn["text"].count("\n- ") >= 3  # the chunks as a list


class ChunkUser:
    """A scripted user model: gives the chunk its request shows, in its own framing.
    `bad`: its first try also pastes a translation of its own ("answered_itself"), and it
    writes the turn properly when re-asked (--strict-user)."""

    def __init__(self, lookup: dict[str, str], bad: bool = False) -> None:
        self.lookup = lookup
        self.bad = bad

    def __call__(self, request: dict[str, Any]) -> str:
        reasked = len(request["messages"]) > 2
        chunk = next(k for k in self.lookup if k in request["messages"][1]["content"])
        text = f"Okay, here is the next bit:\n\n{chunk}"
        if self.bad and not reasked:
            text += f"\n\nHere is the translation: {self.lookup[chunk]}"
        return text


def user_args(server: FakeServer, user: FakeServer, out: Path, *extra: str) -> list[str]:
    return [
        *args(server, out, "--conversation", "sharded", "--limit", "2"),
        "--user-model",
        "openai/user-model",
        "--user-base-url",
        user.base_url,
        *extra,
    ]


def test_a_user_model_writes_the_sharded_turns(env, tmp_path, data_dir):
    lookup = chunk_lookup(data_dir)
    docs = documents(data_dir)[:2]
    with (
        FakeServer(responder=Translator(lookup)) as server,
        FakeServer(responder=ChunkUser(lookup)) as user,
    ):
        out = tmp_path / "run"
        done = run_cli(user_args(server, user, out), env)
        assert done.returncode == 0, done.stderr
        user_requests, model_requests = list(user.requests), list(server.requests)
    chunks = sum(len([s for s in d["shards"] if s["shard"].strip()]) for d in docs)
    assert len(user_requests) == len(model_requests) == chunks
    assert {r["model"] for r in user_requests} == {"user-model"}
    turns = records(out, "user_turn")
    assert {t["origin"] for t in turns} == {"user-model"}
    first = docs[0]
    ids = [s["shard_id"] for s in first["shards"] if s["shard"].strip()]
    mine = sorted(
        (t for t in turns if t["sample_id"] == f"{first['task_id']}-sharded-0"),
        key=lambda t: t["turn"],
    )
    assert [t["revealed"] for t in mine] == [[i] for i in ids]
    # the model under test got the user model's words; the user model the model's replies
    for answer in records(out, "answer"):
        assert answer["messages"][-1]["content"].startswith("Okay, here is the next bit:")
    later = [r for r in user_requests if "The assistant replied" in r["messages"][1]["content"]]
    assert len(later) == chunks - len(docs)
    seeds = {t["meta"]["seed"] for t in turns}
    assert {r["seed"] for r in user_requests} == seeds
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["usage"]["user"]["requests_logged"] == chunks
    assert results["provenance"]["user"]["spec"] == "openai/user-model"
    assert results["provenance"]["endpoints"]["user"] == user.base_url
    assert results["simulator"]["by_origin"] == {"user-model": chunks}
    assert results["simulator"]["conversations_with"]["answered_itself"] == 0
    # the model translates what it was given: as with templates, the first turn is perfect
    assert results["score_by_turn"]["sharded"]["1"] == 1.0


@pytest.mark.parametrize("strict", [False, True])
def test_a_user_that_answers_itself_is_counted_and_re_asked(env, tmp_path, data_dir, strict):
    lookup = chunk_lookup(data_dir)
    with (
        FakeServer(responder=Translator(lookup)) as server,
        FakeServer(responder=ChunkUser(lookup, bad=True)) as user,
    ):
        out = tmp_path / "run"
        extra = ("--limit", "1", "--strict-user") if strict else ("--limit", "1")
        done = run_cli(user_args(server, user, out, *extra), env)
        assert done.returncode == 0, done.stderr
        asked = len(user.requests)
    results = json.loads((out / "results.json").read_text("utf-8"))
    simulator = results["simulator"]
    turns = records(out, "user_turn")
    if strict:  # every turn asked again once, then kept clean
        assert asked == 2 * len(turns)
        assert simulator["reasks"] == len(turns)
        assert simulator["conversations_with"]["answered_itself"] == 0
        assert all(len(t["outputs"]) == 2 and not t["problems"] for t in turns)
        assert results["provenance"]["prompt_versions"]["user_reask"] == "user-reask-v1"
    else:
        assert asked == len(turns)
        assert simulator["conversations_with"]["answered_itself"] == 1
        assert simulator["turns_with"]["answered_itself"] == len(turns)
        assert all("answered_itself" in t["problems"] for t in turns)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--benchmark", "mt-bench", "--user-model", "openai/u"), "has no simulated user"),
        (("--strict-user",), "--strict-user is only used with --user-model"),
        (
            ("--user-model", "openai/u", "--user-api-key-env", "TB_NO_SUCH_KEY"),
            "--user-api-key-env names $TB_NO_SUCH_KEY",
        ),
    ],
)
def test_user_model_mistakes_are_refused_before_anything_is_sent(env, tmp_path, extra, message):
    with FakeServer() as server:
        command = args(server, tmp_path / "run", *extra)
        if "mt-bench" in extra:
            command += ["--judge", "openai/j", "--judge-base-url", server.base_url]
        done = run_cli(command, env)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr
        assert not server.requests
    assert not (tmp_path / "run").exists()


def test_exports_carry_conversation_type_simulation_and_seed(env, tmp_path, data_dir):
    lookup = chunk_lookup(data_dir)
    with FakeServer(responder=Translator(lookup)) as server:
        out = tmp_path / "run"
        done = run_cli(args(server, out, "--limit", "1", "--simulations", "2"), env)
        assert done.returncode == 0, done.stderr
    seeds = {t["sample_id"]: t["meta"]["seed"] for t in records(out, "user_turn")}
    exported = tmp_path / "export.jsonl"
    done = run_cli(["export", str(out), "--format", "jsonl", "--out", str(exported)], env)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in exported.read_text("utf-8").splitlines()]
    assert len(rows) == len(records(out, "answer"))
    for row in rows:
        assert row["status"] == "answered" and row["answer"]
        assert row["seed"] == seeds[row["sample_id"]]
        assert row["conversation"] in ("full", "sharded") and row["simulation"] in (0, 1)
    sharded = [r for r in rows if r["conversation"] == "sharded" and r["simulation"] == 1]
    assert [r["revealed"] for r in sharded] == [[i] for i in range(1, len(sharded) + 1)]
    table = tmp_path / "export.csv"
    done = run_cli(["export", str(out), "--format", "csv", "--out", str(table)], env)
    assert done.returncode == 0, done.stderr
    header, first = table.read_text("utf-8").splitlines()[:2]
    assert header.endswith(",conversation,simulation,seed")
    assert first.split(",")[-3:] == ["full", "0", str(seeds[rows[0]["sample_id"]])]


def test_the_report_marks_simulated_turns_and_charts_each_conversation(env, tmp_path, data_dir):
    import base64
    import re

    lookup = chunk_lookup(data_dir)
    with FakeServer(responder=Translator(lookup)) as server:
        out = tmp_path / "run"
        done = run_cli(args(server, out, "--limit", "2", "--simulations", "3"), env)
        assert done.returncode == 0, done.stderr
    report = tmp_path / "report.html"
    done = run_cli(["report", str(out), "--out", str(report)], env)
    assert done.returncode == 0, done.stderr
    page = report.read_text("utf-8")
    # every sharded turn says who wrote it and the one shard it revealed
    assert page.count("simulated user: template; shards revealed: 2<") == 2 * 3
    assert "strip plot of every conversation" in page
    assert "line chart of the mean BLEU/100 of sharded conversations" in page
    strips = [
        base64.b64decode(data).decode()
        for data in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page)
    ]
    strip = next(svg for svg in strips if "Each document" in svg)
    assert strip.count("<circle") == 2 * 3 * 2  # documents x simulations x types
    # scores are BLEU/100: the score-by-turn chart's axis ends at 1, not at 10
    by_turn = next(svg for svg in strips if "Score by turn" in svg)
    ticks = re.findall(r">(\d+(?:\.\d+)?)</text>", by_turn)
    assert "1.0" in ticks and "10" not in ticks and "8" not in ticks
    # and the summary names the conversation types held as a reader writes them
    assert "conversations_held: full, sharded" in page
