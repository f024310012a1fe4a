"""The judge-reply grammar admits exactly: bounded explanation, then one valid rating/verdict."""

from __future__ import annotations

import pytest

from tests.unit.gbnf_subset import GrammarError, matches, to_regex
from turnbench.backends.reply_grammar import (
    check_constraint,
    explanation_budget,
    grammar_for,
    longest_tail,
)
from turnbench.judging.parsers import parse_rating_strict, parse_verdict_strict
from turnbench.types import ReplyConstraint

RATING = ReplyConstraint(kind="rating", choices=tuple(str(n) for n in range(1, 11)))
VERDICT = ReplyConstraint(kind="verdict", choices=("A", "B", "C"), lead="Final verdict: ")


def test_the_matcher_itself_reads_gbnf():
    grammar = 'root ::= a "b" [^x]{0,2}\na ::= "\\x41" | ( "c" )+\n'
    assert matches(grammar, "Ab") and matches(grammar, "ccbyz") and not matches(grammar, "Abx")
    with pytest.raises(GrammarError):
        to_regex('root ::= root "a"\n')
    with pytest.raises(GrammarError):
        to_regex("root ::= missing\n")


@pytest.mark.parametrize(
    ("reply", "admitted"),
    [
        ("Rating: [[7]]", True),
        ("Rating: [[1]]", True),
        ("Rating: [[10]]", True),
        ("The answer is correct and clear.\nRating: [[9]]", True),
        ("x" * 600 + "Rating: [[5]]", True),
        ("Ünïcode ✓ explanation\n\tRating: [[3]]", True),
        # invalid ratings
        ("Rating: [[11]]", False),
        ("Rating: [[0]]", False),
        ("Rating: [[5.5]]", False),
        ("Rating: [[ 5 ]]", False),
        ("Rating: [[-1]]", False),
        # no rating, or not in the required shape
        ("The answer is fine.", False),
        ("", False),
        ("[[7]]", False),
        ("Rating: 7", False),
        ("Rating: [[7]", False),
        # text after the rating
        ("Rating: [[7]] because", False),
        ("Rating: [[7]]\n", False),
        ("Rating: [[7]]Rating: [[8]]", False),
        # the explanation may not hold "[[" (a quoted rating) nor even "["
        ("I would say [[3]]. Rating: [[5]]", False),
        ("See [1]. Rating: [[5]]", False),
        # the explanation bound (600 characters)
        ("x" * 601 + "Rating: [[5]]", False),
    ],
)
def test_rating_grammar_admits_only_valid_replies(reply, admitted):
    grammar = grammar_for(RATING)
    assert matches(grammar, reply) is admitted
    if admitted:  # whatever the grammar admits, the strict parser reads as one valid score
        result = parse_rating_strict(reply)
        assert result.ok and 1 <= result.score <= 10


@pytest.mark.parametrize(
    ("reply", "admitted"),
    [
        ("A is better.\nFinal verdict: [[A]]", True),
        ("Final verdict: [[B]]", True),
        ("Final verdict: [[C]]", True),
        ("Final verdict: [[D]]", False),
        ("Final verdict: [[tie]]", False),
        ("Final verdict: [[AB]]", False),
        ("[[A]]", False),
        ("Final verdict: [[A]] and [[B]]", False),
    ],
)
def test_verdict_grammar(reply, admitted):
    assert matches(grammar_for(VERDICT), reply) is admitted
    if admitted:
        assert parse_verdict_strict(reply).ok


def test_bound_override_and_zero_bound():
    grammar = grammar_for(RATING, max_explanation_chars=5)
    assert matches(grammar, "12345Rating: [[2]]")
    assert not matches(grammar, "123456Rating: [[2]]")
    zero = grammar_for(RATING, max_explanation_chars=0)
    assert matches(zero, "Rating: [[2]]") and not matches(zero, " Rating: [[2]]")


def test_unusual_markers_are_escaped_not_interpreted():
    constraint = ReplyConstraint(
        kind="rating",
        choices=("ü", '"', "\\"),
        lead='Score "x" \\ é: ',
        open="<<",
        close="]|",
    )
    grammar = grammar_for(constraint)
    assert matches(grammar, 'fine\nScore "x" \\ é: <<ü]|')
    assert matches(grammar, 'Score "x" \\ é: <<"]|')
    assert matches(grammar, 'Score "x" \\ é: <<\\]|')
    assert not matches(grammar, 'Score "x" \\ é: <<u]|')
    assert not matches(grammar, 'a < b Score "x" \\ é: <<ü]|')  # "<" starts `open`
    assert "\n" not in grammar.rstrip("\n").split("\n")[0]  # one rule per line


@pytest.mark.parametrize(
    ("max_chars", "max_tokens", "expected"),
    [
        (600, None, 600),
        (600, 256, 256 - 14),  # "Rating: [[10]]" is the longest tail: 14 characters
        (100, 256, 100),
        (600, 14, 0),
        (600, 5, 0),
    ],
)
def test_explanation_budget_leaves_room_for_the_rating(max_chars, max_tokens, expected):
    constraint = RATING.model_copy(update={"max_explanation_chars": max_chars})
    assert longest_tail(constraint) == 14
    assert explanation_budget(constraint, max_tokens) == expected


@pytest.mark.parametrize(
    "update",
    [
        {"open": ""},
        {"choices": ()},
        {"choices": ("1", "")},
        {"lead": "[[ "},  # the lead would contain `open`
        {"lead": "Rating: ["},  # lead + open would hold `open` twice ("[[[")
        {"max_explanation_chars": -1},
    ],
)
def test_unusable_constraints_are_refused(update):
    with pytest.raises(ValueError):
        check_constraint(RATING.model_copy(update=update))
