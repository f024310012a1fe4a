"""The run directories under the served folders, and their live state, read cheaply.

A run that is being written has no results.json yet (it is written when the invocation
ends), so what the runs page shows while a run works comes from its log: each directory
keeps a `LogTail` that remembers how far the log was read and reads only what was appended
since: every byte of a log is read once. A last line without its newline yet is kept (at
most MAX_LINE_BYTES of it: a longer line keeps its start, which holds its kind and key) and
finished when its newline arrives, so a huge unterminated line is not read again at every
poll. Only the `kind` and `key` of answers and judgments are taken from a line (the writer
puts them first), so a poll of a large log that grew by a few lines costs a few lines.

A run directory may hold anything: every number shown from it (results.json's overall and
interval, counts, costs, times) is checked (`_clean`: not finite, or no number where one is
expected, shows as absent), a results file larger than MAX_RESULTS_BYTES or nested too deep is
not read, and a results file is parsed again only when it changed.

Nothing here writes: files are opened read-only, links are never followed.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from turnbench.errors import RunDirectoryError
from turnbench.journal.runlog import LOCK_NAME, LOG_NAME, open_regular
from turnbench.report.markup import finite_number
from turnbench.store.resultsfile import RESULTS_NAME
from turnbench.store.runfiles import AUDIT_NAME
from turnbench.textio import NestingError, loads_json

MAX_DEPTH = 12  # folders below a served directory that are searched for runs
# (matched at a line's start; the key's string "unrolled": runs of plain bytes between
# escapes, twice as quick as one byte per alternation over a 180 MB log)
_HEAD = re.compile(rb'\{"kind":"(\w+)","key":("[^"\\]*(?:\\.[^"\\]*)*")')
READ_CHUNK = 1 << 20
#: the most of one log line kept while its newline has not arrived (a config record is a
#: few kilobytes; an answer's line can be any length, but only its start, kind and key, is
#: read); the rest of a longer line is skipped
MAX_LINE_BYTES = 4 << 20
#: results.json and audit.json larger than this are not read (a real one is kilobytes to a
#: few megabytes; it would be parsed for every look at the runs)
MAX_RESULTS_BYTES = 64 << 20
_KEYED = (b"answer", b"judgment", b"failure")  # the kinds counted by their key


@dataclass
class _JsonFile:
    """A small JSON object file of a run directory, parsed again only when it changed.
    One read at a time: the server's threads and the cache warmer share it, and a reader
    must never see the new file's state beside the value of no file (a finished run would
    be shown as one without results while another thread parses them)."""

    path: Path
    state: tuple[int, int, int] | None = None  # (inode, size, mtime) when last parsed
    value: dict[str, Any] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def read(self) -> dict[str, Any] | None:
        """The object, or None (missing, a link, not a regular file, too large, unreadable,
        malformed or too deep, not an object)."""
        with self.lock:
            return self._read()

    def _read(self) -> dict[str, Any] | None:
        try:
            fd = open_regular(self.path, os.O_RDONLY, missing_ok=True)
        except (RunDirectoryError, OSError):  # a link or not a regular file
            fd = None
        if fd is None:
            self.state, self.value = None, None
            return None
        try:
            info = os.fstat(fd)
            state = (info.st_ino, info.st_size, info.st_mtime_ns)
            if state == self.state:
                return self.value
            self.state, self.value = state, None
            if info.st_size <= MAX_RESULTS_BYTES:
                with os.fdopen(os.dup(fd), "rb") as handle:
                    value = loads_json(handle.read(MAX_RESULTS_BYTES + 1).decode("utf-8"))
                self.value = value if isinstance(value, dict) else None
        except (OSError, ValueError, NestingError):  # (UnicodeDecodeError is a ValueError)
            self.value = None
        finally:
            os.close(fd)
        return self.value


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns)


@dataclass
class LogTail:
    """What a run's log holds so far, read incrementally, each byte once."""

    path: Path
    offset: int = 0  # bytes read so far (those of an unfinished last line included)
    answers: set[str] = field(default_factory=set)
    judgments: set[str] = field(default_factory=set)
    failures: set[str] = field(default_factory=set)
    config: dict[str, Any] | None = None
    first_ts: float | None = None
    last_ts: float | None = None
    ended: bool = False  # the last invocation wrote its end record
    unreadable: int = 0
    inode: int | None = None
    #: the start of the last line, read before its newline arrived (at most MAX_LINE_BYTES)
    partial: bytearray = field(default_factory=bytearray, repr=False)
    partial_cut: bool = False  # the last line is longer than what `partial` keeps
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def poll(self) -> None:
        """Read what was appended since the last poll (a shorter or replaced log: again).
        One poll at a time (the server's threads and the cache warmer share the tail)."""
        with self.lock:
            self._poll()

    def _poll(self) -> None:
        try:
            info = self.path.lstat()
        except OSError:
            return
        if info.st_ino != self.inode or info.st_size < self.offset:
            self._restart(info.st_ino)
        if info.st_size == self.offset:
            return
        try:
            fd = open_regular(self.path, os.O_RDONLY, missing_ok=True)
        except (RunDirectoryError, OSError):  # a link or not a regular file
            return
        if fd is None:
            return
        try:
            os.lseek(fd, self.offset, os.SEEK_SET)
            while chunk := os.read(fd, READ_CHUNK):
                self.offset += len(chunk)
                self._chunk(chunk)
        except OSError:
            pass
        finally:
            os.close(fd)

    def _chunk(self, chunk: bytes) -> None:
        """The lines a chunk ends and begins; what follows its last newline is kept."""
        start = 0
        if self.partial or self.partial_cut:
            first = chunk.find(b"\n")
            if first == -1:
                self._keep(chunk)
                return
            self._keep(chunk[:first])
            self._finish_partial()
            start = first + 1
        end = chunk.rfind(b"\n")
        if end >= start:
            self._lines(chunk, start, end)
            start = end + 1
        self._keep(chunk[start:])

    def _keep(self, data: bytes) -> None:
        """Add the start of an unfinished line to `partial`, up to MAX_LINE_BYTES."""
        room = MAX_LINE_BYTES - len(self.partial)
        if len(data) > room:
            self.partial_cut = True
        self.partial += data[: max(room, 0)]

    def _finish_partial(self) -> None:
        """The last line got its newline: read it (a cut line by its start only)."""
        raw, cut = bytes(self.partial), self.partial_cut
        self.partial, self.partial_cut = bytearray(), False
        if not cut:
            self._line(raw)
            return
        head = _HEAD.match(raw)
        if head is not None and head.group(1) in _KEYED:
            self._keyed(head)
        else:
            self.unreadable += 1  # (a config or end record too long to keep)

    def _restart(self, inode: int) -> None:
        self.offset, self.unreadable, self.inode = 0, 0, inode
        self.partial, self.partial_cut = bytearray(), False
        self.answers, self.judgments, self.failures = set(), set(), set()
        self.config, self.first_ts, self.last_ts, self.ended = None, None, None, False

    def _lines(self, data: bytes, pos: int, end: int) -> None:
        """The lines of data[pos:end] (data[end] is a newline), read in place: a line is
        copied out only when it is no answer, judgment or failure (a config, an end, a
        damaged line), so a poll of a large log copies a few lines, not the log."""
        match, find = _HEAD.match, data.find
        while pos <= end:
            newline = find(b"\n", pos, end + 1)
            head = match(data, pos, newline)
            if head is None or head.group(1) not in _KEYED:
                self._line(data[pos:newline])
            else:
                self._keyed(head)
            pos = newline + 1

    def _line(self, raw: bytes) -> None:
        if not raw.strip():
            return
        head = _HEAD.match(raw)
        if head is None:
            self.unreadable += 1
        elif head.group(1) in _KEYED:
            self._keyed(head)
        elif self._key(head) is not None:
            self._other(head.group(1).decode("ascii"), raw)

    def _key(self, head: re.Match[bytes]) -> str | None:
        """The line's key (None, counted unreadable, when it is no JSON string)."""
        try:  # (pydantic's JSON parser first, quicker for one short string; json.loads
            # reads what it refuses, an escaped lone surrogate, as the tail always did)
            return str(from_json(head.group(2)))
        except ValueError:
            try:
                return str(json.loads(head.group(2)))
            except ValueError:
                self.unreadable += 1
                return None

    def _keyed(self, head: re.Match[bytes]) -> None:
        """An answer, judgment or failure line: its kind and key are all that is read."""
        key = self._key(head)
        if key is None:
            return
        kind = head.group(1)
        if kind == b"answer":
            self.answers.add(key)
            self.failures.discard(key)
        elif kind == b"judgment":
            self.judgments.add(key)
            self.failures.discard(key)
        elif key not in self.answers and key not in self.judgments:  # a failure
            self.failures.add(key)

    def _other(self, kind: str, raw: bytes) -> None:
        if kind in ("config", "end"):
            try:
                record = json.loads(raw)
            except ValueError:
                self.unreadable += 1
                return
            ts = finite_number(record.get("ts")) if isinstance(record, dict) else None
            if ts is not None:
                self.first_ts = ts if self.first_ts is None else self.first_ts
                self.last_ts = ts
            if kind == "config":
                config = record.get("config")
                self.config = config if isinstance(config, dict) else {}
                self.ended = False
            else:
                self.ended = True


