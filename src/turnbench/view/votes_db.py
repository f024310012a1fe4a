"""The human votes of `turnbench view --annotate`: one SQLite file, one row per vote.

Why SQLite in WAL mode with every vote its own committed transaction: a vote is minutes of a
person's attention, so it must be on disk the moment the page reports it saved; a killed
server (SIGKILL, a closed laptop) loses nothing, and a reader (`turnbench agreement --votes
FILE.sqlite`) can read the file while the server still writes it.

One connection per process, for its whole life. SQLite's locks are POSIX advisory locks,
which belong to a process, not to a handle: closing *any* handle a process holds on the file
drops all of them, SQLite's own included. Another process that then opens and closes the
file believes it is the last one and deletes the live `-wal` and `-shm` files, and every
vote after that lands in a deleted file. So the server opens the file once (`VotesDB`) and
every read, write and export goes through that connection; nothing else in the process
opens the file while it is open (the SQLite header is read before the connection is made).

Waits are bounded: a connection waits at most BUSY_TIMEOUT for a lock another process holds,
and a locked, full or read-only file is `VotesUnavailable` (the server answers 503 with the
reason), never a traceback.

Reading (`agreement`) opens the file read-only. A file that cannot be written (its mode, its
folder's, or a read-only mount) is read without creating or locking anything beside it:
SQLite's `immutable` mode, or, when a write-ahead log lies beside it, a private copy of both.

The schema carries no migrations: `PRAGMA user_version` names its version, a file of another
version is refused with a clear message, and a file that is not ours (another database, a
corrupt or hostile file) is one `UserError`, never a traceback. Undo never deletes: it marks
the annotator's last vote `undone_at`, so what happened stays on record. A team's own table
of pairwise votes (`votes` with exactly annotator, sample_id, turn, model_a, model_b, winner
and a timestamp column) is read too, by `agreement`.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import sqlite3
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from turnbench.errors import UserError
from turnbench.safetext import name_problem
from turnbench.stats.vote_agreement import Score, Vote, judge_name, make_vote
from turnbench.textio import describe_validation_error, open_input

SCHEMA_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"
#: the judge name every annotator's votes are pooled under for agreement (FastChat's
#: reading of its `expert_*` annotators): human-vs-human compares different annotators
HUMAN = "human"
MAX_NAME = 200
#: seconds a statement waits for a lock another process holds before it gives up (the page
#: then hears 503 "try again"): long enough for a reader's snapshot, short enough for a person
BUSY_TIMEOUT = 2.0
#: a team's own table: exactly these columns and one timestamp column of TIMESTAMP_NAMES
TEAM_COLUMNS = ("annotator", "sample_id", "turn", "model_a", "model_b", "winner")
TIMESTAMP_NAMES = ("ts", "timestamp", "tstamp", "time", "created_at", "voted_at")
# SQLite's primary result codes that say "not now" rather than "not a votes file"
_BUSY, _LOCKED, _READONLY, _IOERR, _FULL = 5, 6, 8, 10, 13

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


class VotesUnavailable(UserError):
    """The votes file cannot be used right now (locked by another process, the disk full,
    read-only): nothing was stored; the server answers 503 and the page may try again."""


def is_sqlite_file(path: Path) -> bool:
    """The file is a regular file that starts with SQLite's header (how `agreement --votes`
    tells it from JSON). Read before any connection to it is made (see the docstring)."""
    try:
        with open_input(path, None) as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except (UserError, OSError):
        return False


def _problem(path: Path, error: Exception) -> UserError:
    return UserError(f"{path}: not a readable turnbench votes database ({error})")


def _failure(path: Path, error: sqlite3.Error) -> UserError:
    """The UserError of a failed statement: VotesUnavailable when the file is there and
    ours but cannot be used now (the server answers 503), else not a votes file."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    if code in (_BUSY, _LOCKED):
        return VotesUnavailable(
            f"the votes database {path} is locked by another process (waited "
            f"{BUSY_TIMEOUT:g} s); nothing was stored, try again"
        )
    if code == _FULL:
        return VotesUnavailable(
            f"the disk of the votes database {path} is full; nothing was stored"
        )
    if code == _READONLY:
        return VotesUnavailable(f"the votes database {path} is read-only; nothing was stored")
    if code == _IOERR:
        return VotesUnavailable(f"the votes database {path} could not be written ({error})")
    return _problem(path, error)


