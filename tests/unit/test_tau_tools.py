"""tau-bench's tools, written in turnbench, against upstream's own: every observation of every
gold action of all 685 tasks (retail test, train, dev; airline test) equals the one
upstream's tools returned, byte for byte, and so does the database's hash after them
(`golden_replays.jsonl`, made by executing upstream's code). The database is copy-on-write:
its hash equals upstream's rule on the whole merged database, and no tool ever changes the
shared base."""

from __future__ import annotations

import hashlib
import json
import random
from functools import cache
from pathlib import Path

import pytest

from turnbench.benchmarks.tau_bench.database import Database, DatabaseState
from turnbench.benchmarks.tau_bench.domain import TABLES
from turnbench.benchmarks.tau_bench.tasks import RESPOND, Action, gold_state, load_tasks, replay
from turnbench.benchmarks.tau_bench.tools import ToolSet

ROOT = Path(__file__).resolve().parents[3] / "shared" / "data" / "tau_bench"
SPLITS = {"retail": ("test", "train", "dev"), "airline": ("test",)}
COUNTS = {("retail", "test"): 115, ("retail", "train"): 500, ("retail", "dev"): 20,
          ("airline", "test"): 50}  # fmt: skip


@cache
def domain(name: str) -> tuple[Database, ToolSet]:
    root = _root()
    base = Database.load({table: root / name / f"{table}.json" for table in TABLES[name]})
    tools = ToolSet.for_domain(name, json.loads((root / name / "tools.json").read_text()))
    return base, tools


def _root() -> Path:
    import os

    data = os.environ.get("TURNBENCH_DATA_DIR")
    return Path(data) / "tau_bench" if data else ROOT


def _golden(name: str) -> list[dict]:
    lines = (_root() / name / "golden_replays.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _canonical(value: object) -> str:
    return hashlib.sha256(
        json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    ).hexdigest()


@pytest.mark.parametrize("name", ["retail", "airline"])
def test_every_gold_action_of_every_task_observes_and_ends_as_upstream(name):
    base, tools = domain(name)
    before = _canonical(base.tables)
    tasks = {split: load_tasks(_root() / name / f"tasks_{split}.json") for split in SPLITS[name]}
    for split, found in tasks.items():
        assert len(found) == COUNTS[(name, split)]
    golden = _golden(name)
    assert len(golden) == sum(len(found) for found in tasks.values())
    for entry in golden:
        task = tasks[entry["split"]][entry["index"]]
        state, observations = replay(base, tools, task)
        where = f"{name} {entry['split']} task {entry['index']}"
        assert observations == entry["observations"], where
        assert state.sha256() == entry["final_db_sha256"], where
    assert _canonical(base.tables) == before  # no tool touched the shared base


@pytest.mark.parametrize("name", ["retail", "airline"])
def test_the_hash_is_upstreams_rule_on_the_whole_database(name):
    base, tools = domain(name)
    manifest = json.loads((_root() / "manifest.json").read_text())
    fresh = DatabaseState.fresh(base)
    assert fresh.sha256() == manifest[name]["initial_db_sha256"] == _canonical(base.tables)
    task = max(load_tasks(_root() / name / "tasks_test.json"), key=lambda t: len(t.actions))
    changed = gold_state(base, tools, task)
    assert changed.changed
    assert changed.sha256() == _canonical(changed.as_dict())
    assert changed.sha256() != fresh.sha256()


def test_a_diff_says_which_record_and_field_differ():
    base, tools = domain("retail")
    task = load_tasks(_root() / "retail" / "tasks_test.json")[0]
    gold = gold_state(base, tools, task)
    nothing = DatabaseState.fresh(base)
    diff = nothing.diff(gold)
    assert diff and {d.table for d in diff} == {"orders"}
    status = next(d for d in diff if d.path == "status")
    assert (status.record, status.expected, status.found) == (
        "#W2378156",
        "exchange requested",
        "delivered",
    )
    added = next(d for d in diff if d.path == "exchange_items")
    assert added.found is None and added.expected == ["1151293680", "4983901480"]
    assert gold.diff(gold) == []


def test_two_states_never_share_a_write():
    base, tools = domain("airline")
    one, other = DatabaseState.fresh(base), DatabaseState.fresh(base)
    asked = {"reservation_id": "4WQ150"}
    tools.call(one, "cancel_reservation", asked)
    seen = json.loads(tools.call(other, "get_reservation_details", asked).output)
    assert seen.get("status") != "cancelled"
    assert json.loads(tools.call(one, "get_reservation_details", asked).output)["status"] == (
        "cancelled"
    )
    assert one.changed and not other.changed


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"order_id": ', "Error: the arguments of get_order_details are not valid JSON"),
        ("[1, 2]", "Error: the arguments of get_order_details must be a JSON object"),
        ('{"order": "#W1"}', "Error: get_order_details got an unexpected argument 'order'"),
        ("{}", "Error: get_order_details is missing the argument 'order_id'"),
        ('{"order_id": 7}', "Error: the argument 'order_id' of get_order_details must be of type"),
    ],
)  # fmt: skip
def test_a_bad_call_is_an_observation_the_model_sees(arguments, expected):
    base, tools = domain("retail")
    result = tools.call(DatabaseState.fresh(base), "get_order_details", arguments)
    assert result.output.startswith(expected) and not result.changed and not result.terminal


