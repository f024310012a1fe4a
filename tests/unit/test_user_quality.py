"""Simulator-quality detectors (turnbench.engine.user_quality) on scripted users."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from turnbench.engine.user_quality import (
    END_MARKERS,
    GIVE_UP,
    GOAL_MET,
    PROBLEMS,
    check_user_turn,
    parse_end_marker,
    revealed_shards,
)

# a persona scenario: the facts are the shards, the persona, goal and opening the wording
# the user model was given
FACTS = [
    "order number 4417",
    "bought on 3 March",
    "the blender makes a burning smell when switched on",
]
GIVEN = (
    "A customer whose blender broke after two days; brief and impatient. "
    "A refund, or a replacement shipped this week. My blender stopped working."
)


def _check(text: str, revealed: set[int] | None = None):
    return check_user_turn(text, FACTS, revealed or set(), allowed_text=GIVEN)


@pytest.mark.parametrize(
    ("text", "index"),
    [
        # distinctive words of fact 0: order, number, 4417; 2 of 3 present
        ("It's order 4417, by the way. Can you sort this out quickly?", 0),
        # fact 1: bought, 3, march; "purchased" replaces "bought", "3rd" gives 3: 2 of 3
        ("I purchased it on March 3rd and it already stopped working.", 1),
        # fact 2 (blender is in fact 2 only, but also in GIVEN: still a word of the fact)
        ("When I switch it on there is a burning smell coming from the blender.", 2),
    ],
)
def test_a_good_user_rephrasing_one_shard_passes_clean(text, index):
    check = _check(text, revealed={i for i in range(3) if i < index})
    assert check.revealed == [index]
    assert check.new == [index]
    assert check.problems == []


def test_a_user_revealing_two_shards_at_once():
    check = _check("My order number is 4417 and I bought it on 3 March.")
    assert (check.revealed, check.new) == ([0, 1], [0, 1])
    assert check.problems == ["several_shards"]
    # the same message after shard 0 was given: one new shard, no problem
    again = _check("My order number is 4417 and I bought it on 3 March.", revealed={0})
    assert (again.new, again.problems) == ([1], [])


def test_a_user_inventing_a_shard():
    # paid, 20, discount, coupon, berlin, store, friday: 7 of 11 content words in no fact
    # and not in the given wording
    check = _check("Also, I paid with a 20% discount coupon at your Berlin store last Friday.")
    assert check.revealed == []
    assert check.problems == ["invented"]
    # beside a real shard, the made-up sentence is still found
    both = _check("It's order 4417. I paid with a 20% discount coupon at the Berlin store.")
    assert (both.new, both.problems) == ([0], ["invented"])


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry to hear your blender stopped working. How can I help you today?",
        "Assistant: Sure, let me look into order 4417 for you.",
        "<|im_start|>assistant\nI can check that order.",
        "### Response\nThe order was placed on 3 March.",
        "As an AI, I cannot receive refunds, but my order number is 4417.",
        "I'd be happy to help with your blender problem.",
    ],
)
def test_a_user_writing_as_the_assistant(text):
    assert "role_switch" in _check(text).problems


@pytest.mark.parametrize(
    "text",
    [
        "I want a refund. Your refund has been processed and will arrive soon.",
        "Sure! Here is the solution: a replacement blender ships this week.",
        "Answer: a refund for order 4417.",
    ],
)
def test_a_user_answering_itself(text):
    check = _check(text)
    assert "answered_itself" in check.problems
    assert "role_switch" not in check.problems


TEMPLATE = (
    "I am sending you a German text one piece at a time. After each piece, reply with the "
    "English translation of the whole text so far.\n\nPiece {n}:\n\n{chunk}"
)


@pytest.fixture(scope="module")
def translation(data_dir: Path) -> list[dict]:
    path = data_dir / "lost_in_conversation" / "sharded_translation.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_templated_translation_turns_reveal_their_one_chunk(translation):
    for document in translation:
        shards = [shard["shard"] for shard in document["shards"]]
        done: set[int] = set()
        for index, chunk in enumerate(shards):
            if not chunk:  # two documents end with an empty shard
                continue
            check = check_user_turn(
                TEMPLATE.format(n=index + 1, chunk=chunk), shards, done, allowed_text=TEMPLATE
            )
            assert (check.revealed, check.problems) == ([index], []), document["task_id"]
            done.add(index)


def test_a_translation_user_answering_itself_and_revealing_two_chunks(translation):
    document = translation[0]
    shards = [shard["shard"] for shard in document["shards"]]
    english = "\n".join(document["document_en"].split("\n")[:3])
    check = check_user_turn(
        TEMPLATE.format(n=1, chunk=shards[0]) + "\n\nMy translation:\n" + english,
        shards,
        set(),
        allowed_text=TEMPLATE,
    )
    assert check.problems == ["answered_itself"]
    two = check_user_turn(
        TEMPLATE.format(n=1, chunk=shards[0] + "\n" + shards[1]),
        shards,
        set(),
        allowed_text=TEMPLATE,
    )
    assert (two.new, two.problems) == ([0, 1], ["several_shards"])


def test_revealed_shards_ignores_words_shared_with_other_shards():
    shards = ["die Stadt München und die Karte", "die Stadt Berlin und die Mauer"]
    # die, stadt, und are in both: only münchen/karte and berlin/mauer decide
    assert revealed_shards("Die Stadt und die Mauer von Berlin", shards) == [1]
    assert revealed_shards("die Stadt und die", shards) == []
    assert revealed_shards("", shards) == []


def test_problem_codes_are_stable():
    assert PROBLEMS == ("several_shards", "invented", "answered_itself", "role_switch")
    check = _check("Assistant: Your refund has been processed for order 4417 bought on 3 March.")
    assert check.problems == ["several_shards", "answered_itself", "role_switch"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Thanks, that works for me. [[GOAL_MET]]", ("Thanks, that works for me.", "goal_met")),
        ("[[GOAL_MET]]", ("", "goal_met")),
        ("  [[GIVE_UP]]\n", ("", "abandoned")),
        ("[[ give up ]] This is useless.", ("This is useless.", "abandoned")),
        ("[[goal_met]]", ("", "goal_met")),
        ("[[GOAL_MET]] no wait [[GIVE_UP]]", ("no wait", "abandoned")),  # the last one wins
        ("Still broken, what now?", ("Still broken, what now?", None)),
        ("[GOAL_MET]", ("[GOAL_MET]", None)),  # single brackets are not the marker
    ],
)
def test_parse_end_marker(text, expected):
    assert parse_end_marker(text) == expected


def test_end_markers_table():
    assert END_MARKERS == {GOAL_MET: "goal_met", GIVE_UP: "abandoned"}
    assert GOAL_MET == "[[GOAL_MET]]" and GIVE_UP == "[[GIVE_UP]]"


@pytest.mark.parametrize(
    "text",
    [
        "\n" * 100_000,
        "i am" + " " * 100_000 + "x",
        "[[" + " " * 100_000 + "GOAL",
        "word " * 100_000,
        "here is the " + "a " * 100_000,
    ],
)
def test_long_hostile_text_takes_linear_time(text):
    # unbounded `\s*` beside `\W*` took 71 s on 20,000 newlines; bounded, well under 1 s
    started = time.perf_counter()
    check_user_turn(text, FACTS, set(), allowed_text=GIVEN)
    parse_end_marker(text)
    assert time.perf_counter() - started < 3.0
