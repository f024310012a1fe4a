"""tau-bench's copy-on-write database: the shared base cannot be written by any tool, a
state's canonical text is byte for byte `json.dumps` of the merged database (so its hash is
upstream's rule) wherever its changes fall, and a diff names table, record and field."""

from __future__ import annotations

import copy
import hashlib
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from turnbench.benchmarks.tau_bench.database import (
    MAX_DIFFS,
    Database,
    DatabaseState,
    ReadOnlyDict,
    ReadOnlyList,
    canonical,
)
from turnbench.benchmarks.tau_bench.tools import ToolSet

TABLES = {
    "b_orders": {
        "#2": {"status": "pending", "items": [{"id": "x", "price": 1.5}], "note": "é"},
        "#4": {"status": "delivered", "items": [], "note": None},
        "#6": {"status": "pending", "items": [{"id": "y", "price": 2}], "note": "\u2603"},
    },
    "a_users": {"u1": {"name": "Ann", "cards": {"g1": {"balance": 10.0}}}},
    "c_empty": {},
}


def _state() -> DatabaseState:
    return DatabaseState.fresh(Database(TABLES))


def _merged_text(state: DatabaseState) -> bytes:
    return json.dumps(
        state.as_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    ).encode("utf-8")


def _edit(key: str) -> Callable[[DatabaseState], None]:
    def change(state: DatabaseState) -> None:
        state.edit("b_orders", key)["status"] = "cancelled"

    return change


def _insert(key: str) -> Callable[[DatabaseState], None]:
    def change(state: DatabaseState) -> None:
        state.insert("b_orders", key, {"status": "new", "items": [], "note": "ü"})

    return change


@pytest.mark.parametrize(
    "changes",
    [
        [],
        [_edit("#2")],  # the first record
        [_edit("#6")],  # the last
        [_edit("#4")],  # the middle
        [_edit("#2"), _edit("#6")],
        [_insert("#1")],  # added before every record
        [_insert("#9")],  # after every record
        [_insert("#3"), _insert("#5"), _edit("#4")],  # between, around a change
        [_insert("#0"), _edit("#2"), _insert("#7")],
        [lambda s: s.insert("c_empty", "k", {"v": 1})],  # into an empty table
        [lambda s: s.edit("a_users", "u1")["cards"]["g1"].update(balance=3.25)],
        [_edit("#4"), lambda s: s.edit("b_orders", "#4")],  # written, then read to write again
    ],
)
def test_the_canonical_text_is_json_dumps_of_the_merged_database(changes):
    state = _state()
    for change in changes:
        change(state)
    expected = _merged_text(state)
    assert state.canonical_text() == expected
    assert state.sha256() == hashlib.sha256(expected).hexdigest()


def test_a_record_read_from_the_base_refuses_every_write():
    state = _state()
    order = state.get("b_orders", "#2")
    writes: list[Callable[[], Any]] = [
        lambda: order.__setitem__("status", "x"),
        lambda: order.update(status="x"),
        lambda: order.pop("status"),
        lambda: order.setdefault("new", 1),
        lambda: order.clear(),
        lambda: order.__delitem__("note"),
        lambda: order["items"].append({}),
        lambda: order["items"].__setitem__(0, {}),
        lambda: order["items"][0].__setitem__("price", 0),
        lambda: order["items"].extend([{}]),
        lambda: order["items"].sort(),
        lambda: state.base.tables.__setitem__("b_orders", {}),
        lambda: state.base.tables["b_orders"].pop("#2"),
    ]
    for write in writes:
        with pytest.raises(TypeError, match="read only"):
            write()
    assert state.base.tables == TABLES and not state.changed
    # a copy of a frozen value is frozen too (a tool cannot get around it that way)
    for clone in (copy.deepcopy(order), pickle.loads(pickle.dumps(order)), copy.copy(order)):
        assert clone == order and isinstance(clone, ReadOnlyDict)
        assert isinstance(clone["items"], ReadOnlyList)


def test_an_edit_is_a_writable_copy_that_no_other_state_sees():
    base = Database(TABLES)
    one, other = DatabaseState.fresh(base), DatabaseState.fresh(base)
    order = one.edit("b_orders", "#2")
    order["items"].append({"id": "z", "price": 3})
    order["status"] = "cancelled"
    assert type(order) is dict and type(order["items"]) is list
    assert one.get("b_orders", "#2")["status"] == "cancelled"
    assert other.get("b_orders", "#2") == TABLES["b_orders"]["#2"]
    assert base.tables == TABLES
    assert one.sha256() != other.sha256() == DatabaseState.fresh(base).sha256()


