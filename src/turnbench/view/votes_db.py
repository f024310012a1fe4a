"""The human votes of `turnbench view --annotate`: one SQLite file, one row per vote.

Why SQLite in WAL mode with every vote its own committed transaction: a vote is minutes of a
person's attention, so it must be on disk the moment the page reports it saved; a killed
server (SIGKILL, a closed laptop) loses nothing, and a reader (`turnbench agreement --votes
FILE.sqlite`) can read the file while the server still writes it.

The schema carries no migrations: `PRAGMA user_version` names its version, a file of another
version is refused with a clear message, and a file that is not ours (another database, a
corrupt or hostile file) is one `UserError`, never a traceback. Undo never deletes: it marks
the annotator's last vote `undone_at`, so what happened stays on record.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from turnbench.errors import UserError
from turnbench.safetext import name_problem
from turnbench.stats.vote_agreement import Score, Vote, judge_name, make_vote
from turnbench.textio import describe_validation_error

SCHEMA_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"
#: the judge name every annotator's votes are pooled under for agreement (FastChat's
#: reading of its `expert_*` annotators): human-vs-human compares different annotators
HUMAN = "human"
MAX_NAME = 200

_SCHEMA = """
CREATE TABLE votes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    annotator TEXT NOT NULL,
    session_id TEXT NOT NULL,
    item_key TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    turn INTEGER NOT NULL CHECK (turn >= 1),
    model_a TEXT,
    model_b TEXT,
    winner TEXT CHECK (winner IN ('model_a', 'model_b', 'tie')),
    model TEXT,
    score INTEGER CHECK (score BETWEEN 1 AND 10),
    shown_left TEXT,
    undone_at REAL,
    CHECK ((winner IS NOT NULL AND model_a IS NOT NULL AND model_b IS NOT NULL
            AND model IS NULL AND score IS NULL)
        OR (winner IS NULL AND model_a IS NULL AND model_b IS NULL
            AND model IS NOT NULL AND score IS NOT NULL))
);
CREATE INDEX votes_item ON votes (item_key);
CREATE INDEX votes_annotator ON votes (annotator);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
COLUMNS = (
    "id", "ts", "annotator", "session_id", "item_key", "sample_id", "turn", "model_a",
    "model_b", "winner", "model", "score", "shown_left", "undone_at",
)  # fmt: skip


class StoredVote(BaseModel):
    """One row of the votes table, validated when read: the file may be hostile."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: int
    ts: float
    annotator: str = Field(min_length=1, max_length=MAX_NAME)
    session_id: str
    item_key: str
    sample_id: str = Field(min_length=1)
    turn: int = Field(ge=1)
    model_a: str | None = None
    model_b: str | None = None
    winner: Literal["model_a", "model_b", "tie"] | None = None
    model: str | None = None
    score: int | None = Field(default=None, ge=1, le=10)
    shown_left: str | None = None
    undone_at: float | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> StoredVote:
        pairwise = self.winner is not None
        if pairwise and (self.model_a is None or self.model_b is None):
            raise ValueError("a pairwise vote needs model_a and model_b")
        if pairwise and self.model_a == self.model_b:
            raise ValueError("model_a and model_b are the same model")
        if not pairwise and (self.model is None or self.score is None):
            raise ValueError("a vote needs a winner (pairwise) or a model and a score")
        for name in (self.annotator, self.model_a, self.model_b, self.model):
            if name is not None and (problem := name_problem(name)) is not None:
                raise ValueError(f"the name {name!r} {problem}")
        return self

    @property
    def pairwise(self) -> bool:
        return self.winner is not None


@dataclass(frozen=True)
class NewVote:
    """A vote about to be stored (validated by the caller against the run's items)."""

    annotator: str
    session_id: str
    item_key: str
    sample_id: str
    turn: int
    model_a: str | None = None
    model_b: str | None = None
    winner: str | None = None
    model: str | None = None
    score: int | None = None
    shown_left: str | None = None


def is_sqlite_file(path: Path) -> bool:
    """The file starts with SQLite's header (how `agreement --votes` tells it from JSON)."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _problem(path: Path, error: Exception) -> UserError:
    return UserError(f"{path}: not a readable turnbench votes database ({error})")


class VotesDB:
    """One open votes file. `create`: make it (and its schema) if it does not exist; without
    it the file is opened read-only and must already be ours."""

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = path
        if path.exists() and not path.is_file():
            raise UserError(f"{path}: not a file (expected a votes database)")
        if not create and not path.is_file():
            raise UserError(f"{path}: no such votes database")
        if path.is_file() and path.stat().st_size and not is_sqlite_file(path):
            raise UserError(f"{path}: not a SQLite database (expected a votes database)")
        try:
            if create:
                self._db = sqlite3.connect(path, isolation_level=None)
            else:
                uri = f"file:{quote(str(path.resolve()))}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, isolation_level=None)
            self._db.execute("PRAGMA trusted_schema = OFF")
            self._prepare(create)
        except sqlite3.Error as error:
            raise _problem(path, error) from None

    def _prepare(self, create: bool) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            row[0]
            for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if version == 0 and not tables - {"sqlite_sequence"} and create:
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.executescript(
                f"BEGIN; {_SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            )
        elif version != SCHEMA_VERSION:
            raise UserError(
                f"{self.path}: not a turnbench votes database of schema {SCHEMA_VERSION} "
                f"(its user_version is {version})"
            )
        columns = tuple(row[1] for row in self._db.execute("PRAGMA table_info(votes)"))
        if columns != COLUMNS:
            raise UserError(f"{self.path}: its votes table is not turnbench's ({columns})")
        if create:
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")  # committed means on disk

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            raise _problem(self.path, error) from None

    # -- meta ------------------------------------------------------------------------------
    def meta(self, key: str, make: bool = True) -> str | None:
        """A value kept with the votes (the CSRF secret, the item order's seed): made once,
        random, so it outlives a restart of the server."""
        with self._guard():
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if row is not None:
                return str(row[0])
            if not make:
                return None
            value = secrets.token_hex(32)
            self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
            return str(
                self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0]
            )

    # -- writing ---------------------------------------------------------------------------
    def add(self, vote: NewVote) -> int:
        """Store one vote, committed before returning (autocommit: one transaction)."""
        with self._guard():
            cursor = self._db.execute(
                "INSERT INTO votes (ts, annotator, session_id, item_key, sample_id, turn, "
                "model_a, model_b, winner, model, score, shown_left) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    time.time(), vote.annotator, vote.session_id, vote.item_key,
                    vote.sample_id, vote.turn, vote.model_a, vote.model_b, vote.winner,
                    vote.model, vote.score, vote.shown_left,
                ),
            )  # fmt: skip
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def undo(self, annotator: str) -> StoredVote | None:
        """Mark the annotator's last standing vote undone (kept, with the time of the undo)."""
        with self._guard():
            row = self._db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM votes WHERE annotator = ? "
                "AND undone_at IS NULL ORDER BY id DESC LIMIT 1",
                (annotator,),
            ).fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE votes SET undone_at = ? WHERE id = ?", (time.time(), row[0]))
        return self._row(row)

    # -- reading ---------------------------------------------------------------------------
    def _row(self, row: tuple[Any, ...]) -> StoredVote:
        try:
            return StoredVote.model_validate(dict(zip(COLUMNS, row, strict=True)))
        except ValidationError as error:
            raise UserError(
                f"{self.path}: vote row {row[0]!r} is not valid "
                f"({describe_validation_error(error)})"
            ) from None

    def votes(self, *, include_undone: bool = False) -> list[StoredVote]:
        """Every standing vote (or every vote ever cast), in the order they were cast."""
        where = "" if include_undone else " WHERE undone_at IS NULL"
        with self._guard():
            rows = self._db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM votes{where} ORDER BY id"
            ).fetchall()
        return [self._row(row) for row in rows]

    def voters(self) -> dict[str, set[str]]:
        """item key -> the annotators with a standing vote on it."""
        with self._guard():
            rows = self._db.execute(
                "SELECT item_key, annotator FROM votes WHERE undone_at IS NULL"
            ).fetchall()
        found: dict[str, set[str]] = {}
        for key, annotator in rows:
            found.setdefault(str(key), set()).add(str(annotator))
        return found