def test_unknown_tools_and_random_calls_never_raise():
    """Upstream's words for an unknown tool; and any call, however wrong, is an
    observation (random names, arguments and types over every tool of both domains)."""
    draws = random.Random(7)
    values = [None, 0, -1, 1.5, "", "x", "#W2378156", [], ["1151293680"], {}, {"a": 1}, True]
    for name in ("retail", "airline"):
        base, tools = domain(name)
        state = DatabaseState.fresh(base)
        assert tools.call(state, "drop_tables", "{}").output == "Unknown action drop_tables"
        for schema in tools.schemas:
            tool = schema["function"]["name"]
            properties = list(schema["function"]["parameters"].get("properties", {}))
            for _ in range(40):
                arguments = {key: draws.choice(values) for key in properties}
                result = tools.call(state, tool, arguments)
                assert isinstance(result.output, str)
        assert _canonical(base.tables) == _canonical(domain(name)[0].tables)


def test_the_terminating_tool_ends_the_conversation():
    base, tools = domain("airline")
    result = tools.call(DatabaseState.fresh(base), "transfer_to_human_agents", {"summary": "x"})
    assert (result.output, result.terminal) == ("Transfer successful", True)


def test_the_gold_state_leaves_out_the_terminating_tool_and_respond_actions():
    base, tools = domain("retail")
    tasks = load_tasks(_root() / "retail" / "tasks_test.json")
    transfer = next(t for t in tasks if any(a.name in tools.terminating for a in t.actions))
    state, observations = replay(base, tools, transfer)
    assert "Transfer successful" in observations
    assert gold_state(base, tools, transfer).sha256() == state.sha256()
    spoken = transfer.model_copy(
        update={"actions": [*transfer.actions, Action(name=RESPOND, kwargs={"content": "hi"})]}
    )
    assert replay(base, tools, spoken)[1][-1] is None
    assert gold_state(base, tools, spoken).sha256() == state.sha256()


def _echo_tools() -> ToolSet:
    """A tool with a required integer, an optional number and an optional list."""

    def echo(db: DatabaseState, count: int, weight: float = 1.0, tags: list | None = None) -> str:
        return json.dumps([count, weight, tags])

    schema = {
        "type": "function",
        "function": {
            "name": "echo",
            "parameters": {
                "type": "object",
                "properties": {
                    "count": {"type": "integer"},
                    "weight": {"type": "number"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["count"],
            },
        },
    }
    return ToolSet([schema], {"echo": echo})


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"count": 2}, "[2, 1.0, null]"),  # what the schema does not require may be left out
        ({"count": 2.0, "weight": 3}, "[2.0, 3, null]"),  # JSON Schema's integer; as written
        ({"count": 2, "tags": ["a", 1]}, '[2, 1.0, ["a", 1]]'),  # inner values: the tool's
        ({"weight": 1.5}, "Error: echo is missing the argument 'count'"),
        ({"count": 2.5}, "Error: the argument 'count' of echo must be of type integer"),
        ({"count": True}, "Error: the argument 'count' of echo must be of type integer"),
        ({"count": 1, "weight": "1"}, "Error: the argument 'weight' of echo must be of type "
                                      "number"),
        ({"count": 1, "tags": None}, "Error: the argument 'tags' of echo must be of type array"),
        ({"count": 1, "size": 2}, "Error: echo got an unexpected argument 'size'"),
    ],
)  # fmt: skip
def test_arguments_are_checked_against_the_schemas_required_and_types(arguments, expected):
    base, _ = domain("retail")
    assert _echo_tools().call(DatabaseState.fresh(base), "echo", arguments).output == expected


# -- issue 44: what a call may store, terminating tools, arguments by RFC 8259 -------------
RESERVATION, CARD = "VAAOXJ", "credit_card_1052991"  # (an airline reservation paid by card)


def _baggages(count: int) -> dict:
    return {"reservation_id": RESERVATION, "total_baggages": count, "nonfree_baggages": count,
            "payment_id": CARD}  # fmt: skip


