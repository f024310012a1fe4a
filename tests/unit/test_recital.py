"""Issue 38, class 10: a simulated user that recites its hidden instructions.

A user model replying "My hidden instructions are: " + its system message passed the
persona, goal and rules to the model under test with no problem flagged, and the end
markers its rules spell out ended the conversation as abandoned. `find_recital` finds every
run of RECITAL_WORDS or more consecutive words of the instructions repeated verbatim and
replaces it with RECITAL_MARK; the facts the user is meant to give are never a recital.
"""

from __future__ import annotations

import time

import pytest

from turnbench.benchmarks.custom.benchmark import scenario_prompts
from turnbench.engine.user_quality import (
    RECITAL_MARK,
    RECITAL_WORDS,
    RecitalSource,
    find_recital,
    longest_recited_run,
    parse_end_marker,
)
from turnbench.testing.simulated_fakes import GOAL, PERSONA

FACTS = ["order number 4417", "bought on 3 March"]
#: the system message a scenario's user model is sent (prompts/scenario_user.json)
SYSTEM = scenario_prompts()["system"].format(
    persona=PERSONA, goal=GOAL, facts="\n".join(f"- {fact}" for fact in FACTS)
)
RULES = SYSTEM[SYSTEM.index("Rules:") :]


def test_the_setting_is_what_the_module_docstring_measured():
    assert RECITAL_WORDS == 12
    assert "[[GOAL_MET]]" in SYSTEM and "[[GIVE_UP]]" in SYSTEM  # (the markers recited below)


def test_a_whole_recital_is_found_and_replaced():
    reply = "My hidden instructions are: " + SYSTEM
    recital = find_recital(reply, SYSTEM, FACTS)
    assert recital.recited
    assert recital.text.startswith("My hidden instructions are: " + RECITAL_MARK)
    for secret in (PERSONA, GOAL, "You play a user", "Invent no facts", "Rules"):
        assert secret not in recital.text
    # the facts stay: they are the user's to give, and cut the recital in two spans
    [(start, end), (again, last)] = recital.spans
    assert reply[start:].startswith("You play a user") and reply[:last].endswith("GIVE_UP")
    assert reply[end:again].strip().startswith(")") and "4417" in reply[end:again]
    assert "order number 4417" in recital.text and "bought on 3 March" in recital.text
    assert recital.text.count(RECITAL_MARK) == 2
    assert longest_recited_run(reply, SYSTEM, FACTS) >= 50


def test_an_end_marker_inside_the_recited_span_ends_nothing():
    """The rules spell out both markers: recited, they are part of the recital, not the
    user's word (before the fix the last one, [[GIVE_UP]], made the conversation abandoned)."""
    reply = "My hidden instructions are: " + SYSTEM
    assert parse_end_marker(reply)[1] == "abandoned"  # what the recital alone would say
    recital = find_recital(reply, SYSTEM, FACTS)
    text, ended = parse_end_marker(recital.text)
    assert ended is None
    assert "GOAL_MET" not in text and "GIVE_UP" not in text
    # a marker the user writes itself, after the recital, still ends the conversation
    own = find_recital(RULES + " Thanks, that is all. [[GOAL_MET]]", SYSTEM, FACTS)
    assert own.recited and parse_end_marker(own.text)[1] == "goal_met"


def test_the_rules_alone_are_a_recital():
    assert find_recital(f"Note: {RULES}", SYSTEM, FACTS).text == f"Note: {RECITAL_MARK}]]."


def test_only_the_persona_with_its_label_is_a_recital():
    """The label "Who you are:" and the 11-word persona make 14 consecutive words of the system
    message: caught. The persona alone (11 words) is under the threshold."""
    reply = f"Who you are: {PERSONA}"
    recital = find_recital(reply, SYSTEM, FACTS)
    assert recital.recited and recital.text == f"{RECITAL_MARK}."
    assert PERSONA not in recital.text
    assert longest_recited_run(reply, SYSTEM, FACTS) == 14
    assert not find_recital(PERSONA, SYSTEM, FACTS).recited  # 11 words


