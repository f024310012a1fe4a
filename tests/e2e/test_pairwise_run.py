"""Pairwise MT-Bench end to end: the real CLI against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import run_cli
from turnbench.testing.fake_server import FakeServer, Reply, default_content

VICUNA, ALPACA = "vicuna-13b-v1.3", "alpaca-13b"
JUDGE = "openai/judge-model"
_SINGLE = re.compile(
    r"\[The Start of Assistant ([AB])'s Answer\]\n(.*?)\n\[The End of Assistant \1's Answer\]",
    re.S,
)
_MULTI = re.compile(
    r"<\|The Start of Assistant ([AB])'s Conversation with User\|>\n\n(.*?)\n\n"
    r"<\|The End of Assistant \1's Conversation with User\|>",
    re.S,
)


def sections(request: dict) -> tuple[int, str, str]:
    """(turn, assistant A's judged answer, assistant B's judged answer) of a judge request."""
    user = request["messages"][1]["content"]
    if "[User Question]" in user:
        found = dict(_SINGLE.findall(user))
        return 1, found["A"], found["B"]
    found = dict(_MULTI.findall(user))
    last = {side: text.rsplit(f"### Assistant {side}:\n", 1)[1] for side, text in found.items()}
    return 2, last["A"], last["B"]


def swapped(request: dict) -> str:
    """The user message of the same comparison with the two answers' positions swapped."""
    user = request["messages"][1]["content"]
    pattern = _SINGLE if "[User Question]" in user else _MULTI
    found = dict(pattern.findall(user))

    def swap(match: re.Match) -> str:
        side = match.group(1)
        other = "B" if side == "A" else "A"
        text = found[other].replace(f"### Assistant {other}:", f"### Assistant {side}:")
        whole, start = match.group(0), match.start(0)
        return whole[: match.start(2) - start] + text + whole[match.end(2) - start :]

    return pattern.sub(swap, user)


@pytest.fixture(scope="module")
def owners(data_dir: Path) -> dict[tuple[int, str], str]:
    """(turn, answer text) -> the model that wrote it, from the two answer files."""
    found: dict[tuple[int, str], set[str]] = {}
    for model in (VICUNA, ALPACA):
        for line in (data_dir / f"mt_bench/model_answer/{model}.jsonl").open():
            row = json.loads(line)
            for turn, text in enumerate(row["choices"][0]["turns"], start=1):
                found.setdefault((turn, text), set()).add(model)
    return {key: next(iter(models)) for key, models in found.items() if len(models) == 1}


def question_text(data_dir: Path, question_id: int) -> str:
    for line in (data_dir / "mt_bench/question.jsonl").open():
        row = json.loads(line)
        if row["question_id"] == question_id:
            return row["turns"][0]
    raise AssertionError(question_id)


def judge_args(answers: Path, server: FakeServer, out: Path, *extra: str) -> list[str]:
    return [
        "judge",
        "--benchmark",
        "mt-bench",
        "--answers",
        str(answers),
        "--judge",
        JUDGE,
        "--judge-base-url",
        server.base_url,
        "--out",
        str(out),
        *extra,
    ]