def test_a_tool_that_writes_to_what_it_read_gives_an_error_and_changes_nothing():
    """A faulty tool (it writes to a record it only read) is stopped by the frozen base: the
    agent sees upstream's `Error: <exception>` and no conversation's database moves."""

    def careless(db: DatabaseState, order_id: str) -> str:
        db.get("b_orders", order_id)["status"] = "cancelled"
        return "done"

    schema = {
        "type": "function",
        "function": {
            "name": "careless",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
    tools = ToolSet([schema], {"careless": careless})
    state = _state()
    before = state.sha256()
    result = tools.call(state, "careless", {"order_id": "#2"})
    assert result.output.startswith("Error: the shared database is read only")
    assert state.sha256() == before and state.base.tables == TABLES


def test_a_write_of_what_was_there_changes_nothing():
    state = _state()
    state.edit("b_orders", "#4")["status"] = "delivered"
    assert state.changed and not state.differs_from_base()
    assert state.sha256() == _state().sha256()
    state.edit("b_orders", "#4")["status"] = "cancelled"
    assert state.differs_from_base()


def test_a_diff_names_table_record_and_field_with_detached_values():
    gold, found = _state(), _state()
    gold.edit("b_orders", "#2")["items"][0]["price"] = 9.0
    gold.insert("b_orders", "#7", {"status": "new"})
    found.edit("a_users", "u1")["cards"]["g1"]["balance"] = 0.0
    found.edit("b_orders", "#6")["refund"] = True
    diff = found.diff(gold)
    assert [(d.table, d.record, d.path, d.expected, d.found) for d in diff] == [
        ("b_orders", "#6", "refund", None, True),
        ("b_orders", "#2", "items[0].price", 9.0, 1.5),
        ("b_orders", "#7", "", {"status": "new"}, None),
        ("a_users", "u1", "cards.g1.balance", 10.0, 0.0),
    ]
    # the values are copies: changing the states later leaves the diff as it was
    gold.edit("b_orders", "#7")["status"] = "later"
    assert diff[2].expected == {"status": "new"}
    assert type(diff[3].expected) is float and found.diff(found) == []
    assert json.loads(json.dumps([d.model_dump(mode="json") for d in diff]))


def test_a_diff_is_capped():
    gold, found = _state(), _state()
    for number in range(MAX_DIFFS + 10):
        gold.insert("c_empty", f"k{number}", {"v": number})
    assert len(found.diff(gold)) == MAX_DIFFS


def test_canonical_is_upstreams_rule():
    value = {"b": [1, 2.5, None, True], "a": "é\u2603", "c": {"z": 1, "y": {}}}
    assert canonical(value) == '{"a":"é☃","b":[1,2.5,null,true],"c":{"y":{},"z":1}}'


def _changes() -> list[Callable[[DatabaseState], None]]:
    def status(value: Any) -> Callable[[DatabaseState], None]:
        return lambda state: state.edit("b_orders", "#2").__setitem__("status", value)

    return [
        lambda state: None,
        status("cancelled"),
        status(TABLES["b_orders"]["#2"]["status"]),  # a write of what was there
        lambda state: state.insert("b_orders", "#9", {"status": "new"}),
        lambda state: state.insert("b_orders", "#9", {"status": "new", "n": 1}),
        lambda state: state.insert("b_orders", "#9", {"status": "new", "n": 1.0}),
        lambda state: state.insert("b_orders", "#9", {"n": 1, "status": "new"}),
    ]


def test_same_database_is_the_hash_comparison_the_reward_makes():
    """The reward compares only the records either state changed; on every pair of these
    states (1 against 1.0 and key order included) it says what the two hashes say."""
    base = Database(TABLES)
    for first in _changes():
        for second in _changes():
            one, other = DatabaseState.fresh(base), DatabaseState.fresh(base)
            first(one)
            second(other)
            alike = one.sha256() == other.sha256()
            assert one.same_database(other) is alike is other.same_database(one)
            foreign = DatabaseState.fresh(Database(TABLES))  # another base: the hash decides
            second(foreign)
            assert one.same_database(foreign) is alike
