"""The run directory: an append-only JSONL log that is the single source of truth.

Each finished answer or judgment is appended as one line, written with a single O_APPEND
write, the moment it completes. A process killed mid-write can leave at most a torn last
line; it is detected on the next open, reported, and cut off before anything new is
appended. Only one process may hold a run directory at a time (an advisory flock).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import ValidationError

from turnbench.errors import RunLockedError, UserError
from turnbench.judging.parsers import SCORE_RANGES
from turnbench.keys import key_matches, legacy_key, record_key, with_legacy_fields
from turnbench.types import (
    AnswerRecord,
    ConfigRecord,
    FailureRecord,
    JudgmentRecord,
    LogRecord,
)

LOG_NAME = "log.jsonl"
LOCK_NAME = ".lock"
_RECORD_TYPES = {
    "config": ConfigRecord,
    "answer": AnswerRecord,
    "judgment": JudgmentRecord,
    "failure": FailureRecord,
}

Warn = Callable[[str], None]


def parse_record(line: str) -> LogRecord:
    value = json.loads(line)
    kind = value.get("kind") if isinstance(value, dict) else None
    model = _RECORD_TYPES.get(kind)  # type: ignore[arg-type]
    if model is None:
        raise ValueError(f"unknown record kind {kind!r}")
    return model.model_validate(value)


def read_records(path: Path, warn: Warn | None = None) -> tuple[list[LogRecord], int | None]:
    """All readable records, and the byte offset of a torn last line (None if intact)."""
    if not path.exists():
        return [], None
    data = path.read_bytes()
    records: list[LogRecord] = []
    torn_at: int | None = None
    offset = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        is_last = number == len(lines)
        start = offset
        offset += len(raw) + 1
        if not raw.strip():
            continue
        try:
            records.append(parse_record(raw.decode("utf-8")))
        except (ValueError, ValidationError, UnicodeDecodeError):
            if is_last:  # no newline after it: the writer died mid-line
                torn_at = start
                if warn:
                    warn(
                        f"{path}: the last line is incomplete (the previous run was killed "
                        f"while writing); ignoring it ({len(raw)} bytes)."
                    )
            elif warn:
                warn(f"{path}:{number}: unreadable record skipped; its work will be redone.")
    return records, torn_at


class RunLog:
    """An opened, locked run directory."""

    def __init__(self, directory: Path, warn: Warn | None = None) -> None:
        self.directory = directory
        self.path = directory / LOG_NAME
        self._warn = warn
        self._lock_fd: int | None = None
        self._fd: int | None = None
        self.records: list[LogRecord] = []

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> RunLog:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(
                f"cannot create run directory {self.directory}: {error.strerror}"
            ) from None
        if not self.directory.is_dir():
            raise UserError(f"{self.directory} exists and is not a directory")
        self._acquire_lock()
        self.records, torn_at = read_records(self.path, self._warn)
        if torn_at is not None:
            with self.path.open("r+b") as handle:
                handle.truncate(torn_at)
        elif self.path.exists() and self.path.stat().st_size > 0:
            with self.path.open("rb") as handle:
                handle.seek(-1, os.SEEK_END)
                ends_cleanly = handle.read(1) == b"\n"
            if not ends_cleanly:  # a whole record whose newline was never written
                with self.path.open("ab") as handle:
                    handle.write(b"\n")
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return self

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> RunLog:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _acquire_lock(self) -> None:
        lock_path = self.directory / LOCK_NAME
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise RunLockedError(
                f"{self.directory} is in use by another turnbench process (pid {holder}); "
                "wait for it to finish or use another --out directory."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    # -- writing ---------------------------------------------------------------------------
    def append(self, record: LogRecord) -> None:
        if self._fd is None:
            raise RuntimeError("run log is not open")
        line = (record.model_dump_json(exclude_none=True) + "\n").encode("utf-8")
        view = memoryview(line)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self.records.append(record)

    def sync(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.fsync(self._fd)

    # -- reading ---------------------------------------------------------------------------
    def configs(self) -> list[ConfigRecord]:
        return [r for r in self.records if isinstance(r, ConfigRecord)]

    def iter_kind(self, kind: type) -> Iterator:
        return (r for r in self.records if isinstance(r, kind))


def _finite(*values: float | None) -> bool:
    return all(value is None or math.isfinite(value) for value in values)


def record_problem(record: AnswerRecord | JudgmentRecord) -> str | None:
    """Why a finished record cannot be trusted (None if it can): its key names other work,
    a number in it is NaN or infinite, or its score is outside its parser's range."""
    if not key_matches(record):
        return "its key does not match its fields"
    if not _finite(record.latency_s):
        return "a non-finite number"
    if isinstance(record, JudgmentRecord):
        if not _finite(record.score):
            return "a non-finite score"
        low, high = SCORE_RANGES.get(record.parser, (-math.inf, math.inf))
        if record.score is not None and not low <= record.score <= high:
            return f"score {record.score:g} is outside {record.parser}'s range {low:g}-{high:g}"
        if record.status == "scored" and (
            record.score is None and record.verdict is None and record.checklist is None
        ):
            return "scored without a score, verdict or checklist"
    return None


def completed_index(records: list[LogRecord]) -> dict[str, AnswerRecord | JudgmentRecord]:
    """key -> the latest final record (an answer, or a judgment with a final outcome).

    Keyed by the key built from each record's own fields, so a log written with the older
    key scheme resumes; a record that cannot be trusted (`record_problem`) is left out, so
    its work is done again rather than averaged in.
    """
    done: dict[str, AnswerRecord | JudgmentRecord] = {}
    for record in records:
        if isinstance(record, AnswerRecord | JudgmentRecord) and record_problem(record) is None:
            done[record_key(record)] = record
    return done


def open_failures(records: list[LogRecord]) -> dict[str, FailureRecord]:
    """Failures not followed by a success for the same work (what is still outstanding),
    each naming its work by fields (schema-1 failures get them from their key)."""
    failures: dict[str, FailureRecord] = {}
    for record in records:
        if isinstance(record, FailureRecord):
            failures[record.key] = with_legacy_fields(record)
        elif isinstance(record, AnswerRecord | JudgmentRecord):
            failures.pop(record.key, None)
            failures.pop(record_key(record), None)
            failures.pop(legacy_key(record), None)
    return failures