def _cannot_write(path: Path) -> bool:
    """Whether a reader must not create anything beside `path`: the file or its folder
    has no write permission in its mode (root ignores modes: the mode is what the owner
    meant), or cannot be written by this process (a read-only mount)."""
    folder = path.resolve().parent
    try:
        modes = (path.stat().st_mode, folder.stat().st_mode)
    except OSError:
        return True
    if any(not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) for mode in modes):
        return True
    return not (os.access(path, os.W_OK) and os.access(folder, os.W_OK))


def _uri(path: Path, mode: str) -> str:
    return f"file:{quote(str(path.resolve()))}?{mode}"


def _timestamp(value: Any) -> float:
    """A team table's timestamp: Unix seconds (a finite number) or ISO 8601 text."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        with suppress(ValueError):
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
    raise ValueError(f"the timestamp {value!r} is neither Unix seconds nor ISO 8601 text")


class VotesDB:
    """One open votes file. `create`: make it (and its schema) if it does not exist, and
    write to it (the server; its one connection, usable from one thread at a time); without
    it the file is opened read-only and must already be ours, or a team's own table."""

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = path
        self._copy: tempfile.TemporaryDirectory[str] | None = None
        self._team_ts: str | None = None  # a team table's timestamp column
        if path.exists() and not path.is_file():
            raise UserError(f"{path}: not a file (expected a votes database)")
        if not create and not path.is_file():
            raise UserError(f"{path}: no such votes database")
        if path.is_file() and path.stat().st_size and not is_sqlite_file(path):
            raise UserError(f"{path}: not a SQLite database (expected a votes database)")
        self._db: sqlite3.Connection | None = None
        try:
            self._db = self._connect_writer() if create else self._connect_reader()
            self._db.execute("PRAGMA trusted_schema = OFF")
            self._prepare(create)
        except sqlite3.Error as error:
            self.close()
            raise _failure(path, error) from None
        except BaseException:
            self.close()
            raise

    def _connect_writer(self) -> sqlite3.Connection:
        return sqlite3.connect(
            self.path, isolation_level=None, timeout=BUSY_TIMEOUT, check_same_thread=False
        )

    def _connect_reader(self) -> sqlite3.Connection:
        """Read-only: beside a writing server where the file can be written (SQLite shares
        the server's write-ahead log), else without writing or locking anything."""
        if not _cannot_write(self.path):
            db = sqlite3.connect(
                _uri(self.path, "mode=ro"), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT
            )
            try:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return db
            except sqlite3.OperationalError as error:
                db.close()
                if getattr(error, "sqlite_errorcode", 0) & 0xFF not in (_READONLY, 14):
                    raise  # (14: SQLITE_CANTOPEN, what a read-only folder gives)
        return self._connect_unwritable()

    def _connect_unwritable(self) -> sqlite3.Connection:
        """A file on read-only media: opened `immutable` (no lock, no -shm made), or, when
        a write-ahead log lies beside it (a server killed before its last checkpoint), a
        private copy of the file and its log, so that its last votes are read too."""
        wal = self.path.with_name(self.path.name + "-wal")
        if not wal.is_file() or wal.stat().st_size == 0:
            return sqlite3.connect(_uri(self.path, "immutable=1"), uri=True, isolation_level=None)
        self._copy = tempfile.TemporaryDirectory(prefix="turnbench-votes-")
        copy = Path(self._copy.name) / "votes.sqlite"
        shutil.copyfile(self.path, copy)
        shutil.copyfile(wal, copy.with_name("votes.sqlite-wal"))
        return sqlite3.connect(_uri(copy, "mode=ro"), uri=True, isolation_level=None)

    def _prepare(self, create: bool) -> None:
        db = self._connection
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if version == 0 and not tables - {"sqlite_sequence"} and create:
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(f"BEGIN; {_SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")
        elif version == 0 and not create and "votes" in tables:
            self._team_ts = self._team_table()
            return
        elif version != SCHEMA_VERSION:
            raise UserError(
                f"{self.path}: not a turnbench votes database of schema {SCHEMA_VERSION} "
                f"(its user_version is {version})"
            )
        columns = tuple(row[1] for row in db.execute("PRAGMA table_info(votes)"))
        if columns != COLUMNS:
            raise UserError(f"{self.path}: its votes table is not turnbench's ({columns})")
        if create:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")  # committed means on disk

    def _team_table(self) -> str:
        """The timestamp column of a team's own votes table, which must have exactly the
        columns TEAM_COLUMNS and one of TIMESTAMP_NAMES (any order, any case)."""
        columns = [str(row[1]) for row in self._connection.execute("PRAGMA table_info(votes)")]
        named = {column.lower(): column for column in columns}
        stamps = [named[name] for name in TIMESTAMP_NAMES if name in named]
        if (
            len(columns) != len(named)
            or set(named) - set(TIMESTAMP_NAMES) != set(TEAM_COLUMNS)
            or len(stamps) != 1
        ):
            raise UserError(
                f"{self.path}: its votes table has the columns ({', '.join(columns)}); a "
                f"votes table of your own needs exactly {', '.join(TEAM_COLUMNS)} and one "
                f"timestamp column ({' or '.join(TIMESTAMP_NAMES)})"
            )
        return stamps[0]

    @property
    def _connection(self) -> sqlite3.Connection:
        assert self._db is not None
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._copy is not None:
            self._copy.cleanup()
            self._copy = None

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            raise _failure(self.path, error) from None

    # -- meta ------------------------------------------------------------------------------
    def meta(self, key: str, make: bool = True) -> str | None:
        """A value kept with the votes (the CSRF secret, the item order's seed, the item
        keys' salt): made once, random, so it outlives a restart of the server."""
        with self._guard():
            db = self._connection
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if row is not None:
                return str(row[0])
            if not make:
                return None
            value = secrets.token_hex(32)
            db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
            return str(db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])

    # -- writing ---------------------------------------------------------------------------
    def add(self, vote: NewVote) -> int:
        """Store one vote, committed before returning (autocommit: one transaction)."""
        with self._guard():
            cursor = self._connection.execute(
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

    def undo(self, annotator: str, session_id: str) -> StoredVote | None:
        """Mark the last standing vote `annotator` cast from browser session `session_id`
        undone (kept, with the time of the undo). Another session, even under the same
        name, cannot undo it."""
        with self._guard():
            db = self._connection
            row = db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM votes WHERE annotator = ? "
                "AND session_id = ? AND undone_at IS NULL ORDER BY id DESC LIMIT 1",
                (annotator, session_id),
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE votes SET undone_at = ? WHERE id = ?", (time.time(), row[0]))
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
        if self._team_ts is not None:
            return self._team_votes(self._team_ts)
        where = "" if include_undone else " WHERE undone_at IS NULL"
        with self._guard():
            rows = self._connection.execute(
                f"SELECT {', '.join(COLUMNS)} FROM votes{where} ORDER BY id"
            ).fetchall()
        return [self._row(row) for row in rows]

    def _team_votes(self, stamp: str) -> list[StoredVote]:
        """A team table's rows as votes (each validated as ours are), in timestamp order."""
        with self._guard():
            rows = self._connection.execute(
                f'SELECT rowid, "{stamp}", {", ".join(TEAM_COLUMNS)} FROM votes ORDER BY rowid'
            ).fetchall()
        found = []
        for rowid, when, annotator, sample_id, turn, model_a, model_b, winner in rows:
            try:
                if isinstance(sample_id, int) and not isinstance(sample_id, bool):
                    sample_id = str(sample_id)
                if isinstance(turn, str) and turn.isascii() and turn.isdigit():
                    turn = int(turn)
                if isinstance(winner, str) and "tie" in winner:
                    winner = "tie"  # (FastChat's "tie (bothbad)")
                vote = StoredVote.model_validate(
                    {"id": rowid, "ts": _timestamp(when), "annotator": annotator,
                     "session_id": "", "item_key": "", "sample_id": sample_id, "turn": turn,
                     "model_a": model_a, "model_b": model_b, "winner": winner}
                )  # fmt: skip
            except ValidationError as error:
                problem = describe_validation_error(error)
                raise UserError(f"{self.path}: vote row {rowid} is not valid ({problem})") from None
            except ValueError as error:
                raise UserError(f"{self.path}: vote row {rowid} is not valid ({error})") from None
            found.append(vote)
        return sorted(found, key=lambda vote: (vote.ts, vote.id))

    def standing(self) -> list[tuple[str, str, int, tuple[str, ...]]]:
        """(annotator, sample id, turn, models sorted) of every standing vote of this file
        (one query, no validation: what the server asks at every request)."""
        with self._guard():
            rows = self._connection.execute(
                "SELECT annotator, sample_id, turn, model_a, model_b, model FROM votes "
                "WHERE undone_at IS NULL"
            ).fetchall()
        return [
            (str(who), str(sample), turn, tuple(sorted(map(str, (a, b)))) if a else (str(m),))
            for who, sample, turn, a, b, m in rows
        ]

    def voters(self) -> dict[str, set[str]]:
        """item key -> the annotators with a standing vote on it."""
        with self._guard():
            rows = self._connection.execute(
                "SELECT item_key, annotator FROM votes WHERE undone_at IS NULL"
            ).fetchall()
        found: dict[str, set[str]] = {}
        for key, annotator in rows:
            found.setdefault(str(key), set()).add(str(annotator))
        return found


# -- agreement and export ------------------------------------------------------------------
def read_votes(path: Path) -> list[StoredVote]:
    """The standing votes of a votes file, read through one read-only connection."""
    database = VotesDB(path)
    try:
        return database.votes()
    finally:
        database.close()


def votes_as_pairs(stored: Iterable[StoredVote], *, pooled: bool = True) -> list[Vote]:
    """The pairwise votes among `stored` as `Vote`s: every annotator under the judge name
    `human` (`pooled`, the MT-Bench paper's human-vs-human), or under their own name (what
    the FastChat export carries)."""
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


def votes_as_scores(stored: Iterable[StoredVote]) -> list[Score]:
    """The single-grading votes among `stored` as `Score`s of the pooled humans."""
    return [
        Score(HUMAN, vote.sample_id, vote.model, vote.turn, float(vote.score))
        for vote in stored
        if vote.model is not None and vote.score is not None
    ]


def pairwise_votes(path: Path, *, pooled: bool = True) -> list[Vote]:
    """The standing pairwise votes of a votes file (see `votes_as_pairs`)."""
    return votes_as_pairs(read_votes(path), pooled=pooled)


def human_scores(path: Path) -> list[Score]:
    """The standing single-grading votes of a votes file as `Score`s of the pooled humans."""
    return votes_as_scores(read_votes(path))


def _question_id(sample_id: str) -> int | str:
    """A numeric id as FastChat writes it (a JSON number), any other as text."""
    if sample_id.isascii() and sample_id.isdigit() and str(int(sample_id)) == sample_id:
        return int(sample_id)
    return sample_id


def fastchat_lines(source: Path | Iterable[StoredVote]) -> list[str]:
    """The standing pairwise votes (of a votes file, or already read: the server passes
    its own connection's) in the format of FastChat's human judgments (the HF dataset
    lmsys/mt_bench_human_judgments: question_id, model_a, model_b, winner, judge, turn,
    plus tstamp), one JSON object per line; `vote_agreement.load_votes` reads it back to
    the same votes under each annotator's name."""
    stored = read_votes(source) if isinstance(source, Path) else source
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
