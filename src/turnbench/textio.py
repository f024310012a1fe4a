"""Reading user-supplied JSON/JSONL files with compiler-style error reports.

Every problem in a file (bad UTF-8, malformed JSON, missing or wrong-typed fields,
duplicate ids) is collected with its line number and reported at once, up to a limit, as one
UserError; nothing is written before the input is known to be good.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from turnbench.errors import UserError

MAX_REPORTED = 20
Model = TypeVar("Model", bound=BaseModel)


class ErrorCollector:
    def __init__(self, path: Path, limit: int = MAX_REPORTED) -> None:
        self.path = path
        self.limit = limit
        self.errors: list[str] = []
        self.count = 0

    def add(self, line: int | None, message: str) -> None:
        self.count += 1
        if len(self.errors) < self.limit:
            where = f"{self.path}:{line}" if line is not None else str(self.path)
            self.errors.append(f"{where}: {message}")

    def raise_if_any(self) -> None:
        if not self.errors:
            return
        more = self.count - len(self.errors)
        tail = f"\n... and {more} more problem(s)" if more > 0 else ""
        noun = "problem" if self.count == 1 else "problems"
        raise UserError(f"{self.path} has {self.count} {noun}:\n" + "\n".join(self.errors) + tail)


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a file") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise UserError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{raw[error.start]:02x} at offset "
            f"{error.start}); save the file as UTF-8"
        ) from None


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line; raises on any bad line."""
    text = _read_text(path)
    collector = ErrorCollector(path)
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            collector.add(number, f"malformed JSON ({error.msg} at column {error.colno})")
    collector.raise_if_any()
    if not rows:
        raise UserError(f"{path}: the file is empty")
    return rows


def read_json(path: Path) -> Any:
    text = _read_text(path)
    if not text.strip():
        raise UserError(f"{path}: the file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(
            f"{path}:{error.lineno}: malformed JSON ({error.msg} at column {error.colno})"
        ) from None


def describe_validation_error(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        location = ".".join(str(part) for part in item["loc"]) or "(row)"
        if item["type"] == "missing":
            parts.append(f"missing field '{location}'")
        else:
            parts.append(f"field '{location}': {item['msg'].lower()}")
    return "; ".join(parts)


def validate_rows(
    path: Path,
    rows: Iterable[tuple[int, Any]],
    model: type[Model],
    *,
    id_of: Any = None,
) -> list[tuple[int, Model]]:
    """Validate every row against `model`; optionally refuse duplicate ids."""
    collector = ErrorCollector(path)
    valid: list[tuple[int, Model]] = []
    seen: dict[Any, int] = {}
    for number, value in rows:
        if not isinstance(value, dict):
            collector.add(number, f"expected a JSON object, got {type(value).__name__}")
            continue
        try:
            item = model.model_validate(value)
        except ValidationError as error:
            collector.add(number, describe_validation_error(error))
            continue
        if id_of is not None:
            identity = id_of(item)
            if identity in seen:
                collector.add(number, f"duplicate id {identity!r} (first on line {seen[identity]})")
                continue
            seen[identity] = number
        valid.append((number, item))
    collector.raise_if_any()
    return valid