def _lock_holder_alive(directory: Path) -> bool:
    """Whether the pid written in the run's lock file is a live process on this machine
    (the lock itself is not tried: trying it could make a starting run think it is taken)."""
    try:
        fd = open_regular(directory / LOCK_NAME, os.O_RDONLY, missing_ok=True)
    except (RunDirectoryError, OSError):  # a link or not a regular file
        return False
    if fd is None:
        return False
    try:
        holder = os.read(fd, 32).strip()
    except OSError:
        return False
    finally:
        os.close(fd)
    if not holder.isdigit():
        return False
    try:
        os.kill(int(holder), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, OverflowError):
        return False
    return True


def _cost(usage: Any) -> float | None:
    """Dollars in a results file's usage block (every `cost_usd` it holds), None if unpriced
    (or if any of them is no finite number: a sum with a wrong part is no sum)."""
    total, seen = 0.0, False
    stack = [usage]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if "cost_usd" in value and value["cost_usd"] is not None:
                cost = finite_number(value["cost_usd"])
                if cost is None:
                    return None
                total, seen = total + float(cost), True
            stack.extend(v for k, v in value.items() if k != "cost_usd")
    return finite_number(round(total, 6)) if seen else None


def _iso(ts: float | None) -> str | None:
    """A log record's time as ISO 8601 (None when it is no time: out of any calendar)."""
    if ts is None:
        return None
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ts))
    except (OverflowError, OSError, ValueError):
        return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _clean(value: Any, depth: int = 0) -> Any:
    """A value of a run directory's JSON, safe to show and to send as JSON: a number that is
    not finite (or an integer no float holds) becomes None (JSON has no NaN or Infinity; a
    browser's JSON.parse refuses them), and nothing nests deeper than a few levels (a counts
    table is flat)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return finite_number(value)  # (an integer too large for a float: None too)
    if isinstance(value, dict):
        if depth >= 4:
            return None
        return {str(k): _clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return None if depth >= 4 else [_clean(v, depth + 1) for v in value]
    return value


@dataclass
class RunDir:
    """One run (or judge audit) directory under a served folder."""

    root: int  # which served folder
    rel: str  # its path relative to that folder ("." for the folder itself)
    path: Path
    tail: LogTail
    _files: dict[str, _JsonFile] = field(default_factory=dict, repr=False)

    def _json(self, name: str) -> dict[str, Any] | None:
        found = self._files.get(name)
        if found is None:  # (two threads may get here at once: both use the one kept)
            found = self._files.setdefault(name, _JsonFile(self.path / name))
        return found.read()

    def summary(self) -> dict[str, Any]:
        """The row of the runs page and of GET /api/runs (read now; every value checked:
        a run directory may hold anything)."""
        self.tail.poll()
        audit = self._json(AUDIT_NAME)
        results = None if audit is not None else self._json(RESULTS_NAME)
        done = audit if audit is not None else results
        config = self.tail.config or {}
        running = bool(self.tail.config is not None and not self.tail.ended) and (
            _lock_holder_alive(self.path)
        )
        models = _models(results, config)
        judges = _judges(done, config)
        complete = bool(done and done.get("complete") is True) and not running
        state = "running" if running else ("complete" if complete else "incomplete")
        counts: dict[str, Any] = {}
        if done is not None and isinstance(done.get("counts"), dict):
            counts.update(done["counts"])
        counts.update(
            logged_answers=len(self.tail.answers),
            logged_judgments=len(self.tail.judgments),
            open_failures=len(self.tail.failures),
        )
        overall = results.get("overall") if results is not None else None
        overalls = _overalls(results)
        provenance = (results or {}).get("provenance")
        return {
            "root": self.root,
            "path": self.rel,
            "kind": "audit" if audit is not None else "run",
            "benchmark": _text((done or {}).get("benchmark")) or _text(config.get("benchmark")),
            "model": models[0] if len(models) == 1 else (", ".join(models) or None),
            "models": models,
            "judge": judges[0] if len(judges) == 1 else (", ".join(judges) or None),
            "judges": judges,
            "judging": _text(config.get("judging"))
            or _text(provenance.get("judging") if isinstance(provenance, dict) else None),
            "state": state,
            "complete": complete,
            "has_results": results is not None,
            "overall": finite_number(overall),
            "overall_ci95": _interval((results or {}).get("overall_ci95")),
            "overalls": overalls,
            "best": _best(overalls) if len(overalls) > 1 else None,
            "counts": _clean(counts),
            "started_at": _text((done or {}).get("started_at")) or _iso(self.tail.first_ts),
            "finished_at": None if running else _text((done or {}).get("finished_at")),
            "last_activity": _iso(self.tail.last_ts),
            "cost_usd": _cost((results or {}).get("usage")),
        }


def _interval(value: Any) -> list[float] | None:
    if isinstance(value, list) and len(value) == 2 and None not in map(finite_number, value):
        return list(value)
    return None


def _overalls(results: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """model -> {overall, overall_ci95} as its results.json gives them (a run of several
    models keeps them per model, under `models`; None where a model has none yet)."""
    if results is None:
        return {}
    models = results.get("models")
    if isinstance(models, dict):
        rows = {str(name): row for name, row in models.items() if isinstance(row, dict)}
    elif isinstance(results.get("model"), str):
        rows = {results["model"]: results}
    else:
        return {}
    return {
        name: {"overall": finite_number(row.get("overall")),
               "overall_ci95": _interval(row.get("overall_ci95"))}
        for name, row in rows.items()
    }  # fmt: skip


def _best(overalls: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The model with the highest overall (the first listed of those tied), with it."""
    best: dict[str, Any] | None = None
    for name, row in overalls.items():
        if row["overall"] is not None and (best is None or row["overall"] > best["overall"]):
            best = {"model": name, **row}
    return best


