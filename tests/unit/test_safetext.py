"""Lone surrogates in JSON files become U+FFFD whichever case their escape is written in,
while a file with no surrogate escape is read as it is (the fast path skips the repair)."""

from __future__ import annotations

import json

import pytest

from turnbench.safetext import may_hold_surrogates
from turnbench.textio import read_json, read_jsonl


def test_lone_surrogates_are_replaced_in_either_case(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"a": "x\\ud83dy"}\n{"b": ["\\uDC00"], "\\ud800key": 1}\n{"c": "\\ud83d\\ude00"}\n',
        "utf-8",
    )
    rows = [value for _, value in read_jsonl(path)]
    assert rows[0] == {"a": "x\ufffdy"}
    assert rows[1] == {"b": ["\ufffd"], "\ufffdkey": 1}
    assert rows[2] == {"c": "\U0001f600"}  # a proper pair is one character, kept
    single = tmp_path / "one.json"
    single.write_text('{"t": "\\uDBFF!"}', "utf-8")
    assert read_json(single) == {"t": "\ufffd!"}


def test_text_without_a_surrogate_escape_skips_the_repair(tmp_path):
    row = {"text": "caf\u00e9 \u2014 \\ud (an escaped backslash)", "n": [1, 2]}
    line = json.dumps(row, ensure_ascii=False)
    assert not may_hold_surrogates(json.dumps({"t": "caf\u00e9"}))
    assert may_hold_surrogates(line)  # the escaped backslash: a false alarm, still correct
    path = tmp_path / "rows.jsonl"
    path.write_text(line + "\n", "utf-8")
    assert read_jsonl(path) == [(1, row)]


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("get_user_details", "get_user_details"),
        ("get\x00user\u202edetails", "get^@user\\u202edetails"),  # NUL, right-to-left override
        ("a\u200bb\ufeff", "a\\u200bb\\ufeff"),  # zero width, byte order mark
        ("tab\tand\nline", "tab^Iand^Jline"),  # (no newline in a name)
        ("nb\u00a0sp", "nb\\u00a0sp"),  # a space that looks like another
        ("tag\U000e0041", "tag\\U000e0041"),
        ("lone\ud800", "lone\\ud800"),
        ("caf\u00e9 \u05e9\u05dc", "caf\u00e9 \u05e9\u05dc"),  # letters of any script stay
    ],
)
def test_a_name_never_checked_is_shown_with_what_it_hides_made_visible(name, shown):
    """Issue 44, class 6: a tool's name, which the model chose, shows every character the
    names rule refuses as its escape (6f7f1ce had no such rule: it put them on the page)."""
    from turnbench.safetext import name_problem, visible_name

    assert visible_name(name) == shown
    assert name_problem(shown) is None  # (what is shown would pass as a name)
