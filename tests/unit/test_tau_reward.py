"""tau-bench's reward, pass^k and the simulated user's checks, on hand-computed cases."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from turnbench.benchmarks.tau_bench.database import Database, DatabaseState
from turnbench.benchmarks.tau_bench.reward import pass_hat_k, pass_hat_k_intervals, reward, told
from turnbench.benchmarks.tau_bench.user import (
    LEAK_WORDS,
    longest_shared_run,
    user_ask,
    user_system,
)

BASE = Database({"users": {"u1": {"name": "Ann", "balance": 10.0}}})


def _state(balance: float | None = None) -> DatabaseState:
    state = DatabaseState.fresh(BASE)
    if balance is not None:
        state.edit("users", "u1")["balance"] = balance
    return state


@pytest.mark.parametrize(
    ("final", "outputs", "said", "ended", "expected"),
    [
        (None, [], [], "user_stop", 1.0),
        (None, [], [], "terminating_tool", 1.0),
        (None, [], [], "step_limit", 0.0),  # not ended by the user or a terminating tool
        (20.0, [], [], "user_stop", 0.0),  # the database differs
        (None, ["1,093.34"], ["It is 1093.34 in all."], "user_stop", 0.0),  # upstream's quirk
        (None, ["1093.34"], ["It is 1,093.34 in all."], "user_stop", 1.0),  # commas dropped
        (None, ["Blue"], ["it is BLUE"], "user_stop", 1.0),  # case folded
        (None, ["23553", "10"], ["saved 23553"], "user_stop", 0.0),  # one output untold
    ],
)
def test_reward_as_upstream(final, outputs, said, ended, expected):
    gold = _state()
    result = reward(_state(final), gold, outputs, said, ended)
    assert result.reward == expected
    assert result.db_match == (final is None)
    if final is not None:
        (diff,) = result.diff
        assert (diff.table, diff.record, diff.path) == ("users", "u1", "balance")
        assert (diff.expected, diff.found) == (10.0, final)
    assert result.missing_outputs == [o for o in outputs if not told(o, said)]


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        ({"amount": float("nan"), "ok": 1.5}, {"amount": "NaN", "ok": 1.5}),  # inside a record
        ([[float("inf")]], [["Infinity"]]),
    ],
)
def test_a_number_json_has_no_value_for_is_shown_in_the_diff_as_what_it_is(stored, shown):
    """Issue 44, class 9: 6f7f1ce wrote a stored NaN as `found: null` (the diff is dumped as
    strict JSON for the log and results.json)."""
    state = _state()
    state.edit("users", "u1")["balance"] = stored
    result = reward(state, _state(), [], [], "user_stop")
    (row,) = result.model_dump(mode="json")["diff"]
    assert row["found"] == shown and row["expected"] == 10.0
    assert json.loads(json.dumps(row, allow_nan=False))["found"] == shown  # (strict JSON)
    assert result.reward == 0.0 and not result.db_match


@pytest.mark.parametrize(
    ("successes", "trials", "expected"),
    [
        ({0: 4, 1: 0}, 4, {1: 0.5, 2: 0.5, 3: 0.5, 4: 0.5}),
        ({0: 2}, 4, {1: 0.5, 2: 1 / 6, 3: 0.0, 4: 0.0}),
        ({0: 3, 1: 1}, 3, {1: (1 + 1 / 3) / 2, 2: 0.5, 3: 0.5}),
        ({}, 3, {}),
    ],
)
def test_pass_hat_k_is_the_mean_of_c_choose_k_over_n_choose_k(successes, trials, expected):
    assert pass_hat_k(successes, trials) == pytest.approx(expected)
    for k, value in pass_hat_k(successes, trials).items():
        assert value == sum(comb(c, k) / comb(trials, k) for c in successes.values()) / len(
            successes
        )


def test_pass_hat_k_intervals_bracket_the_estimate_and_need_two_tasks():
    successes = {task: task % 5 for task in range(20)}
    estimate = pass_hat_k(successes, 4)
    for k, interval in pass_hat_k_intervals(successes, 4).items():
        assert interval is not None and interval[0] <= estimate[k] <= interval[1]
    assert pass_hat_k_intervals({0: 2}, 4) == dict.fromkeys(range(1, 5))


INSTRUCTION = (
    "Your user id is mia_li_3668. You want to fly from New York to Seattle on May 20 (one way). "
    "You do not want to fly before 11am est. You want to fly in economy."
)


def test_the_user_is_asked_as_upstream_asks_it():
    ask = user_ask(INSTRUCTION, ["How can I help?"], ["I need a flight."], acted=False,
                   needs_change=True)  # fmt: skip
    assert ask.messages[0]["content"] == user_system(INSTRUCTION)
    shown = "agent.\n\nInstruction: " + INSTRUCTION + "\n\nRules:\n- Just"
    assert shown in ask.messages[0]["content"]
    assert [m["role"] for m in ask.messages] == ["system", "user", "assistant", "user"]
    assert ask.messages[1]["content"] == "Hi! How can I help you today?"


@pytest.mark.parametrize(
    ("reply", "problems", "ended"),
    [
        ("Hi, I'd like to book a flight to Seattle.", (), None),
        ("My user id is mia_li_3668.", (), None),  # a fact asked for: no leak
        ("You want to fly from New York to Seattle on May 20 (one way). Thanks",
         ("leaked_instruction",), None),
        ("###STOP###", ("stopped_before_change",), "stop"),
        ("Your refund has been processed. ###STOP###", ("answered_itself",
                                                        "stopped_before_change"), "stop"),
    ],
)  # fmt: skip
def test_the_users_reply_is_checked_for_the_simulators_own_mistakes(reply, problems, ended):
    turn = user_ask(INSTRUCTION, [], [], acted=False, needs_change=True).read(reply)
    assert turn.problems == problems and turn.ended == ended and turn.text == reply
    acted = user_ask(INSTRUCTION, [], [], acted=True, needs_change=True).read("###STOP###")
    assert acted.problems == ()


def test_the_facts_a_user_gives_are_shorter_than_a_leak(data_dir: Path):
    """The facts a user is meant to give when asked (its user id, an order number, a name,
    a zip code, an address) are runs of the instruction far shorter than LEAK_WORDS: no
    token that looks like an id or a number sits in a run of that many words that holds
    nothing else (measured over all 685 instructions: the longest such run is printed)."""
    import re

    longest = 0
    for domain, splits in (("retail", ("test", "train", "dev")), ("airline", ("test",))):
        for split in splits:
            path = data_dir / "tau_bench" / domain / f"tasks_{split}.json"
            for task in json.loads(path.read_text()):
                for fact in re.findall(r"(?:[#\w]*\d[\w#-]*[ ,]*){1,12}", task["instruction"]):
                    longest = max(longest, longest_shared_run(fact, task["instruction"]))
    print(f"longest run of fact-like words in an instruction: {longest}")
    assert longest < LEAK_WORDS
