"""Reading user-supplied files safely, and JSON/JSONL with compiler-style error reports.

Every file a user names (answer files, reference answers, planted answers, vote files,
benchmark files, price files...) is opened by `open_input`: it must be a regular file (a
device such as /dev/zero, a pipe or a socket would be read forever, or hang the open) of at
most MAX_INPUT_BYTES, else one UserError says which rule it broke. Every problem in a file
(bad UTF-8, malformed JSON, missing or wrong-typed fields, duplicate ids) is collected with
its line number and reported at once, up to a limit, as one UserError; nothing is written
before the input is known to be good.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import BaseModel, ValidationError

from turnbench.errors import UserError
from turnbench.safetext import fix_tree, may_hold_surrogates

MAX_REPORTED = 20
#: how deep a user's JSON or YAML value may nest. Real files nest a few levels (a custom
#: benchmark's JSON Schema perhaps a dozen); the limit keeps far from Python's recursion
#: limit, which every recursive reader and writer of the value (the parser, pydantic, the
#: log writer) would otherwise reach with a traceback
MAX_DEPTH = 100
#: the largest file a user may give as input. The largest real inputs (FastChat judgment
#: files, a benchmark's data, recorded trajectories) are tens of megabytes; a file is read
#: whole and decoded, so a limit far above them still keeps memory use bounded
MAX_INPUT_BYTES = 512 << 20
#: how deep a value a run keeps inside its records (a tool's write to a database) may nest.
#: The record sits some levels down in the log and in results.json (a database diff's
#: `found` value is six levels down there) and every reader refuses a file nested deeper
#: than MAX_DEPTH, so half of it leaves room for any wrapper; real records nest four
KEPT_DEPTH = MAX_DEPTH // 2
#: the most digits of an integer a run keeps: Python's json reads and writes no more by
#: default (`sys.get_int_max_str_digits`), so a longer one breaks the log's reader, the
#: canonical hash and results.json
MAX_INT_DIGITS = 4300
_INT_LIMIT = 10**MAX_INT_DIGITS
# a FIFO must not hang open(): opened non-blocking, then refused as no regular file
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
Model = TypeVar("Model", bound=BaseModel)
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class NestingError(ValueError):
    """A JSON or YAML value nested deeper than MAX_DEPTH; `lineno` where the limit is passed."""

    def __init__(self, lineno: int | None = None, limit: int = MAX_DEPTH) -> None:
        self.lineno = lineno
        self.limit = limit
        self.msg = f"nested more than {limit} levels deep"
        super().__init__(self.msg)


def nesting_error(text: str, limit: int = MAX_DEPTH) -> NestingError:
    """The NestingError of JSON `text`, located on the line where it opens level limit + 1
    (strings skipped, so brackets inside them do not count)."""
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token in "[{":
            depth += 1
            if depth > limit:
                return NestingError(text.count("\n", 0, match.start()) + 1, limit)
        elif token in "]}":
            depth -= 1
    return NestingError(None, limit)


def _too_deep(value: Any, limit: int) -> bool:
    """Whether a parsed value nests deeper than `limit` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


class ErrorCollector:
    """Problems of one file, reported together like a compiler's.

    File-level problems (no line) come first because they usually explain the rest (say,
    "these ids belong to another benchmark"); then row problems in line order, up to `limit`,
    followed by a count of those not shown. One collector can be shared by the reading,
    validation and benchmark checks of a file, so that all of its problems are reported at
    once.
    """

    def __init__(self, path: Path, limit: int = MAX_REPORTED) -> None:
        self.path = path
        self.limit = limit
        self._problems: list[tuple[int | None, str]] = []

    @property
    def count(self) -> int:
        return len(self._problems)

    @property
    def errors(self) -> list[str]:
        """The problems that will be shown, formatted as `file:line: message`."""
        notes = [p for p in self._problems if p[0] is None]
        rows = sorted((p for p in self._problems if p[0] is not None), key=lambda p: p[0] or 0)
        return [
            f"{self.path}:{line}: {message}" if line is not None else f"{self.path}: {message}"
            for line, message in (notes + rows)[: self.limit]
        ]

    def add(self, line: int | None, message: str) -> None:
        self._problems.append((line, message))

    def raise_if_any(self) -> None:
        if not self._problems:
            return
        shown = self.errors
        more = self.count - len(shown)
        tail = f"\n... and {more} more problem(s)" if more > 0 else ""
        noun = "problem" if self.count == 1 else "problems"
        raise UserError(f"{self.path} has {self.count} {noun}:\n" + "\n".join(shown) + tail)