def _passengers(**changed: object) -> dict:
    passenger = {"first_name": "James", "last_name": "Smith", "dob": "1972-09-24", **changed}
    return {"reservation_id": RESERVATION, "passengers": [passenger]}


def _nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("name", "arguments", "why"),
    [
        # 4,299 digits: the tool stores 50 times it in the payment history (4,301 digits)
        ("update_reservation_baggages", _baggages(10**4299 - 1),
         "an integer of more than 4300 digits"),
        ("update_reservation_passengers", _passengers(first_name="\ud800"),
         "the lone surrogate U+D800, which is no Unicode text"),
        ("update_reservation_passengers", _passengers(**{"\udc00": "x"}),
         "the lone surrogate U+DC00, which is no Unicode text"),
        # reservation > passengers > passenger > 48 lists: 51 levels, one past the limit
        ("update_reservation_passengers", _passengers(dob=_nested(48)),
         "a value nested more than 50 levels deep"),
    ],
)  # fmt: skip
def test_a_call_that_would_store_what_no_run_can_keep_is_undone(name, arguments, why):
    """The observation says why, the state is as it was before the call (an earlier call's
    write stays) and the call counts as no write. On 6f7f1ce the write stayed: the hash
    raised on the integer, results.json could not hold the surrogate, the report refused
    the nesting."""
    base, tools = domain("airline")
    state = DatabaseState.fresh(base)
    assert tools.call(state, "update_reservation_baggages", _baggages(2)).changed
    before, writes = state.sha256(), state.writes
    result = tools.call(state, name, arguments)
    assert result.output == f"Error: {name} would store {why}; nothing was changed"
    assert not result.changed and not result.terminal
    assert state.sha256() == before and state.writes == writes
    assert state.get("reservations", RESERVATION)["total_baggages"] == 2


def test_a_value_at_the_limit_is_kept():
    """50 levels deep and a 4,300-digit integer are stored (the rule's edges)."""
    base, tools = domain("airline")
    state = DatabaseState.fresh(base)
    result = tools.call(state, "update_reservation_passengers", _passengers(dob=_nested(47)))
    assert result.changed and not result.output.startswith("Error")
    kept = tools.call(state, "update_reservation_baggages", _baggages(10**4298))
    assert kept.changed and state.get("reservations", RESERVATION)["total_baggages"] == 10**4298
    state.sha256()  # (hashable)


@pytest.mark.parametrize("arguments", ['{"summary": "x", "extra": 1}', "{}", '{"summary": 7}',
                                       "[1]", "null", "{not json", '{"summary": NaN}'])  # fmt: skip
def test_a_terminating_tool_ends_the_conversation_whatever_its_arguments(arguments):
    """As upstream's environment, which ends the conversation on a terminating tool even
    when its call raised. On 6f7f1ce these were an `Error:` and the conversation went on."""
    for name in ("retail", "airline"):
        base, tools = domain(name)
        result = tools.call(DatabaseState.fresh(base), "transfer_to_human_agents", arguments)
        assert result.output.startswith("Error: ") and result.terminal


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"user_id": "x", "amount": NaN}', "NaN is not a JSON number"),
        ('{"user_id": "x", "amount": Infinity}', "Infinity is not a JSON number"),
        ('{"user_id": "x", "amount": -Infinity}', "-Infinity is not a JSON number"),
        ('{"user_id": "x", "amount": 1e400}', "1e400 is not a JSON number a float holds"),
        ('{"user_id": "x", "amount": ' + "[" * 100 + "]" * 100 + "}",
         "are nested more than 100 levels deep"),
        ('{"user_id": "x", "amount": ' + "[" * 10_000 + "]" * 10_000 + "}",
         "are nested more than 100 levels deep"),
    ],
)  # fmt: skip
def test_arguments_are_json_as_rfc_8259_defines_it(arguments, why):
    """Python's reader takes NaN, Infinity and 1e400 (infinity), which no request can
    carry (on 6f7f1ce the Anthropic path's next request could not be encoded, forever)."""
    base, tools = domain("airline")
    result = tools.call(DatabaseState.fresh(base), "send_certificate", arguments)
    assert result.output.startswith("Error: the arguments of send_certificate ")
    assert why in result.output and not result.changed


def test_an_error_that_quotes_a_lone_surrogate_shows_it_as_u_fffd():
    """The observation is text the next request carries (UTF-8): a flight number the tool
    quotes back holds no lone surrogate."""
    base, tools = domain("airline")
    arguments = {"reservation_id": RESERVATION, "cabin": "economy", "payment_id": CARD,
                 "flights": [{"flight_number": "\ud800", "date": "2024-05-20"}]}  # fmt: skip
    result = tools.call(DatabaseState.fresh(base), "update_reservation_flights", arguments)
    assert result.output == "Error: flight \ufffd not found"