@pytest.mark.parametrize(
    "reply",
    [
        "**Who you are:** A *customer* whose `blender` broke after _two days_; brief and "
        "impatient.",
        "# Who  you\n\n> are: A customer—whose blender... broke after two days; BRIEF and "
        "impatient.",
        '<b>Who</b> you <i>are</i>: A <span class="x">customer</span> whose blender broke '
        "after two days;<br/> brief and impatient.",
    ],
    ids=["markdown", "punctuation-case-blanks", "html-tags"],
)
def test_markup_punctuation_and_case_between_the_words_do_not_hide_a_recital(reply):
    recital = find_recital(reply, SYSTEM, FACTS)
    assert recital.recited
    assert "blender" not in recital.text and "impatient" not in recital.text
    assert longest_recited_run(reply, SYSTEM, FACTS) == 14


def test_a_shared_fact_however_long_is_never_a_recital():
    long_fact = (
        "my order number is W2378156 and it shipped to 1234 Maple Avenue Suite 500 "
        "Springfield Illinois 62704 United States on 14 May 2024"
    )
    assert len(long_fact.split()) > RECITAL_WORDS + 10
    facts = [*FACTS, long_fact]
    system = scenario_prompts()["system"].format(
        persona=PERSONA, goal=GOAL, facts="\n".join(f"- {fact}" for fact in facts)
    )
    for reply in (long_fact, f"Sure: {long_fact}.", long_fact.upper()):
        recital = find_recital(reply, system, facts)
        assert not recital.recited and recital.text == reply
    # without the fact declared shared, the same words are a recital (the control)
    assert find_recital(long_fact, system, FACTS).recited
    # the short facts, even together, in a sentence
    reply = "It is order number 4417, bought on 3 March."
    assert longest_recited_run(reply, SYSTEM, FACTS) <= 1
    assert not find_recital(reply, SYSTEM, FACTS).recited


@pytest.mark.parametrize(
    "reply",
    [
        "My blender broke after two days. I want a refund, or a replacement shipped this week.",
        "I'm a customer and my blender broke after two days, so please refund me.",
        "Hi, I want a refund or a replacement shipped this week, my blender is broken.",
        "Can you help me? I need a refund. It is order number 4417.",
    ],
)
def test_a_goal_stated_in_the_users_own_words_is_not_flagged(reply):
    """First person, a few words shared with the persona and goal: that is playing the
    part, not reciting it."""
    assert longest_recited_run(reply, SYSTEM, FACTS) < RECITAL_WORDS
    recital = find_recital(reply, SYSTEM, FACTS)
    assert not recital.recited and recital.text == reply


def test_a_run_one_word_short_of_the_threshold_is_not_a_recital():
    words = RULES.split()
    below, at = " ".join(words[: RECITAL_WORDS - 1]), " ".join(words[:RECITAL_WORDS])
    assert not find_recital(below, SYSTEM, FACTS).recited
    assert find_recital(at, SYSTEM, FACTS).recited


def test_two_separate_recitals_are_both_replaced():
    reply = f"First: Who you are: {PERSONA} And then: {RULES.split('.')[0]}. Bye."
    recital = find_recital(reply, SYSTEM, FACTS)
    assert len(recital.spans) == 2 and recital.text.count(RECITAL_MARK) == 2
    assert recital.text.startswith("First: ") and recital.text.endswith(". Bye.")


def test_a_hostile_reply_is_checked_quickly():
    source = RecitalSource(SYSTEM, FACTS)
    started = time.perf_counter()
    for reply in ("the " * 50_000, "<a " * 20_000, "you " * 50_000, SYSTEM * 50):
        source.longest(reply)
    assert time.perf_counter() - started < 5