# -- agreement and export ------------------------------------------------------------------
def pairwise_votes(path: Path, *, pooled: bool = True) -> list[Vote]:
    """The standing pairwise votes of a votes file as `Vote`s: every annotator under the
    judge name `human` (`pooled`, the MT-Bench paper's human-vs-human), or under their own
    name (what the FastChat export carries)."""
    database = VotesDB(path)
    try:
        stored = database.votes()
    finally:
        database.close()
    votes = []
    for vote in stored:
        if not vote.pairwise:
            continue
        assert vote.model_a is not None and vote.model_b is not None and vote.winner is not None
        judge = HUMAN if pooled else judge_name(vote.annotator)
        votes.append(
            make_vote(judge, vote.sample_id, vote.model_a, vote.model_b, vote.turn, vote.winner)
        )
    return votes


def human_scores(path: Path) -> list[Score]:
    """The standing single-grading votes of a votes file as `Score`s of the pooled humans."""
    database = VotesDB(path)
    try:
        stored = database.votes()
    finally:
        database.close()
    return [
        Score(HUMAN, vote.sample_id, vote.model, vote.turn, float(vote.score))
        for vote in stored
        if vote.model is not None and vote.score is not None
    ]


def _question_id(sample_id: str) -> int | str:
    """A numeric id as FastChat writes it (a JSON number), any other as text."""
    if sample_id.isascii() and sample_id.isdigit() and str(int(sample_id)) == sample_id:
        return int(sample_id)
    return sample_id


def fastchat_lines(path: Path) -> list[str]:
    """The standing pairwise votes in the format of FastChat's human judgments (the HF
    dataset lmsys/mt_bench_human_judgments: question_id, model_a, model_b, winner, judge,
    turn, plus tstamp), one JSON object per line; `vote_agreement.load_votes` reads it
    back to the same votes under each annotator's name."""
    database = VotesDB(path)
    try:
        stored = database.votes()
    finally:
        database.close()
    lines = []
    for vote in stored:
        if not vote.pairwise:
            continue
        row = {
            "question_id": _question_id(vote.sample_id),
            "model_a": vote.model_a,
            "model_b": vote.model_b,
            "winner": vote.winner,
            "judge": vote.annotator,
            "turn": vote.turn,
            "tstamp": vote.ts,
        }
        lines.append(json.dumps(row, ensure_ascii=False))
    return lines