def _megabytes(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"


def open_input(path: Path, limit: int | None = MAX_INPUT_BYTES) -> BinaryIO:
    """A file the user named, open for reading in binary: a regular file (links are
    followed: the user chose the path) of at most `limit` bytes (None: any size, for a run
    log, which only grows by appends). Anything else is one clear UserError."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a file") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UserError(f"{path}: is a directory, expected a file")
        if not stat.S_ISREG(info.st_mode):
            raise UserError(
                f"{path}: not a regular file (a device, a pipe or a socket); give a file"
            )
        if limit is not None and info.st_size > limit:
            raise UserError(
                f"{path}: too large ({_megabytes(info.st_size)}; an input file may hold at "
                f"most {_megabytes(limit)})"
            )
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input_bytes(path: Path, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a file the user named (`open_input`'s rules; a file that grows past
    `limit` while it is read is refused too)."""
    with open_input(path, limit) as handle:
        try:
            raw = handle.read(limit + 1)
        except OSError as error:
            raise UserError(f"{path}: cannot read ({error.strerror or error})") from None
    if len(raw) > limit:
        raise UserError(f"{path}: too large (an input file may hold at most {_megabytes(limit)})")
    return raw


def stream_sha256(handle: BinaryIO) -> str:
    """The sha256 of what `handle` holds from where it stands, read in pieces (a log may be
    large). `hashlib.file_digest` does this from Python 3.11; 3.10 is supported too."""
    digest = hashlib.sha256()
    while chunk := handle.read(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def input_sha256(path: Path, limit: int | None = MAX_INPUT_BYTES) -> str:
    """The sha256 of a file the user named, read under `open_input`'s rules."""
    with open_input(path, limit) as handle:
        try:
            return stream_sha256(handle)
        except OSError as error:
            raise UserError(f"{path}: cannot read ({error.strerror or error})") from None


def _read_text(path: Path) -> str:
    raw = read_input_bytes(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise UserError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{raw[error.start]:02x} at offset "
            f"{error.start}); save the file as UTF-8"
        ) from None


def read_text(path: Path) -> str:
    """A user's text file as UTF-8; an unreadable file or bad UTF-8 is one clear UserError
    (with the line of the first bad byte)."""
    return _read_text(path)


#: how JSON's own spelling (Python's json module) writes the numbers JSON has no value for
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def shown_number(value: Any) -> Any:
    """`value` with every NaN or infinite number in it written as the word for it ("NaN",
    "Infinity", "-Infinity"). A tool may store such a number (a model's arguments parsed as
    Python parses JSON), but what is shown of it (a benchmark's diff of a database or an
    environment) is written to the log and to results.json as strict JSON, where it would
    become null: a failure would say `null` of a field that holds NaN. (Recursive: a caller
    whose value may nest deeply catches RecursionError.)"""
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[repr(value)]
    if isinstance(value, dict):
        return {key: shown_number(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shown_number(item) for item in value]
    return value


def loads_json(text: str, limit: int = MAX_DEPTH) -> Any:
    """Parsed JSON, nested at most `limit` deep, with no lone surrogate in any string
    (`fix_tree`, skipped when the text has no escape that could make one).

    The one place user JSON is parsed: malformed text raises json.JSONDecodeError, too deep
    a value NestingError (never RecursionError). Checking the depth costs a walk only when
    the text has more brackets than the limit.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise nesting_error(text, limit) from None
    if text.count("[") + text.count("{") > limit and _too_deep(value, limit):
        raise nesting_error(text, limit)
    return fix_tree(value) if may_hold_surrogates(text) else value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # (1e400 reads as infinity)
        raise ValueError(f"{text} is not a JSON number a float holds")
    return value


def loads_strict_json(text: str, limit: int = MAX_DEPTH) -> Any:
    """JSON as RFC 8259 defines it, nested at most `limit` deep, its strings as written.

    Python's reader also takes `NaN`, `Infinity` and numbers that overflow to infinity,
    which no other JSON reader or writer accepts (the next request holding them cannot be
    encoded); here they raise ValueError. Too deep a value raises NestingError (never
    RecursionError), malformed text json.JSONDecodeError. Lone surrogates are kept: a value
    is checked where it would be kept (`storable_problem`), not changed where it is read.
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise nesting_error(text, limit) from None
    if text.count("[") + text.count("{") > limit and _too_deep(value, limit):
        raise nesting_error(text, limit)
    return value


def _surrogate(text: str) -> str | None:
    if text.isascii():
        return None
    for char in text:
        if "\ud800" <= char <= "\udfff":
            return f"the lone surrogate U+{ord(char):04X}, which is no Unicode text"
    return None


def storable_problem(value: Any, limit: int = KEPT_DEPTH) -> str | None:
    """Why a value cannot be kept in a run, or None when it can.

    A run writes what it keeps to its log and results.json as UTF-8 JSON, hashes it, and
    its report and viewer read it back: a value is kept only when all of them can. That is
    JSON's own values (objects with text keys, arrays, text, finite numbers, true, false,
    null), text that is valid Unicode (a lone surrogate cannot be written as UTF-8), an
    integer of at most MAX_INT_DIGITS digits, and nesting at most `limit` deep. Walked
    without recursion, so a value of any depth gets its answer.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            problem = _surrogate(item)
        elif item is None or isinstance(item, bool):
            problem = None
        elif isinstance(item, int):
            too_long = not -_INT_LIMIT < item < _INT_LIMIT
            problem = f"an integer of more than {MAX_INT_DIGITS} digits" if too_long else None
        elif isinstance(item, float):
            problem = None if math.isfinite(item) else f"the number {item}, which JSON lacks"
        elif isinstance(item, (dict, list)):
            if depth > limit:
                return f"a value nested more than {limit} levels deep"
            if isinstance(item, dict):
                for key, inner in item.items():
                    if not isinstance(key, str):
                        return f"the key {key!r}, which is no text"
                    problem = _surrogate(key)
                    if problem is not None:
                        return problem
                    stack.append((inner, depth + 1))
            else:
                stack.extend((inner, depth + 1) for inner in item)
            problem = None
        else:
            problem = f"a {type(item).__name__}, which is no JSON value"
        if problem is not None:
            return problem
    return None


def json_problem(error: json.JSONDecodeError | NestingError) -> str:
    """What is wrong with a JSON text, in the words every reader uses."""
    if isinstance(error, NestingError):
        return f"JSON {error.msg}"
    return f"malformed JSON ({error.msg} at column {error.colno})"


def parse_json(text: str, origin: str, limit: int = MAX_DEPTH) -> Any:
    """`loads_json`, any problem raised as one UserError naming `origin` (a file or a flag)."""
    try:
        return loads_json(text, limit)
    except json.JSONDecodeError as error:
        raise UserError(f"{origin}:{error.lineno}: {json_problem(error)}") from None
    except NestingError as error:
        line = f":{error.lineno}" if error.lineno is not None else ""
        raise UserError(f"{origin}{line}: {json_problem(error)}") from None


def read_jsonl(path: Path, collector: ErrorCollector | None = None) -> list[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line.

    Malformed lines raise at once, unless a shared `collector` is given: then they are added
    to it and the caller raises after checking the good rows too.
    """
    text = _read_text(path)
    shared = collector is not None
    collector = collector if collector is not None else ErrorCollector(path)
    before = collector.count
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, loads_json(line)))
        except (json.JSONDecodeError, NestingError) as error:
            collector.add(number, json_problem(error))
    if not shared:
        collector.raise_if_any()
    if not rows and collector.count == before:
        raise UserError(f"{path}: the file is empty")
    return rows


def read_json(path: Path) -> Any:
    text = _read_text(path)
    if not text.strip():
        raise UserError(f"{path}: the file is empty")
    return parse_json(text, str(path))


def describe_validation_error(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        location = ".".join(str(part) for part in item["loc"]) or "(row)"
        if item["type"] == "missing":
            parts.append(f"missing field '{location}'")
        else:
            parts.append(f"field '{location}': {item['msg'].lower()}")
    return "; ".join(parts)


def validate_row(
    collector: ErrorCollector, line: int, value: Any, model: type[Model]
) -> Model | None:
    """One row against `model`; a problem is collected with its line and None returned."""
    if not isinstance(value, dict):
        collector.add(line, f"expected a JSON object, got {type(value).__name__}")
        return None
    try:
        return model.model_validate(value)
    except ValidationError as error:
        collector.add(line, describe_validation_error(error))
        return None


def validate_rows(
    path: Path,
    rows: Iterable[tuple[int, Any]],
    model: type[Model],
    *,
    id_of: Any = None,
    collector: ErrorCollector | None = None,
) -> list[tuple[int, Model]]:
    """Validate every row against `model`; optionally refuse duplicate ids.

    Raises on any bad row, unless a shared `collector` is given (the caller raises).
    """
    shared = collector is not None
    collector = collector if collector is not None else ErrorCollector(path)
    valid: list[tuple[int, Model]] = []
    seen: dict[Any, int] = {}
    for number, value in rows:
        item = validate_row(collector, number, value, model)
        if item is None:
            continue
        if id_of is not None:
            identity = id_of(item)
            if identity in seen:
                collector.add(number, f"duplicate id {identity!r} (first on line {seen[identity]})")
                continue
            seen[identity] = number
        valid.append((number, item))
    if not shared:
        collector.raise_if_any()
    return valid
