"""A tau-bench domain's database: one parsed, read-only base, and a copy-on-write state per
conversation.

A domain's database is a few MB of JSON (retail: orders, products, users; airline: flights,
reservations, users) and hundreds of conversations may be in flight at once, so no
conversation copies it: each `DatabaseState` reads the shared `Database` and copies a record
(one order, one user, one reservation) only when a tool writes to it. Tools read through
`get`, write through `edit` (a private copy, made once) and `insert`. The base is frozen
(`ReadOnlyDict`, `ReadOnlyList`): a tool that writes to a record it only read raises instead
of changing every conversation's database.

One tool call's writes can be undone: between `begin` and `end` the state keeps what each
write replaces, `touched` gives the records written and `undo` puts the old ones back (a
tool that would store a value no run can keep changes nothing; `tools.ToolSet.call`).

The state's hash is upstream's canonical one: the sha256 of
`json.dumps(db, sort_keys=True, ensure_ascii=False, separators=(",", ":"))`, `db` the dict of
tables by file name. The base keeps the canonical text of every table once, so a
conversation's hash serializes only the records it changed and feeds the rest to sha256 as
slices of the shared text.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel

from turnbench.errors import UserError
from turnbench.safetext import plain

#: a field one side of a diff lacks
_ABSENT: Any = object()
#: what an undo puts back for a record the state had not changed before (the base's)
_FROM_BASE: Any = object()
#: the most differing fields one diff lists (a rewritten record lists its first ones)
MAX_DIFFS = 50
_READ_ONLY = "the shared database is read only (a tool writes through DatabaseState.edit)"


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(_READ_ONLY)


class ReadOnlyDict(dict):  # type: ignore[type-arg]
    """A dict of the shared base: read as any dict (json.dumps, ==, iteration), never
    written."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:  # (copy and pickle rebuild it, frozen)
        return (type(self), (dict(self),))


