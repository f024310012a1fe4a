"""The run directory: an append-only JSONL log that is the single source of truth.

Each finished answer or judgment is appended as one line, written with a single O_APPEND
write, the moment it completes. A process killed mid-write can leave at most a torn last
line; it is detected on the next open, reported, and cut off before anything new is
appended. Only one process may hold a run directory at a time: an advisory lock on `.lock`
(flock on Linux and macOS, a locked byte range through msvcrt on Windows).

Both files are opened without following a symbolic link and must be regular files with a
single name: a link planted in a run directory must not make a resume truncate, overwrite or
append to the file it points to. The first line of a log is the run's config record (its
identity, which the drift guard checks on resume); when it cannot be read the log is refused
instead of being resumed under unknown settings.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import Field, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from turnbench.errors import RunDirectoryError, RunLockedError
from turnbench.journal.logindex import (  # noqa: F401  (re-exported: where readers import them from)
    LogIndex,
    completed_index,
    open_failures,
    record_problem,
)
from turnbench.record_keys import config_key, end_key
from turnbench.safetext import fix_tree, may_hold_surrogates
from turnbench.types import (
    AnswerRecord,
    AttemptRecord,
    BatchRecord,
    ConfigRecord,
    EndRecord,
    FailureRecord,
    JudgmentRecord,
    LogRecord,
    ReplyRecord,
    SampleRecord,
    StepRecord,
    UserTurnRecord,
)

LOG_NAME = "log.jsonl"
LOCK_NAME = ".lock"
_RECORD_TYPES = {
    "config": ConfigRecord,
    "answer": AnswerRecord,
    "judgment": JudgmentRecord,
    "failure": FailureRecord,
    "attempt": AttemptRecord,
    "batch": BatchRecord,
    "end": EndRecord,
    "user_turn": UserTurnRecord,
    "step": StepRecord,
    "sample": SampleRecord,
    "reply": ReplyRecord,
}

Warn = Callable[[str], None]
Sink = Callable[[LogRecord, int, int], None]  # (record, byte offset of its line, line length)


def serialize(record: LogRecord) -> bytes:
    """One record as one UTF-8 line. Text is made safe where it enters, but a lone
    surrogate that slipped through (an API caller's own answers, say) must not crash the
    writer: it becomes U+FFFD."""
    try:
        return record.__pydantic_serializer__.to_json(record, exclude_none=True) + b"\n"
    except (PydanticSerializationError, UnicodeEncodeError):
        value = fix_tree(record.model_dump(mode="json", exclude_none=True))
        return (json.dumps(value, ensure_ascii=False) + "\n").encode("utf-8")


def parse_record(line: str) -> LogRecord:
    """One log line as its record; a lone surrogate in it (a valid JSON escape no UTF-8 can
    encode, which an older version or another hand may have written) is read as U+FFFD, as
    text is where it enters, so no reader (a page, a report, results.json) meets one."""
    value = json.loads(line)
    if may_hold_surrogates(line):
        value = fix_tree(value)
    kind = value.get("kind") if isinstance(value, dict) else None
    model = _RECORD_TYPES.get(kind)  # type: ignore[arg-type]
    if model is None:
        raise ValueError(f"unknown record kind {kind!r}")
    return model.model_validate(value)


_RECORD_ADAPTER: TypeAdapter[LogRecord] = TypeAdapter(
    Annotated[
        ConfigRecord
        | AnswerRecord
        | JudgmentRecord
        | FailureRecord
        | AttemptRecord
        | BatchRecord
        | EndRecord
        | UserTurnRecord
        | StepRecord
        | SampleRecord
        | ReplyRecord,
        Field(discriminator="kind"),
    ]
)


def parse_record_bytes(raw: bytes) -> LogRecord:
    """One log line as its record. pydantic's own JSON parser first (several times faster
    than json.loads and validating); a line it refuses is tried again with the standard
    library's, which also reads what older versions could write (an escaped lone surrogate),
    so both accept exactly the same lines."""
    try:
        return _RECORD_ADAPTER.validate_json(raw)
    except ValidationError:
        return parse_record(raw.decode("utf-8"))


# -- opening files safely -------------------------------------------------------------------
# Module attributes so tests can take the code paths of systems without these flags (Windows).
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)  # a planted FIFO must not hang open()
_O_BINARY: int = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
_LINK_ERRNOS = {errno.ELOOP, errno.EMLINK}  # EMLINK: FreeBSD's answer to O_NOFOLLOW on a link


def _what_it_is(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _link_error(path: Path) -> RunDirectoryError:
    return RunDirectoryError(
        f"{path} is a symbolic link; turnbench does not follow links inside a run directory "
        "(a resume would write to the file it points to). Remove the link or use another "
        "run directory."
    )


def _os_error(path: Path, action: str, error: OSError) -> RunDirectoryError:
    reason = error.strerror or str(error)
    if error.errno == errno.ENOSPC:
        reason += " (the disk is full)"
    return RunDirectoryError(f"cannot {action} {path}: {reason}")


def open_regular(path: Path, flags: int, *, missing_ok: bool = False) -> int | None:
    """Open `path` without following a symbolic link; refuse anything but a regular file.

    With O_NOFOLLOW (Linux, macOS, BSD) the kernel refuses a link as the last component.
    Without it (Windows) the path is checked with lstat before opening and the opened file
    compared with lstat after: a link in place, or swapped in meanwhile, is refused before a
    byte is written. A file with several hard links is refused as well: writing to it would
    change the other names too. Returns None for a missing file when `missing_ok`.
    """
    if not _O_NOFOLLOW:
        try:
            before = os.lstat(path)
        except FileNotFoundError:
            before = None
        except OSError as error:
            raise _os_error(path, "open", error) from None
        if before is not None and stat.S_ISLNK(before.st_mode):
            raise _link_error(path)
    try:
        fd = os.open(path, flags | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY, 0o644)
    except FileNotFoundError as error:
        if missing_ok:
            return None
        raise _os_error(path, "open", error) from None
    except OSError as error:
        if error.errno in _LINK_ERRNOS or os.path.islink(path):
            raise _link_error(path) from None
        if error.errno == errno.EISDIR:
            raise RunDirectoryError(
                f"{path} is a directory; turnbench expected a file there"
            ) from None
        raise _os_error(path, "open", error) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RunDirectoryError(
                f"{path} is {_what_it_is(info.st_mode)}; turnbench expected a regular file there"
            )
        if info.st_nlink > 1:
            raise RunDirectoryError(
                f"{path} has {info.st_nlink} hard links; turnbench writes only to a file with a "
                "single name (copy it to break the link)"
            )
        if not _O_NOFOLLOW:
            after = os.lstat(path)
            if stat.S_ISLNK(after.st_mode) or not os.path.samestat(after, info):
                raise _link_error(path)
        if _O_NONBLOCK:
            os.set_blocking(fd, True)
    except OSError as error:
        os.close(fd)
        raise _os_error(path, "open", error) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


# -- the run's lock ----------------------------------------------------------------------------
class _FileLock(Protocol):
    """A non-blocking exclusive lock on an open file, released on close or process exit."""

    def try_acquire(self, fd: int) -> bool:
        """True when locked; False when another holder has it. Other failures raise OSError."""

    def release(self, fd: int) -> None: ...


class _FlockLock:
    """POSIX (Linux, macOS): flock on the whole file."""

    def __init__(self) -> None:
        import fcntl

        self._fcntl = fcntl

    def try_acquire(self, fd: int) -> bool:
        try:
            self._fcntl.flock(fd, self._fcntl.LOCK_EX | self._fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def release(self, fd: int) -> None:
        self._fcntl.flock(fd, self._fcntl.LOCK_UN)


# Windows locks are mandatory: a locked range cannot be read by others. The lock is taken on
# one byte far past the holder's pid (bytes 0-63) so a refused process can still name it.
_WINDOWS_LOCK_OFFSET = 1 << 20
_WINDOWS_BUSY_ERRNOS = {errno.EACCES, errno.EAGAIN, getattr(errno, "EDEADLOCK", errno.EDEADLK)}


class _MsvcrtLock:
    """Windows: msvcrt.locking on one byte of the lock file, never blocking."""

    def __init__(self) -> None:
        import msvcrt

        self._msvcrt = msvcrt

    def try_acquire(self, fd: int) -> bool:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            self._msvcrt.locking(fd, self._msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError as error:
            if error.errno in _WINDOWS_BUSY_ERRNOS:
                return False
            raise
        return True

    def release(self, fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        self._msvcrt.locking(fd, self._msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]


def _platform_lock(os_name: str = os.name) -> _FileLock:
    """The lock of this system, chosen when a run directory is opened (not at import: the
    module imports everywhere)."""
    return _MsvcrtLock() if os_name == "nt" else _FlockLock()


# -- reading -----------------------------------------------------------------------------------
# A line that says it is a config record (an unescaped `"kind": "config"`), however damaged.
_CLAIMS_CONFIG = re.compile(rb'(?<!\\)"kind"\s*:\s*"config"')
_BOM = b"\xef\xbb\xbf"


def _claims_config(raw: bytes) -> bool:
    return bool(_CLAIMS_CONFIG.search(raw))


#: what a record kind may be called (a kind outside it is damage, not a newer record)
_KIND_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _unknown_kind(raw: bytes) -> str | None:
    """The kind of a whole, well-formed JSON record whose `kind` this version does not know
    (a newer version's record: readers ignore it), else None (damage, or a known kind whose
    fields are wrong: reported as unreadable)."""
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    kind = value.get("kind") if isinstance(value, dict) else None
    if not isinstance(kind, str) or kind in _RECORD_TYPES or not _KIND_NAME.fullmatch(kind):
        return None
    return kind


def _identity_error(path: Path, number: int, raw: bytes) -> RunDirectoryError:
    why = (
        "it starts with a UTF-8 byte order mark (was the file saved by an editor?)"
        if number == 1 and raw.startswith(_BOM)
        else "the line is not a valid config record"
    )
    return RunDirectoryError(
        f"{path}:{number}: the run's config record cannot be read: {why}. The settings the "
        "records of this run were made with are unknown, so it is not resumed or reported. "
        "Repair that line or start a new run in another directory."
    )


class _Scanner:
    """Reads a log line by line, never holding more than one chunk and one line.

    Each readable record goes to `sink(record, offset, length)` (its byte offset and line
    length, so a reader can fetch it again later); the rules are those of the whole log:
    the first line must be a config record, a record before any config is refused, a damaged
    line claiming to be a config refuses the log, another damaged line is skipped with a
    warning, and a damaged last line without a newline is torn (reported by `torn_at`).
    """

    CHUNK = 1 << 20

    def __init__(self, path: Path, warn: Warn | None, sink: Sink, *, identity: bool = True) -> None:
        self.path = path
        self.warn = warn
        self.sink = sink
        self.identity = identity  # apply the run-identity rules (off: read what is there)
        self.torn_at: int | None = None
        self.number = 0
        self.seen_line = False
        self.seen_config = False
        self.size = 0  # bytes read
        self.last_byte = b""
        self.unknown: dict[str, int] = {}  # records of kinds this version does not know

    def scan(self, fd: int, start: int = 0, end: int | None = None) -> _Scanner:
        """Read the lines from byte `start` to `end` (default: the end of the file); both
        must be where a line starts (`continue_from` prepares a scanner for a later part)."""
        return self._scan(fd, start, end)

    def continue_from(self, fd: int, start: int) -> None:
        """Read from `start` on as the continuation of a log whose part before it was read
        and checked elsewhere (its config came first): lines are numbered on from there."""
        self.seen_line = self.seen_config = True
        self.number = _lines_before(fd, start, self.path)

    def _scan(self, fd: int, begin: int, stop: int | None) -> _Scanner:
        try:
            os.lseek(fd, begin, os.SEEK_SET)
            pending: list[bytes] = []
            offset = begin  # where the first pending piece starts
            left = -1 if stop is None else stop - begin  # bytes still to read (-1: to the end)
            while left and (
                chunk := os.read(fd, min(left, self.CHUNK) if left > 0 else self.CHUNK)
            ):
                if left > 0:
                    left -= len(chunk)
                self.size += len(chunk)
                self.last_byte = chunk[-1:]
                start = 0
                while (end := chunk.find(b"\n", start)) != -1:
                    piece = chunk[start:end]
                    raw = b"".join((*pending, piece)) if pending else piece
                    pending = []
                    self._line(raw, offset, is_last=False)
                    offset += len(raw) + 1
                    start = end + 1
                if start < len(chunk):
                    pending.append(chunk[start:])
        except OSError as error:
            raise _os_error(self.path, "read", error) from None
        if pending:
            self._line(b"".join(pending), offset, is_last=True)
        if self.unknown and self.warn:
            counted = ", ".join(f"{count} {kind!r}" for kind, count in sorted(self.unknown.items()))
            self.warn(
                f"{self.path}: ignored records of kinds this version of turnbench does not "
                f"know ({counted}); a newer version wrote them"
            )
        return self

    def _line(self, raw: bytes, start: int, *, is_last: bool) -> None:
        self.number += 1
        if raw[:1] != b"{" and not raw.strip():  # (a record starts with "{": no copy made)
            return
        first, self.seen_line = not self.seen_line, True
        try:
            record = parse_record_bytes(raw)
        except (ValueError, ValidationError, UnicodeDecodeError):
            kind = _unknown_kind(raw)
            if kind is not None:  # a record a newer turnbench wrote: ignored, said once
                self.unknown[kind] = self.unknown.get(kind, 0) + 1
                return
            if is_last:  # no newline after it: the writer died mid-line; nothing follows it
                self.torn_at = start
                if self.warn:
                    self.warn(
                        f"{self.path}: the last line is incomplete (the previous run was killed "
                        f"while writing); ignoring it ({len(raw)} bytes)."
                    )
            elif self.identity and (first or _claims_config(raw)):
                raise _identity_error(self.path, self.number, raw) from None
            elif self.warn:
                self.warn(
                    f"{self.path}:{self.number}: unreadable record skipped; its work will be "
                    "redone."
                )
            return
        if isinstance(record, ConfigRecord):
            self.seen_config = True
        elif not self.seen_config and self.identity:
            raise RunDirectoryError(
                f"{self.path}:{self.number}: this {record.kind} record comes before any config "
                "record; the settings it was made with are unknown, so this run is not resumed "
                "or reported."
            )
        self.sink(record, start, len(raw))


def scan_records(
    path: Path,
    sink: Sink,
    warn: Warn | None = None,
    *,
    start: int = 0,
    end: int | None = None,
) -> int | None:
    """Feed every readable record of the log at `path` to `sink(record, offset, length)`,
    in order, without holding the log in memory; returns the torn last line's offset (None
    if intact). A missing log has no records. Refusals as `read_records`.

    `start`/`end` (each where a line starts, see `line_start_near`): only that part, for a
    log read in parts on several cores; a part from `start` > 0 on is read as the rest of
    a log whose earlier part was read and checked already (it need not begin with a config,
    and its lines are numbered as in the whole file)."""
    fd = open_regular(path, os.O_RDONLY, missing_ok=True)
    if fd is None:
        return None
    try:
        scanner = _Scanner(path, warn, sink)
        if start:
            scanner.continue_from(fd, start)
        return scanner.scan(fd, start, end).torn_at
    finally:
        os.close(fd)


def line_start_near(path: Path, offset: int) -> int | None:
    """Where the first line that starts after byte `offset` of the log starts (None: no
    whole line starts there before the last byte)."""
    fd = open_regular(path, os.O_RDONLY, missing_ok=True)
    if fd is None:
        return None
    try:
        os.lseek(fd, offset, os.SEEK_SET)
        position = offset
        while chunk := os.read(fd, 1 << 16):
            newline = chunk.find(b"\n")
            if newline != -1:
                found = position + newline + 1
                return found if found < os.fstat(fd).st_size else None
            position += len(chunk)
        return None
    except OSError as error:
        raise _os_error(path, "read", error) from None
    finally:
        os.close(fd)


def _lines_before(fd: int, end: int, path: Path) -> int:
    """The number of newlines in the first `end` bytes of the file."""
    count = 0
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while end > 0 and (chunk := os.read(fd, min(end, 1 << 20))):
            count += chunk.count(b"\n")
            end -= len(chunk)
    except OSError as error:
        raise _os_error(path, "read", error) from None
    return count


def read_records(path: Path, warn: Warn | None = None) -> tuple[list[LogRecord], int | None]:
    """All readable records, and the byte offset of a torn last line (None if intact).

    A missing log has no records. A link, a non-regular file or an unreadable config record
    raises RunDirectoryError; an unreadable record that is not the run's config is skipped with a
    warning (its work is redone); a torn last line is reported through its offset. This
    holds every record, prompts included: readers of large logs use `scan_records`.
    """
    records: list[LogRecord] = []
    torn_at = scan_records(path, lambda record, _offset, _length: records.append(record), warn)
    return records, torn_at


def config_record(started: float, config: dict[str, Any], schema_version: int) -> ConfigRecord:
    """The record that opens an invocation: its start, the settings, a key of its own."""
    from turnbench import __version__

    started = round(started, 3)
    return ConfigRecord(
        key=config_key(started, secrets.token_hex(6)),
        ts=started,
        turnbench_version=__version__,
        schema_version=schema_version,
        config=config,
    )


class RunLog:
    """An opened, locked run directory."""

    def __init__(self, directory: Path, warn: Warn | None = None) -> None:
        self.directory = directory
        self.path = directory / LOG_NAME
        self._warn = warn
        self._lock_fd: int | None = None
        self._lock: _FileLock | None = None
        self._fd: int | None = None
        self._write_failed: str | None = None
        self._size = 0  # bytes in the log (we are its only writer while we hold the lock)
        self.index = LogIndex()  # what the log holds, folded; the records are not kept

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> RunLog:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunDirectoryError(
                f"cannot create run directory {self.directory}: {error.strerror}"
            ) from None
        if not self.directory.is_dir():
            raise RunDirectoryError(f"{self.directory} exists and is not a directory")
        self._acquire_lock()
        try:
            self._open_log()
        except BaseException:
            self.close()
            raise
        return self

    def _open_log(self) -> None:
        """Open the log once (read and append through the same descriptor, so the file read
        is the file written), fold it into the index line by line and repair its end."""
        self._fd = open_regular(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        assert self._fd is not None
        index = LogIndex()
        scanner = _Scanner(self.path, self._warn, lambda record, _o, _n: index.add(record))
        scanner.scan(self._fd)
        self.index = index
        self._size = scanner.size
        try:
            if scanner.torn_at is not None:  # cut off before anything new is appended
                os.ftruncate(self._fd, scanner.torn_at)
                self._size = scanner.torn_at
            elif scanner.size and scanner.last_byte != b"\n":  # a whole record lost its newline
                os.write(self._fd, b"\n")
                self._size += 1
        except OSError as error:
            raise _os_error(self.path, "repair the end of", error) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            if self._lock is not None:
                with contextlib.suppress(OSError):
                    self._lock.release(self._lock_fd)
            os.close(self._lock_fd)
            self._lock_fd = None
            self._lock = None

    def __enter__(self) -> RunLog:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _acquire_lock(self) -> None:
        lock_path = self.directory / LOCK_NAME
        fd = open_regular(lock_path, os.O_RDWR | os.O_CREAT)
        assert fd is not None
        try:
            lock = _platform_lock()
            if not lock.try_acquire(fd):
                os.lseek(fd, 0, os.SEEK_SET)
                holder = os.read(fd, 64).strip()  # file content: only digits are shown
                shown = holder.decode("ascii") if holder.isdigit() else "unknown"
                raise RunLockedError(
                    f"{self.directory} is in use by another turnbench process (pid {shown}); "
                    "wait for it to finish or use another --out directory."
                )
        except OSError as error:
            os.close(fd)
            raise _os_error(lock_path, "lock", error) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, str(os.getpid()).encode())
        except OSError as error:
            with contextlib.suppress(OSError):
                lock.release(fd)
            os.close(fd)
            raise _os_error(lock_path, "write", error) from None
        self._lock_fd, self._lock = fd, lock

    # -- writing ---------------------------------------------------------------------------
    def append(self, record: LogRecord) -> None:
        """Append one record as one line. If the write fails (disk full, quota, I/O error) the
        part already written is cut off again, the failure is raised as RunDirectoryError, and every
        later append is refused: the log keeps only whole lines, so nothing logged is lost and
        the next record can never be glued onto half a line."""
        if self._fd is None:
            raise RuntimeError("run log is not open")
        if self._write_failed is not None:
            raise RunDirectoryError(self._write_failed)
        line = serialize(record)
        view = memoryview(line)
        start = self._size  # we are the only writer (we hold the lock)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as error:
            self._write_failed = self._after_failed_write(start, error)
            raise RunDirectoryError(self._write_failed) from None
        except BaseException:
            self._write_failed = f"an earlier write to {self.path} was interrupted"
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            raise
        self._size = start + len(line)
        self.index.add(record, start, len(line))

    def _after_failed_write(self, start: int, error: OSError) -> str:
        message = _os_error(self.path, "append to", error).message
        try:
            os.ftruncate(self._fd, start)  # type: ignore[arg-type]
        except OSError:
            return (
                f"{message}. The records logged before are kept; the incomplete last line "
                "is cut off when you re-run the same command to resume."
            )
        return (
            f"{message}. The records logged before are kept; fix the cause and re-run the "
            "same command to resume."
        )

    def end_invocation(self, status: str) -> float:
        """Record that this invocation ends now (`EndRecord`) and return that time, which its
        results report. Best effort: a log that can no longer be written still gets its
        results, and a later invocation then counts this one's time to its last record."""
        ended = round(time.time(), 3)
        configs = self.index.configs
        record = EndRecord(key=end_key(configs[-1].key) if configs else "", status=status, ts=ended)
        with contextlib.suppress(RunDirectoryError):
            self.append(record)
        return ended

    def sync(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.fsync(self._fd)

    # -- reading ---------------------------------------------------------------------------
    def configs(self) -> list[ConfigRecord]:
        return list(self.index.configs)

    @property
    def records(self) -> list[LogRecord]:
        """Every readable record, read again from the file (tests and small logs; a large
        log is read through `index` or `scan_records`, never held whole)."""
        records: list[LogRecord] = []
        fd = open_regular(self.path, os.O_RDONLY, missing_ok=True)
        if fd is None:
            return records
        try:
            sink: Sink = lambda record, _offset, _length: records.append(record)  # noqa: E731
            _Scanner(self.path, None, sink, identity=False).scan(fd)
        finally:
            os.close(fd)
        return records

    def iter_kind(self, kind: type) -> Iterator:
        return (r for r in self.records if isinstance(r, kind))