def results_of(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def test_pairwise_against_a_baseline(fake_server, env, tmp_path, data_dir, owners):
    out = tmp_path / "pairwise"
    answers = data_dir / "mt_bench/model_answer"
    done = run_cli(
        judge_args(answers, fake_server, out, "--mode", "pairwise", "--baseline", ALPACA), env
    )
    assert done.returncode == 0, done.stderr
    results = results_of(out)
    requests = fake_server.requests
    assert len(requests) == 320  # 80 questions x 2 turns x 1 pair x 2 orders

    # the exact judge request: [system, user], n 1, temperature 0, max_tokens 2048
    for request in requests:
        assert set(request) == {"model", "messages", "n", "temperature", "max_tokens"}
        assert (request["n"], request["temperature"], request["max_tokens"]) == (1, 0.0, 2048)
        assert [m["role"] for m in request["messages"]] == ["system", "user"]

    # every comparison was requested in both orders: (A, B) and (B, A), nothing else.
    # (Both models gave the same turn-1 answer to question 132: its two games look alike.)
    shown = Counter((r["messages"][0]["content"], r["messages"][1]["content"]) for r in requests)
    for (system, user), times in shown.items():
        mirror = swapped({"messages": [{}, {"content": user}]})
        assert times == (2 if mirror == user else 1)
        assert (system, mirror) in shown
    assert sum(times == 2 for times in shown.values()) == 1

    # recount from what the server saw and said, independently of turnbench's bookkeeping
    games: dict[frozenset, list[str]] = {}
    for request in requests:
        turn, a, b = sections(request)
        verdict = re.findall(r"\[\[([ABC])\]\]", default_content(request))[-1]
        comparison = frozenset((request["messages"][1]["content"], swapped(request)))
        if a == b:  # identical answers: the first game shows model_1 (vicuna) as A
            model_a = VICUNA if comparison not in games else ALPACA
            model_b = ALPACA if model_a == VICUNA else VICUNA
        else:
            model_a, model_b = owners[(turn, a)], owners[(turn, b)]
        winner = {"A": model_a, "B": model_b, "C": "tie"}[verdict]
        games.setdefault(comparison, []).append(winner)
    tally = Counter()
    for first, second in games.values():
        if first != second:
            tally["tie"] += 1
            tally["inconsistent"] += 1
        elif first == "tie":
            tally["tie"] += 1
        else:
            tally["win" if first == VICUNA else "loss"] += 1
    assert len(games) == 160

    assert list(results["models"]) == [VICUNA]  # the baseline gets no row
    row = results["models"][VICUNA]
    assert (row["win"], row["loss"], row["tie"], row["inconsistent"]) == (
        tally["win"],
        tally["loss"],
        tally["tie"],
        tally["inconsistent"],
    )
    assert row["win"] + row["loss"] + row["tie"] == 160
    assert row["win_rate"] == pytest.approx(row["win"] / 160)
    assert row["win_rate_adjusted"] == pytest.approx((row["win"] + 0.5 * row["tie"]) / 160)
    assert sum(row["by_turn"][t]["compared"] for t in ("1", "2")) == 160
    assert sum(c["compared"] for c in row["by_category"].values()) == 160
    assert results["position_consistency"] == pytest.approx(1 - tally["inconsistent"] / 160)
    assert sum(results["verdicts"].values()) == 320
    assert results["counts"] == {
        "expected": 320,
        "judged": 320,
        "failed": 0,
        "pending": 0,
        "reasks": 0,
        "answers": 320,
        "pairs": {
            "expected": 160,
            "compared": 160,
            "inconsistent": tally["inconsistent"],
            "excluded": 0,
            "pending": 0,
        },
    }
    assert results["complete"] is True and results["baseline"] == ALPACA
    assert results["provenance"]["judging"] == "pairwise"
    assert set(results["ratings"]["models"]) == {VICUNA, ALPACA}
    assert "position consistency" in done.stdout

    # both games are separate log records keeping the raw verdict as the judge saw it
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    pair_records = [r for r in log if r["kind"] == "judgment"]
    assert len(pair_records) == 320
    assert Counter(r["meta"]["order"] for r in pair_records) == {"AB": 160, "BA": 160}
    assert all(r["meta"]["pair"] == [VICUNA, ALPACA] for r in pair_records)
    assert {r["verdict"] for r in pair_records} <= {"A", "B", "tie"}

    # resuming sends nothing new
    again = run_cli(
        judge_args(answers, fake_server, out, "--mode", "pairwise", "--baseline", ALPACA), env
    )
    assert again.returncode == 0, again.stderr
    assert len(fake_server.requests) == 320


def test_a_judge_that_always_answers_a_is_all_inconsistent(env, tmp_path, data_dir):
    reply = "Assistant B quoted [[B]] to sway me. Assistant A is better. [[A]]"
    with FakeServer(responder=lambda request: reply) as server:
        out = tmp_path / "always-a"
        answers = data_dir / "mt_bench/model_answer"
        args = ["--mode", "pairwise-all", "--limit", "1", "--parser", "compat"]
        done = run_cli(judge_args(answers, server, out, *args), env)
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == 32
    results = results_of(out)
    # compat: FastChat's substring order reads "[[A]]" first and never re-asks
    assert results["provenance"]["prompt_versions"]["parser"] == "verdict-fastchat"
    assert results["counts"]["reasks"] == 0 and results["counts"]["failed"] == 0
    assert set(results["models"]) == {ALPACA, VICUNA}
    for row in results["models"].values():
        assert (row["win"], row["loss"], row["tie"], row["inconsistent"]) == (0, 0, 16, 16)
        assert row["win_rate"] == 0.0 and row["win_rate_adjusted"] == 0.5
    assert results["position_consistency"] == 0.0
    assert results["first_position_win_share"] == 1.0
    ratings = results["ratings"]["models"]
    assert ratings[ALPACA]["rating"] == pytest.approx(1000.0)
    assert ratings[VICUNA]["rating"] == pytest.approx(1000.0)


def test_a_consistent_judge_gives_clear_wins_and_ratings(env, tmp_path, data_dir, owners):
    def prefers_vicuna(request: dict) -> str:
        turn, a, _ = sections(request)
        return "[[A]]" if owners.get((turn, a)) == VICUNA else "[[B]]"

    with FakeServer(responder=prefers_vicuna) as server:
        out = tmp_path / "vicuna-wins"
        answers = data_dir / "mt_bench/model_answer"
        done = run_cli(
            judge_args(answers, server, out, "--mode", "pairwise-all", "--limit", "1"), env
        )
        assert done.returncode == 0, done.stderr
    results = results_of(out)
    vicuna, alpaca = results["models"][VICUNA], results["models"][ALPACA]
    assert (vicuna["win"], vicuna["loss"], vicuna["tie"]) == (16, 0, 0)
    assert (alpaca["win"], alpaca["loss"], alpaca["tie"]) == (0, 16, 0)
    assert vicuna["win_rate"] == 1.0 and alpaca["win_rate_adjusted"] == 0.0
    assert vicuna["versus"][ALPACA]["win"] == 16
    assert results["position_consistency"] == 1.0
    assert results["first_position_win_share"] == 0.5
    ratings = results["ratings"]
    assert list(ratings["models"]) == [VICUNA, ALPACA]
    assert ratings["models"][VICUNA]["rank"] == 1
    assert ratings["models"][VICUNA]["ci95"][0] > 1000 > ratings["models"][ALPACA]["ci95"][1]

    # the run's verdicts against hand-made human votes (model_a/model_b in either order)
    votes = tmp_path / "human.jsonl"
    rows = [
        (81, VICUNA, ALPACA, "model_a", 1),  # agrees with the run
        (101, VICUNA, ALPACA, "model_b", 1),  # disagrees
        (91, ALPACA, VICUNA, "tie (bothbad)", 1),  # a tie: only in S1
        (81, ALPACA, VICUNA, "model_b", 2),  # agrees
        (999, ALPACA, VICUNA, "model_b", 1),  # a question the run did not judge
    ]
    votes.write_text(
        "\n".join(
            json.dumps(
                {
                    "question_id": q,
                    "model_a": a,
                    "model_b": b,
                    "winner": w,
                    "judge": "expert_0",
                    "turn": t,
                    "conversation_a": [],
                }
            )
            for q, a, b, w, t in rows
        )
    )
    shown = run_cli(["agreement", "--votes", str(votes), "--run", str(out), "--json"], env)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert list(report) == [f"{JUDGE}|human"]
    pair = report[f"{JUDGE}|human"]
    assert {k: pair["1"]["S1"][k] for k in ("agree", "total")} == {"agree": 1, "total": 3}
    assert {k: pair["1"]["S2"][k] for k in ("agree", "total")} == {"agree": 1, "total": 2}
    assert pair["2"]["S1"]["rate"] == 1.0 and pair["2"]["S2"]["total"] == 1
    table = run_cli(["agreement", "--votes", str(votes), "--run", str(out)], env)
    assert table.returncode == 0 and f"{JUDGE}|human" in table.stdout


def test_parse_failures_are_left_out_and_request_failures_resume(env, tmp_path, data_dir, owners):
    q81, q91 = question_text(data_dir, 81), question_text(data_dir, 91)

    def responder(request: dict) -> Reply | str:
        turn, a, _ = sections(request)
        user = request["messages"][1]["content"]
        if turn == 1 and f"[User Question]\n{q81}\n" in user and owners[(1, a)] == VICUNA:
            return "I cannot decide."  # no verdict, also after the re-asks
        if turn == 1 and f"[User Question]\n{q91}\n" in user and owners[(1, a)] == ALPACA:
            return Reply(status=500)  # the BA game of question 91 fails after all retries
        return "[[A]]" if owners[(turn, a)] == VICUNA else "[[B]]"

    out = tmp_path / "faulty"
    answers = data_dir / "mt_bench/model_answer"
    args = ["--mode", "pairwise", "--baseline", ALPACA, "--limit", "1"]
    with FakeServer(responder=responder) as server:
        done = run_cli(judge_args(answers, server, out, *args, "--max-attempts", "1"), env)
        sent = len(server.requests)
        reasks = [r for r in server.requests if len(r["messages"]) == 4]
    assert done.returncode == 1, done.stderr  # incomplete: a game is pending
    assert sent == 32 + 2 and len(reasks) == 2  # re-asked twice (strict parser)
    for request in reasks:  # the judge's reply, then the fixed verdict follow-up
        assert request["messages"][2] == {"role": "assistant", "content": "I cannot decide."}
        assert '"[[C]]" for a tie' in request["messages"][3]["content"]
    results = results_of(out)
    assert results["complete"] is False
    counts = results["counts"]
    outcomes = (counts["judged"], counts["failed"], counts["pending"], counts["reasks"])
    assert outcomes == (30, 1, 1, 2)
    assert counts["pairs"] == {
        "expected": 16,
        "compared": 14,
        "inconsistent": 0,
        "excluded": 1,
        "pending": 1,
    }
    assert results["models"][VICUNA]["win"] == 14
    assert [(f["question_id"], f["turn"], f["order"]) for f in results["parse_failures"]] == [
        (81, 1, "AB")
    ]
    assert len(results["request_failures"]) == 1
    assert "Re-run the same command" in done.stdout

    with FakeServer() as healthy:
        resumed = run_cli(judge_args(answers, healthy, out, *args), env)
        assert resumed.returncode == 0, resumed.stderr
        assert len(healthy.requests) == 1  # only the pending game; the parse failure is final
    results = results_of(out)
    assert results["complete"] is True
    assert results["counts"]["pairs"]["pending"] == 0
    assert results["counts"]["pairs"]["compared"] == 15


def test_bad_requests_write_nothing(fake_server, env, tmp_path, data_dir):
    answers = data_dir / "mt_bench/model_answer"
    out = tmp_path / "never"
    wrong = run_cli(
        judge_args(answers, fake_server, out, "--mode", "pairwise", "--baseline", "gpt-4"), env
    )
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert "--baseline gpt-4 is not one of the models" in wrong.stderr
    alone = run_cli(
        judge_args(answers / f"{ALPACA}.jsonl", fake_server, out, "--mode", "pairwise-all"), env
    )
    assert alone.returncode == 2 and "at least 2 models" in alone.stderr
    missing = run_cli(judge_args(answers, fake_server, out, "--mode", "pairwise"), env)
    assert missing.returncode == 2 and "--baseline" in missing.stderr
    dry = run_cli(judge_args(answers, fake_server, out, "--mode", "pairwise-all", "--dry-run"), env)
    assert dry.returncode == 0 and "320" in dry.stdout
    assert fake_server.requests == [] and not out.exists()


def test_answers_from_an_earlier_run_directory(fake_server, env, tmp_path, data_dir):
    answers = data_dir / "mt_bench/model_answer"
    earlier = tmp_path / "earlier"
    first = run_cli(
        judge_args(answers / f"{ALPACA}.jsonl", fake_server, earlier, "--limit", "1"), env
    )
    assert first.returncode == 0, first.stderr
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "alpaca-run").symlink_to(earlier)
    (mixed / f"{VICUNA}.jsonl").symlink_to(answers / f"{VICUNA}.jsonl")
    out = tmp_path / "pairs"
    before = len(fake_server.requests)
    done = run_cli(
        judge_args(mixed, fake_server, out, "--mode", "pairwise-all", "--limit", "1"), env
    )
    assert done.returncode == 0, done.stderr
    results = results_of(out)
    assert set(results["models"]) == {ALPACA, VICUNA}
    assert len(fake_server.requests) - before == 32
    # the run's answers are the file's raw texts, and are hashed as answers, not as a log
    first_answer = json.loads((answers / f"{ALPACA}.jsonl").open().readline())
    text = first_answer["choices"][0]["turns"][0]
    assert any(text in r["messages"][1]["content"] for r in fake_server.requests[before:])
    assert len(results["provenance"]["answers_sha256"][ALPACA]) == 64
    # a run that answered fewer questions than planned is refused with a clear message
    short = run_cli(judge_args(mixed, fake_server, tmp_path / "x", "--mode", "pairwise-all"), env)
    assert short.returncode == 2 and "no complete answers for 72 planned" in short.stderr


def test_rankings_from_single_grading(fake_server, env, tmp_path, data_dir):
    out = tmp_path / "single"
    answers = data_dir / "mt_bench/model_answer"
    done = run_cli(judge_args(answers, fake_server, out, "--limit", "2"), env)
    assert done.returncode == 0, done.stderr
    results = results_of(out)
    for model in results["models"].values():
        assert set(model["by_turn_ci95"]) == {"1", "2"}
        assert len(model["by_category_ci95"]) == 8
        low, high = model["by_turn_ci95"]["1"]
        assert low <= model["by_turn"]["1"] <= high
    ranking = results["ranking"]
    assert set(ranking["models"]) == {ALPACA, VICUNA}
    assert ranking["battles"] == 32 and ranking["questions"] == 16  # 16 questions x 2 turns
    ranked = run_cli(["rank", str(out), "--json"], env)
    assert ranked.returncode == 0, ranked.stderr
    report = json.loads(ranked.stdout)
    assert report["ratings"]["models"] == ranking["models"]
    assert report["source"].startswith("single-grading")
    not_a_run = run_cli(["rank", str(tmp_path)], env)
    assert not_a_run.returncode == 2 and "not a turnbench run directory" in not_a_run.stderr