def _models(results: dict[str, Any] | None, config: dict[str, Any]) -> list[str]:
    if results is not None:
        if isinstance(results.get("models"), dict):
            return [str(m) for m in results["models"]]
        if isinstance(results.get("model"), str):
            return [results["model"]]
    listed = config.get("models")
    if isinstance(listed, list) and listed:
        return [str(m.get("spec", m)) if isinstance(m, dict) else str(m) for m in listed]
    return [config["model"]] if isinstance(config.get("model"), str) else []


def _judges(done: dict[str, Any] | None, config: dict[str, Any]) -> list[str]:
    if done is not None:
        if isinstance(done.get("judges"), list) and done["judges"]:
            return [str(j) for j in done["judges"]]
        if isinstance(done.get("judge"), str):
            return [done["judge"]]
    listed = config.get("judges")
    if isinstance(listed, list):
        return [str(j.get("spec")) if isinstance(j, dict) else str(j) for j in listed]
    return []


def is_run_dir(directory: Path) -> bool:
    return any(
        (directory / name).is_file() and not (directory / name).is_symlink()
        for name in (LOG_NAME, RESULTS_NAME, AUDIT_NAME)
    )


class RunFinder:
    """Every run directory under the served folders, found again at most every `ttl` s;
    each keeps its log tail between searches. One search at a time: two threads searching
    at once would each make their own RunDir of a new run, and each parse it."""

    def __init__(self, roots: list[Path], ttl: float = 2.0) -> None:
        self.roots = roots
        self.ttl = ttl
        self._found_at = -1.0
        self._runs: dict[tuple[int, str], RunDir] = {}
        self._searching = threading.Lock()

    def runs(self) -> list[RunDir]:
        with self._searching:
            now = time.monotonic()
            if now - self._found_at >= self.ttl:
                self._search()
                self._found_at = now
            return list(self._runs.values())

    def get(self, root: int, rel: str) -> RunDir | None:
        self.runs()
        found = self._runs.get((root, rel))
        if found is None:  # a run that appeared since the last search
            self._found_at = -1.0
            self.runs()
            found = self._runs.get((root, rel))
        return found

    def _search(self) -> None:
        found: dict[tuple[int, str], RunDir] = {}
        for number, root in enumerate(self.roots):
            for directory in _walk(root):
                rel = directory.relative_to(root).as_posix() if directory != root else "."
                key = (number, rel)
                found[key] = self._runs.get(key) or RunDir(
                    number, rel, directory, LogTail(directory / LOG_NAME)
                )
        self._runs = found


def _walk(root: Path) -> list[Path]:
    """Run directories at or under `root`, in name order (links are not followed)."""
    found: list[Path] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            children = sorted(os.scandir(directory), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        if is_run_dir(directory):
            found.append(directory)
        if depth >= MAX_DEPTH:
            continue
        for child in children:
            if child.is_dir(follow_symlinks=False) and not child.name.startswith("."):
                stack.append((Path(child.path), depth + 1))
    return found
