"""Issue 38, class 7: `turnbench agreement` could not read a votes file on read-only media
("unable to open database file"); and (the issue's "Also") it refused a SQLite file whose
`votes` table has exactly the columns the view issue defined (annotator, sample_id, turn,
model_a, model_b, winner and a timestamp), as a team would build from its own labelling
tool. Both through the real CLI, against a judged pairwise run; the figures expected are
worked out by hand from the votes below.

The tests may run as root, where a folder's mode does not stop a write: there, "read-only"
is checked by what a read-only reader must not do (create a -wal, -shm or -journal file
beside the votes file, or change its bytes or its time), which opening it read-write (or
read-only but not `immutable`) does.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.annotate_support import ALPACA, VICUNA, always_tie, judge_run
from tests.conftest import REPO, cli_env, run_cli, shared_data_dir

JUDGE = "openai/judge-model"
# (annotator, sample_id, turn, model_a, model_b, winner, timestamp): the sorted pair is
# (alpaca, vicuna), so "model_1" below is alpaca; the judge of the run always says tie
VOTES = [
    ("ann1", "81", 1, VICUNA, ALPACA, "tie", "2024-05-01T10:00:00Z"),
    ("ann2", "81", 1, ALPACA, VICUNA, "model_a", "2024-05-01T10:01:00Z"),  # alpaca
    ("ann1", "91", 1, VICUNA, ALPACA, "model_a", "2024-05-01T10:02:00+00:00"),  # vicuna
    ("ann2", "91", 1, ALPACA, VICUNA, "model_b", "2024-05-01T10:03:00Z"),  # vicuna
    ("ann1", "81", 2, VICUNA, ALPACA, "tie", "2024-05-01T10:04:00Z"),
    ("ann2", "81", 2, VICUNA, ALPACA, "tie (bothbad)", "2024-05-01T10:05:00Z"),
]


def expected_report() -> dict:
    """By hand. Judge vs human, turn 1: four human votes, one a tie (the judge's verdict):
    1/4; the judge's labels are all ties, so chance agreement is 1 x 1/4 = observed: kappa
    0. Turn 2: both humans tie, 2/2, kappa undefined (chance agreement 1). S2 drops every
    pair with a tie: nothing is left. Human vs human, turn 1: item 81 (tie vs alpaca)
    disagrees, item 91 (vicuna vs vicuna) agrees: 1/2; kappa over both orders: observed
    2/4, marginals tie 1/4, alpaca 1/4, vicuna 2/4, chance 6/16, kappa (1/2 - 3/8) /
    (5/8) = 0.2; S2 keeps item 91 only: 1/1. Turn 2: tie vs tie, 1/1, S2 nothing."""

    def stats(agree: int, total: int, kappa: float | None) -> dict:
        return {"agree": agree, "total": total, "rate": agree / total if total else None,
                "kappa": kappa}  # fmt: skip

    none = stats(0, 0, None)
    return {
        f"{JUDGE}|human": {
            "1": {"S1": stats(1, 4, 0.0), "S2": none},
            "2": {"S1": stats(2, 2, None), "S2": none},
        },
        "human|human": {
            "1": {"S1": stats(1, 2, 0.2), "S2": stats(1, 1, None)},
            "2": {"S1": stats(1, 1, None), "S2": none},
        },
    }


def assert_report(printed: str) -> None:
    report = json.loads(printed)
    expected = expected_report()
    assert sorted(report) == sorted(expected)
    for pair, by_turn in expected.items():
        assert sorted(report[pair]) == sorted(by_turn), pair
        for turn, setups in by_turn.items():
            for setup, stats in setups.items():
                got = report[pair][turn][setup]
                for name in ("agree", "total", "rate"):
                    assert got[name] == stats[name], (pair, turn, setup, name, got)
                if stats["kappa"] is None:
                    assert got["kappa"] is None, (pair, turn, setup, got)
                else:
                    assert got["kappa"] == pytest.approx(stats["kappa"]), (pair, turn, setup)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return cli_env(shared_data_dir(), tmp_path_factory.mktemp("agreement-env"))


@pytest.fixture(scope="module")
def pairwise_run(tmp_path_factory, env) -> Path:
    """A pairwise run of vicuna and alpaca (first MT-Bench question of each category), its
    judge calling every comparison a tie."""
    answers = tmp_path_factory.mktemp("agreement-answers")
    for model in (VICUNA, ALPACA):
        source = shared_data_dir() / f"mt_bench/model_answer/{model}.jsonl"
        (answers / f"{model}.jsonl").write_bytes(source.read_bytes())
    out = tmp_path_factory.mktemp("agreement-run") / "pairwise"
    return judge_run(env, answers, out, "--mode", "pairwise-all", responder=always_tie)


def team_table(path: Path, columns: str = "") -> Path:
    """A team's own votes table, built with plain sqlite3 as its labelling tool would."""
    columns = columns or (
        "annotator TEXT, sample_id TEXT, turn INTEGER, model_a TEXT, model_b TEXT, "
        "winner TEXT, timestamp TEXT"
    )
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE votes ({columns})")
        db.executemany("INSERT INTO votes VALUES (?, ?, ?, ?, ?, ?, ?)", VOTES)
    sqlite3.connect(path).close()
    return path


# a turnbench votes file (as `turnbench view --annotate` writes it: WAL mode); with "kill"
# the writer dies without closing, leaving its votes in the write-ahead log
_WRITER = """
import os, sys
from pathlib import Path
from turnbench.view.votes_db import NewVote, VotesDB
db = VotesDB(Path(sys.argv[1]), create=True)
for i, (who, sample, turn, a, b, winner, _) in enumerate(json.loads(sys.argv[2])):
    db.add(NewVote(annotator=who, session_id=who, item_key=f"k{i}", sample_id=sample,
                   turn=turn, model_a=a, model_b=b, winner="tie" if "tie" in winner else winner,
                   shown_left=a))
if sys.argv[3] == "kill":
    os._exit(0)
db.close()
"""


def turnbench_votes(path: Path, env: dict[str, str], how: str) -> Path:
    paths = [p for p in (env.get("PYTHONPATH", ""), str(REPO / "src")) if p]
    subprocess.run(
        [sys.executable, "-c", "import json\n" + _WRITER, str(path), json.dumps(VOTES), how],
        env={**env, "PYTHONPATH": os.pathsep.join(paths)},
        check=True,
    )
    return path


def folder_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


@pytest.fixture
def read_only(tmp_path) -> Iterator[Path]:
    """A folder to make read-only (0o555, its files 0o444); writable again afterwards."""
    folder = tmp_path / "media"
    folder.mkdir()
    yield folder
    folder.chmod(0o755)
    for path in folder.iterdir():
        path.chmod(0o644)


def make_read_only(folder: Path) -> None:
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o555)
    assert not folder.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def test_a_teams_own_votes_table_is_read_as_documented(pairwise_run, env, tmp_path):
    votes = team_table(tmp_path / "team.sqlite")
    done = run_cli(["agreement", "--votes", str(votes), "--run", str(pairwise_run), "--json"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_report(done.stdout)
    table = run_cli(["agreement", "--votes", str(votes), "--run", str(pairwise_run)], env)
    assert table.returncode == 0 and "Judge agreement" in table.stdout, table.stderr
    assert "human|human" in table.stdout and "1/2 (50.0%)" in table.stdout


def test_a_votes_table_with_other_columns_is_refused_with_the_columns_it_needs(env, tmp_path):
    votes = team_table(
        tmp_path / "other.sqlite",
        "annotator TEXT, sample_id TEXT, turn INTEGER, model_a TEXT, model_b TEXT, "
        "winner TEXT, note TEXT",
    )
    done = run_cli(["agreement", "--votes", str(votes)], env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "annotator, sample_id, turn, model_a, model_b, winner" in done.stderr
    assert "timestamp" in done.stderr


@pytest.mark.parametrize("kind", ["turnbench", "turnbench-killed", "team"])
def test_agreement_reads_a_votes_file_on_read_only_media_without_writing(
    kind, pairwise_run, env, read_only
):
    votes = read_only / "votes.sqlite"
    if kind == "team":
        team_table(votes)
    else:
        turnbench_votes(votes, env, "kill" if kind == "turnbench-killed" else "close")
    if kind == "turnbench-killed":  # the last votes are in the log the writer left
        assert (read_only / "votes.sqlite-wal").stat().st_size > 0
    make_read_only(read_only)
    before = folder_state(read_only)
    done = run_cli(["agreement", "--votes", str(votes), "--run", str(pairwise_run), "--json"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_report(done.stdout)
    # nothing was created, written or touched beside or in the votes file
    assert folder_state(read_only) == before
