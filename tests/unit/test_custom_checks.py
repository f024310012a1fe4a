"""Every deterministic check kind of the user-defined benchmark format, on hand-made answers."""

from __future__ import annotations

import re

import pytest

from turnbench.benchmarks.custom.checks import run_check
from turnbench.benchmarks.custom.spec import Check

SCHEMA = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
}


def check(kind: str, value, **options) -> Check:
    return Check(kind=kind, value=value, name=kind, **options)


@pytest.mark.parametrize(
    ("spec", "answer", "passed"),
    [
        # regex / not_regex (search anywhere; flags)
        (check("regex", r"\b450\s*ml\b"), "Milk: 450 ml", True),
        (check("regex", r"\b450\s*ml\b"), "Milk: 450 ML", False),
        (check("regex", r"\b450\s*ml\b", flags=re.IGNORECASE), "Milk: 450 ML", True),
        (check("regex", r"^b$", flags=re.MULTILINE), "a\nb\nc", True),
        (check("regex", r"^b$"), "a\nb\nc", False),
        (check("not_regex", r"brute[- ]?forc"), "Never brute-force it.", False),
        (check("not_regex", r"brute[- ]?forc"), "Ask your neighbour.", True),
        # contains / not_contains, case-sensitive unless told
        (check("contains", "Sintra"), "Day 3: Sintra.", True),
        (check("contains", "Sintra"), "day 3: sintra.", False),
        (check("contains", "BELÉM", case_sensitive=False), "then belém", True),
        (check("not_contains", "aircrack", case_sensitive=False), "Use AirCrack-ng", False),
        (check("not_contains", "aircrack"), "Use AirCrack-ng", True),
        # word and character counts (characters of the stripped answer)
        (check("max_words", 3), "one two  three", True),
        (check("max_words", 3), "one two three four", False),
        (check("min_words", 2), "one\ntwo", True),
        (check("min_words", 2), "   one   ", False),
        (check("max_chars", 2), "  OK \n", True),
        (check("max_chars", 2), "OK!", False),
        (check("min_chars", 3), " ab ", False),
        (check("min_chars", 3), "abc", True),
        (check("max_words", 0), "", True),
        # JSON: the whole answer, or the content of a fence that is the whole answer
        (check("valid_json", True), ' {"a": 1} ', True),
        (check("valid_json", True), '```json\n{"a": 1}\n```', True),
        (check("valid_json", True), "```\n[1, 2]\n```", True),
        (check("valid_json", True), 'Here: {"a": 1}', False),
        (check("valid_json", True), '```json\n{"a": 1}\n```\nDone.', False),
        (check("json_schema", SCHEMA), '{"name": "Ada", "age": 36}', True),
        (check("json_schema", SCHEMA), '{"name": "Ada", "age": "36"}', False),
        (check("json_schema", SCHEMA), '{"name": "Ada"}', False),
        (check("json_schema", SCHEMA), "not json", False),
        (check("json_schema", {"const": 3}), "3", True),
        # exact: stripped and case-sensitive unless told
        (check("exact", "OK"), " OK\n", True),
        (check("exact", "OK"), "ok", False),
        (check("exact", "OK", case_sensitive=False), "ok", True),
        (check("exact", "OK", strip=False), " OK", False),
        (check("exact", "3"), "3.", False),
    ],
)
def test_check_kinds(spec, answer, passed):
    assert run_check(spec, answer).passed is passed


@pytest.mark.parametrize(
    ("spec", "answer", "detail"),
    [
        (check("max_words", 2), "a b c", "3 words"),
        (check("min_chars", 10), " abc ", "3 characters"),
        (check("valid_json", True), "{", "not JSON"),
        (check("json_schema", SCHEMA), '{"name": 1, "age": 2}', "name: 1 is not of type 'string'"),
    ],
)
def test_checks_say_why(spec, answer, detail):
    assert detail in run_check(spec, answer).detail


def test_a_schema_never_fetches_what_it_refers_to(monkeypatch):
    import urllib.request

    def refuse(*args, **kwargs):
        raise AssertionError("a schema reference was fetched")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    local = {"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}
    assert run_check(check("json_schema", local), "3").passed
    remote = {"$ref": "http://127.0.0.1:9/schema.json"}  # refused when the file is read
    result = run_check(check("json_schema", remote), "3")
    assert not result.passed and "cannot be used" in result.detail


@pytest.mark.parametrize("kind", ["valid_json", "json_schema"])
def test_an_answer_with_a_5000_digit_number_is_not_json(kind):
    value = True if kind == "valid_json" else {"type": "integer"}
    outcome = run_check(Check(kind, value, kind), "1" * 5000)  # raised ValueError before
    assert outcome.passed is False and outcome.detail.startswith("not JSON (")
