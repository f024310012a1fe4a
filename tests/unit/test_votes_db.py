"""The votes database of `turnbench view --annotate`: schema, undo, hostile files, the
FastChat export round trip, and score agreement."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import run_cli
from turnbench.errors import UserError
from turnbench.stats.vote_agreement import Score, load_votes, score_agreement
from turnbench.view.votes_db import (
    COLUMNS,
    SCHEMA_VERSION,
    NewVote,
    VotesDB,
    fastchat_lines,
    human_scores,
    pairwise_votes,
)


def pair(annotator: str, sample: str, a: str, b: str, winner: str, turn: int = 1) -> NewVote:
    key = f"{sample}-{turn}-{min(a, b)}-{max(a, b)}"
    return NewVote(annotator, "s1", key, sample, turn, model_a=a, model_b=b, winner=winner)


def test_a_new_file_is_wal_with_its_schema_version(tmp_path):
    path = tmp_path / "votes.sqlite"
    database = VotesDB(path, create=True)
    database.add(pair("ann", "81", "m1", "m2", "model_a"))
    database.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert tuple(r[1] for r in db.execute("PRAGMA table_info(votes)")) == COLUMNS
    again = VotesDB(path, create=True)  # reopening keeps the votes and the secret
    assert len(again.votes()) == 1
    assert again.meta("csrf_secret") == again.meta("csrf_secret")
    again.close()


def test_undo_marks_the_last_standing_vote_and_keeps_it(tmp_path):
    database = VotesDB(tmp_path / "v.sqlite", create=True)
    first = database.add(pair("ann", "81", "m1", "m2", "model_a"))
    database.add(pair("bob", "81", "m1", "m2", "tie"))
    second = database.add(pair("ann", "82", "m1", "m2", "model_b"))
    assert database.undo("ann", "another-session") is None  # only the session that voted
    assert database.undo("ann", "s1").id == second
    assert database.undo("ann", "s1").id == first
    assert database.undo("ann", "s1") is None
    assert [v.annotator for v in database.votes()] == ["bob"]
    every = database.votes(include_undone=True)
    assert [v.undone_at is not None for v in every] == [True, False, True]
    assert database.voters() == {"81-1-m1-m2": {"bob"}}
    database.close()


def hostile_table(path: Path, *rows: tuple) -> Path:
    """A file with our schema's columns but none of its checks, holding `rows`."""
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE votes ({', '.join(COLUMNS)})")
        db.execute("CREATE TABLE meta (key, value)")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        for row in rows:
            db.execute(f"INSERT INTO votes VALUES ({', '.join('?' * len(COLUMNS))})", row)
    return path


def sql(path: Path, statement: str) -> None:
    db = sqlite3.connect(path)
    db.execute(statement)
    db.commit()
    db.close()


def row(**changes):
    values = dict(zip(COLUMNS, (1, 1.0, "ann", "s", "k", "81", 1, "m1", "m2", "model_a",
                                None, None, None, None), strict=True))  # fmt: skip
    values.update(changes)
    return tuple(values.values())


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text('{"question_id": 1}'), "not a SQLite database"),
        (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200), "not a readable"),
        (lambda p: sql(p, "CREATE TABLE t (x)"), "user_version is 0"),
        (lambda p: sql(p, "PRAGMA user_version = 9"), "user_version is 9"),
        (lambda p: hostile_table(p, row(winner="model_c")), "vote row 1 is not valid"),
        (lambda p: hostile_table(p, row(annotator="a\x1b[2J")), "control character"),
        (lambda p: hostile_table(p, row(winner=None, model="m1", score=99)), "less than or"),
        (lambda p: hostile_table(p, row(turn="1")), "vote row 1 is not valid"),
        (lambda p: hostile_table(p, row(model_b="m1")), "same model"),
        (lambda p: p.mkdir(), "not a file"),
    ],
)
def test_a_hostile_or_corrupt_file_is_one_clear_error(tmp_path, make, message):
    path = tmp_path / "votes.sqlite"
    make(path)
    with pytest.raises(UserError, match=message):
        pairwise_votes(path)


def test_agreement_on_a_corrupt_file_exits_2_without_a_traceback(tmp_path, env):
    path = hostile_table(tmp_path / "votes.sqlite", row(score="lots"))
    done = run_cli(["agreement", "--votes", str(path), "--json"], env)
    assert done.returncode == 2
    assert "vote row 1 is not valid" in done.stderr and "Traceback" not in done.stderr
    missing = run_cli(["agreement", "--votes", str(tmp_path / "none.sqlite")], env)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_the_fastchat_export_reads_back_to_the_same_votes(tmp_path):
    path = tmp_path / "votes.sqlite"
    database = VotesDB(path, create=True)
    for vote in [
        pair("expert_0", "81", "vicuna", "alpaca", "model_a"),
        pair("alice", "81", "alpaca", "vicuna", "tie", turn=2),
        pair("bob", "007", "m1", "m2", "model_b"),  # an id with a leading zero stays text
        pair("bob", "abc", "m2", "m1", "model_a"),
    ]:
        database.add(vote)
    database.add(NewVote("bob", "s", "k", "81", 1, model="m1", score=4))  # not exported
    database.add(pair("bob", "99", "m1", "m2", "tie"))
    database.undo("bob", "s1")  # undone: not exported
    database.close()
    lines = fastchat_lines(path)
    exported = tmp_path / "human.jsonl"
    exported.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = [json.loads(line) for line in lines]
    assert [r["question_id"] for r in rows] == [81, 81, "007", "abc"]
    assert {k for r in rows for k in r} == {
        "question_id", "model_a", "model_b", "winner", "judge", "turn", "tstamp"
    }  # fmt: skip
    back = load_votes(exported)
    assert back == pairwise_votes(path, pooled=False)
    assert [v.judge for v in back] == ["human", "alice", "bob", "bob"]  # FastChat's names
    assert [v.judge for v in pairwise_votes(path)] == ["human"] * 4  # pooled
    assert [(s.model, s.score) for s in human_scores(path)] == [("m1", 4.0)]


def test_score_agreement_by_hand():
    scores = [
        Score("judge", "1", "m", 1, 8.0),
        Score("human", "1", "m", 1, 8.0),
        Score("human", "1", "m", 1, 6.0),
        Score("judge", "2", "m", 1, 3.0),
        Score("human", "2", "m", 1, 4.0),
        Score("human", "3", "m", 2, 5.0),  # no judge score, one human: compared with nothing
    ]
    report = score_agreement(scores)
    assert list(report) == ["judge|human", "human|human"]
    judge = report["judge|human"]["1"]
    assert (judge["agree"], judge["within_1"], judge["total"]) == (1, 2, 3)
    assert judge["mean_abs_diff"] == pytest.approx((0 + 2 + 1) / 3)
    assert judge["rate"] == pytest.approx(1 / 3)
    humans = report["human|human"]["1"]
    assert (humans["agree"], humans["within_1"], humans["total"]) == (0, 0, 1)
    assert humans["kappa"] == pytest.approx(-1.0)  # 8 vs 6 both ways: total disagreement
    assert "2" not in report["judge|human"]