class ReadOnlyList(list):  # type: ignore[type-arg]
    """A list of the shared base: read as any list, never written."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))


def freeze(value: Any) -> Any:
    """A JSON value whose dicts and lists refuse every write."""
    if isinstance(value, dict):
        return ReadOnlyDict(zip(value.keys(), map(freeze, value.values()), strict=True))
    if isinstance(value, list):
        return ReadOnlyList(map(freeze, value))
    return value


def copy_json(value: Any) -> Any:
    """A deep, writable copy of a JSON value (dicts keep their key order), faster than
    `deepcopy`; a frozen value's copy is plain."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def canonical(value: Any) -> str:
    """Upstream's canonical JSON text of a value (its hash rule)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class _TableText:
    """A base table's canonical text, made once: its records' entries (`"key":{...}`) in
    key order, joined by commas, with where each entry starts and ends."""

    keys: list[str]
    position: dict[str, int]
    joined: memoryview
    starts: list[int]
    ends: list[int]

    @classmethod
    def of(cls, table: Mapping[str, Any]) -> _TableText:
        keys = sorted(table)
        entries = [(canonical(key) + ":" + canonical(table[key])).encode() for key in keys]
        starts, ends, at = [], [], 0
        for entry in entries:
            starts.append(at)
            ends.append(at + len(entry))
            at += len(entry) + 1
        return cls(
            keys=keys,
            position={key: index for index, key in enumerate(keys)},
            joined=memoryview(b",".join(entries)),
            starts=starts,
            ends=ends,
        )

    def run(self, first: int, stop: int) -> memoryview:
        """The entries first..stop-1 as one slice of the shared text (no copy)."""
        return self.joined[self.starts[first] : self.ends[stop - 1]]


class Database:
    """A domain's tables as parsed from its files, frozen, shared by every conversation."""

    def __init__(self, tables: Mapping[str, Mapping[str, Any]]) -> None:
        self.tables: dict[str, dict[str, Any]] = freeze(dict(tables))
        self._texts: dict[str, _TableText] = {}

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

    def text(self, table: str) -> _TableText:
        """A table's canonical text (made on first use, then shared by every state)."""
        found = self._texts.get(table)
        if found is None:
            found = self._texts[table] = _TableText.of(self.tables[table])
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
        # between begin() and end(): what each record written replaced, and the writes then
        self._undo: dict[tuple[str, str], Any] | None = None
        self._undo_writes = 0

    @classmethod
    def fresh(cls, base: Database) -> DatabaseState:
        return cls(base)

    @property
    def changed(self) -> bool:
        """Whether a tool wrote to this state (it may have written what was there)."""
        return self.writes > 0

    # -- what tools use --------------------------------------------------------------------
    def tables(self) -> list[str]:
        return list(self.base.tables)

    def get(self, table: str, key: str) -> Any:
        """The record, or None. A record this state never changed is the shared base's,
        frozen: a tool that changes it calls `edit`."""
        changed = self._changed.get(table)
        if changed is not None and key in changed:
            return changed[key]
        return self.base.tables[table].get(key)

    def has(self, table: str, key: str) -> bool:
        return self.get(table, key) is not None

    def edit(self, table: str, key: str) -> Any:
        """The record, copied into this state on its first write (None if there is none)."""
        changed = self._changed.setdefault(table, {})
        self.writes += 1
        self._keep(changed, table, key)
        if key in changed:
            return changed[key]
        base = self.base.tables[table].get(key)
        if base is None:
            return None
        copy = changed[key] = copy_json(base)
        return copy

    def insert(self, table: str, key: str, record: Any) -> None:
        """Add a record (or replace one) in this state."""
        changed = self._changed.setdefault(table, {})
        self._keep(changed, table, key)
        changed[key] = record
        self.writes += 1

    # -- one call's writes, undone when they cannot be kept ---------------------------------
    def _keep(self, changed: dict[str, Any], table: str, key: str) -> None:
        """Between begin() and end(): remember what the first write of a record replaces
        (a copy: the tool changes the record in place)."""
        if self._undo is None or (table, key) in self._undo:
            return
        self._undo[(table, key)] = copy_json(changed[key]) if key in changed else _FROM_BASE

    def begin(self) -> None:
        """Keep what each write replaces from now on (one tool call's), until end()."""
        self._undo = {}
        self._undo_writes = self.writes

    def touched(self) -> list[Any]:
        """The records written since begin(), as they are now (None for one a tool asked
        to edit that does not exist)."""
        return [self.get(table, key) for table, key in self._undo or ()]

    def undo(self) -> None:
        """Put back every record written since begin(), as it was (the write count too)."""
        for (table, key), before in (self._undo or {}).items():
            if before is _FROM_BASE:
                self._changed[table].pop(key, None)
            else:
                self._changed[table][key] = before
        self._undo = {}
        self.writes = self._undo_writes

    def end(self) -> None:
        """Stop keeping what writes replace."""
        self._undo = None

    def items(self, table: str) -> Iterator[tuple[str, Any]]:
        """The table's records in their order (a changed record keeps its place; records
        added come last, in the order they were added), read only."""
        changed = self._changed.get(table, {})
        base = self.base.tables[table]
        for key, record in base.items():
            yield key, changed.get(key, record)
        for key, record in changed.items():
            if key not in base:
                yield key, record

    def values(self, table: str) -> Iterator[Any]:
        return (record for _, record in self.items(table))

    # -- the whole state -------------------------------------------------------------------
    def as_dict(self) -> dict[str, dict[str, Any]]:
        """The whole database as one dict (for a test or an export; costly)."""
        return {table: dict(self.items(table)) for table in self.base.tables}

    def _chunks(self) -> Iterator[bytes | memoryview]:
        """The canonical text of the whole database in pieces: the base's as shared slices
        (runs of unchanged records), the records this state changed or added, in key
        order."""
        yield b"{"
        for number, table in enumerate(sorted(self.base.tables)):
            yield (b"," if number else b"") + canonical(table).encode() + b":{"
            for index, piece in enumerate(self._pieces(table)):
                if index:
                    yield b","
                yield piece
            yield b"}"
        yield b"}"

    def _pieces(self, table: str) -> Iterator[bytes | memoryview]:
        text = self.base.text(table)
        changed = self._changed.get(table)
        if not changed:
            if text.keys:
                yield text.joined
            return
        at = 0  # the next base entry not yet given
        for key in sorted(changed):
            index = text.position.get(key)
            stop = bisect_left(text.keys, key) if index is None else index
            if stop > at:
                yield text.run(at, stop)
            at = stop if index is None else index + 1
            yield (canonical(key) + ":" + canonical(changed[key])).encode()
        if at < len(text.keys):
            yield text.run(at, len(text.keys))

    def canonical_text(self) -> bytes:
        """The bytes upstream's rule hashes (`json.dumps(db, sort_keys=True, ...)`)."""
        return b"".join(self._chunks())

    def sha256(self) -> str:
        """Upstream's canonical hash of the whole database, serializing only the records
        this state changed (about 1 ms for retail, 3 ms for airline: sha256 of the whole
        text; `benchmarks/tau_state.py`)."""
        digest = hashlib.sha256()
        for chunk in self._chunks():
            digest.update(chunk)
        return digest.hexdigest()

    def same_database(self, other: DatabaseState) -> bool:
        """Whether the two states hash alike under upstream's rule (equal canonical texts),
        comparing only the records either changed: the rest is the shared base, so this
        costs microseconds where two `sha256` cost milliseconds."""
        if other.base is not self.base:
            return self.sha256() == other.sha256()
        for table in self.base.tables:
            keys = [*self._changed.get(table, {}), *other._changed.get(table, {})]
            for key in dict.fromkeys(keys):
                if self._entry(table, key) != other._entry(table, key):
                    return False
        return True

    def _entry(self, table: str, key: str) -> str | None:
        """The record's canonical text in this state, None where the table has no such key."""
        changed = self._changed.get(table, {})
        if key in changed:
            return canonical(changed[key])
        base = self.base.tables[table]
        return canonical(base[key]) if key in base else None

    def differs_from_base(self) -> bool:
        """Whether this state's database differs from the base (a write of what was
        there changes nothing)."""
        return any(
            self.get(table, key) != self.base.tables[table].get(key)
            for table, records in self._changed.items()
            for key in records
        )

    def diff(self, expected: DatabaseState) -> list[FieldDiff]:
        """Where this state (found) differs from `expected`, field by field (at most
        MAX_DIFFS entries, their values copies); only records either state changed can
        differ."""
        found: list[FieldDiff] = []
        for table in self.base.tables:
            keys = [*self._changed.get(table, {}), *expected._changed.get(table, {})]
            for key in dict.fromkeys(keys):
                mine, theirs = self.get(table, key), expected.get(table, key)
                if mine == theirs:
                    continue
                if mine is None or theirs is None:
                    found.append(_field(table, key, "", theirs, mine))
                else:
                    _fields(table, key, "", theirs, mine, found)
                if len(found) >= MAX_DIFFS:
                    return found[:MAX_DIFFS]
        return found


def _field(table: str, key: str, path: str, expected: Any, found: Any) -> FieldDiff:
    return FieldDiff(
        table=table, record=key, path=path, expected=copy_json(expected), found=copy_json(found)
    )


def _fields(
    table: str, key: str, path: str, expected: Any, found: Any, out: list[FieldDiff]
) -> None:
    """The differing leaves of two values, with their paths (`items[2].price`)."""
    if len(out) >= MAX_DIFFS:
        return
    if isinstance(expected, dict) and isinstance(found, dict):
        for name in dict.fromkeys([*expected, *found]):
            if expected.get(name, _ABSENT) != found.get(name, _ABSENT):
                inner = f"{path}.{name}" if path else str(name)
                if name not in expected or name not in found:
                    out.append(_field(table, key, inner, expected.get(name), found.get(name)))
                else:
                    _fields(table, key, inner, expected[name], found[name], out)
        return
    if isinstance(expected, list) and isinstance(found, list) and len(expected) == len(found):
        for index, (one, other) in enumerate(zip(expected, found, strict=True)):
            if one != other:
                _fields(table, key, f"{path}[{index}]", one, other, out)
        return
    out.append(_field(table, key, path, expected, found))
