"""A tau-bench domain's database: one parsed, read-only base, and a copy-on-write state per
conversation.

A domain's database is a few MB of JSON (retail: orders, products, users; airline: flights,
reservations, users) and hundreds of conversations may be in flight at once, so no
conversation copies it: each `DatabaseState` reads the shared `Database` and copies a record
(one order, one user, one reservation) only when a tool writes to it. Tools read through
`get`, write through `edit` (a private copy, made once) and `insert`; nothing else touches
the base (a test replays every gold action of every task and checks the base is unchanged).

The state's hash is upstream's canonical one: the sha256 of
`json.dumps(db, sort_keys=True, ensure_ascii=False, separators=(",", ":"))`, `db` the dict of
tables by file name. The canonical text of every base record is made once and shared, so a
conversation's hash serializes only the records it changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from turnbench.errors import UserError
from turnbench.safetext import plain

#: a record a state deleted (none of today's tools deletes one; kept for completeness)
_DELETED: Any = object()
#: the most differing fields one diff lists (a rewritten record lists its first ones)
MAX_DIFFS = 50


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts keep their key order), faster than `deepcopy`."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def canonical(value: Any) -> str:
    """Upstream's canonical JSON text of a value (its hash rule)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class Database:
    """A domain's tables as parsed from its files, shared read-only by every conversation."""

    def __init__(self, tables: Mapping[str, dict[str, Any]]) -> None:
        self.tables: dict[str, dict[str, Any]] = dict(tables)
        self._canonical: dict[str, dict[str, str]] = {}

    @classmethod
    def load(cls, files: Mapping[str, Path]) -> Database:
        """The tables from their JSON files (`{table name: path}`)."""
        tables = {}
        for name, path in files.items():
            try:
                value = json.loads(path.read_text("utf-8"))
            except (OSError, ValueError) as error:
                raise UserError(f"{plain(str(path))}: cannot read the database ({error})") from None
            if not isinstance(value, dict):
                raise UserError(f"{plain(str(path))}: a database table must be a JSON object")
            tables[name] = value
        return cls(tables)

    def canonical_records(self, table: str) -> dict[str, str]:
        """Each base record's canonical text (made once, shared by every state)."""
        found = self._canonical.get(table)
        if found is None:
            found = {key: canonical(record) for key, record in self.tables[table].items()}
            self._canonical[table] = found
        return found


class FieldDiff(BaseModel):
    """Where a database state differs from the expected one: the table, the record's id,
    the field's path inside the record ("" for a whole record missing or added), the
    expected value and the one found (null where absent)."""

    table: str
    record: str
    path: str
    expected: Any = None
    found: Any = None


class DatabaseState:
    """One conversation's database: the shared base and the records this state changed."""

    def __init__(self, base: Database) -> None:
        self.base = base
        self._changed: dict[str, dict[str, Any]] = {}
        self.writes = 0

    @classmethod
    def fresh(cls, base: Database) -> DatabaseState:
        return cls(base)

    @property
    def changed(self) -> bool:
        """Whether a tool wrote to this state."""
        return self.writes > 0

    # -- what tools use --------------------------------------------------------------------
    def tables(self) -> list[str]:
        return list(self.base.tables)

    def get(self, table: str, key: str) -> Any:
        """The record (read only: a tool that changes it calls `edit`), or None."""
        changed = self._changed.get(table)
        if changed is not None and key in changed:
            found = changed[key]
            return None if found is _DELETED else found
        return self.base.tables[table].get(key)

    def has(self, table: str, key: str) -> bool:
        return self.get(table, key) is not None

    def edit(self, table: str, key: str) -> Any:
        """The record, copied into this state on its first write (None if there is none)."""
        changed = self._changed.setdefault(table, {})
        self.writes += 1
        if key in changed:
            found = changed[key]
            return None if found is _DELETED else found
        base = self.base.tables[table].get(key)
        if base is None:
            return None
        copy = changed[key] = copy_json(base)
        return copy

    def insert(self, table: str, key: str, record: Any) -> None:
        """Add a record (or replace one) in this state."""
        self._changed.setdefault(table, {})[key] = record
        self.writes += 1

    def items(self, table: str) -> Iterator[tuple[str, Any]]:
        """The table's records in their order (a changed record keeps its place; records
        added come last, in the order they were added), read only."""
        changed = self._changed.get(table, {})
        base = self.base.tables[table]
        for key, record in base.items():
            found = changed.get(key, record)
            if found is not _DELETED:
                yield key, found
        for key, record in changed.items():
            if key not in base and record is not _DELETED:
                yield key, record

    def values(self, table: str) -> Iterator[Any]:
        return (record for _, record in self.items(table))

    # -- the whole state -------------------------------------------------------------------
    def as_dict(self) -> dict[str, dict[str, Any]]:
        """The whole database as one dict (for a test or an export; costly)."""
        return {table: dict(self.items(table)) for table in self.base.tables}

    def sha256(self) -> str:
        """Upstream's canonical hash of the whole database, serializing only the records
        this state changed (the base's canonical texts are shared)."""
        digest = hashlib.sha256()
        digest.update(b"{")
        for number, table in enumerate(sorted(self.base.tables)):
            if number:
                digest.update(b",")
            digest.update(canonical(table).encode("utf-8") + b":{")
            texts = self.base.canonical_records(table)
            changed = self._changed.get(table, {})
            keys = sorted({*self.base.tables[table], *changed})
            first = True
            for key in keys:
                if key in changed:
                    record = changed[key]
                    if record is _DELETED:
                        continue
                    text = canonical(record)
                else:
                    text = texts[key]
                digest.update((b"" if first else b",") + (canonical(key) + ":" + text).encode())
                first = False
            digest.update(b"}")
        digest.update(b"}")
        return digest.hexdigest()

    def diff(self, expected: DatabaseState) -> list[FieldDiff]:
        """Where this state (found) differs from `expected`, field by field (at most
        MAX_DIFFS entries); only records either state changed can differ."""
        found: list[FieldDiff] = []
        for table in self.base.tables:
            keys = [*self._changed.get(table, {}), *expected._changed.get(table, {})]
            for key in dict.fromkeys(keys):
                mine, theirs = self.get(table, key), expected.get(table, key)
                if mine == theirs:
                    continue
                if mine is None or theirs is None:
                    found.append(
                        FieldDiff(table=table, record=key, path="", expected=theirs, found=mine)
                    )
                else:
                    _fields(table, key, "", theirs, mine, found)
                if len(found) >= MAX_DIFFS:
                    return found[:MAX_DIFFS]
        return found


def _fields(
    table: str, key: str, path: str, expected: Any, found: Any, out: list[FieldDiff]
) -> None:
    """The differing leaves of two values, with their paths (`items[2].price`)."""
    if len(out) >= MAX_DIFFS:
        return
    if isinstance(expected, dict) and isinstance(found, dict):
        for name in dict.fromkeys([*expected, *found]):
            if expected.get(name, _DELETED) != found.get(name, _DELETED):
                inner = f"{path}.{name}" if path else str(name)
                if name not in expected or name not in found:
                    out.append(
                        FieldDiff(table=table, record=key, path=inner,
                                  expected=expected.get(name), found=found.get(name))
                    )  # fmt: skip
                else:
                    _fields(table, key, inner, expected[name], found[name], out)
        return
    if isinstance(expected, list) and isinstance(found, list) and len(expected) == len(found):
        for index, (one, other) in enumerate(zip(expected, found, strict=True)):
            if one != other:
                _fields(table, key, f"{path}[{index}]", one, other, out)
        return
    out.append(FieldDiff(table=table, record=key, path=path, expected=expected, found=found))
