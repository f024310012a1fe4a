"""What a run can keep (`textio.storable_problem`): the one rule a value a tool stores is
checked against, so that the log, results.json, the canonical hash, the report and the
viewer can all write and read it back (issue 44, class 1); and JSON read as RFC 8259
defines it (`textio.loads_strict_json`), the reader of a tool call's arguments."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from pydantic import BaseModel

from turnbench.textio import (
    KEPT_DEPTH,
    MAX_DEPTH,
    NestingError,
    loads_json,
    loads_strict_json,
    storable_problem,
)


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


class _Kept(BaseModel):
    value: Any


def _kept_everywhere(value: Any) -> None:
    """What the run does with a kept value: pydantic's JSON (the log), the standard
    library's UTF-8 text (results.json, the canonical hash), read back by the readers that
    hold files to MAX_DEPTH, inside five levels of wrapping (results.json's diff)."""
    line = _Kept(value=value).__pydantic_serializer__.to_json(_Kept(value=value))
    text = json.dumps([[[[{"found": value}]]]], ensure_ascii=False, allow_nan=False)
    hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert loads_json(text) is not None and json.loads(line)


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -1.5, "", "caf\u00e9 \U0001f600", {"a": [1, {"b": None}]},
     pytest.param(10**4300 - 1, id="4300 digits"), pytest.param(-(10**4300 - 1), id="-4300"),
     nested(KEPT_DEPTH)],
)  # fmt: skip
def test_what_the_rule_keeps_every_writer_and_reader_takes(value):
    assert storable_problem(value) is None
    _kept_everywhere(value)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        pytest.param(10**4300, "an integer of more than 4300 digits", id="4301 digits"),
        pytest.param(-(10**4300), "an integer of more than 4300 digits", id="-4301"),
        (float("nan"), "the number nan, which JSON lacks"),
        (float("-inf"), "the number -inf, which JSON lacks"),
        ("a\ud800", "the lone surrogate U+D800, which is no Unicode text"),
        ({"\udfff": 1}, "the lone surrogate U+DFFF, which is no Unicode text"),
        ({1: "x"}, "the key 1, which is no text"),
        ((1, 2), "a tuple, which is no JSON value"),
        (nested(KEPT_DEPTH + 1), f"a value nested more than {KEPT_DEPTH} levels deep"),
        (nested(100_000), f"a value nested more than {KEPT_DEPTH} levels deep"),
        ({"deep": [{"ok": 1}, ["\ud83d"]]}, "the lone surrogate U+D83D"),
    ],
)  # fmt: skip
def test_what_the_rule_refuses_and_why(value, why):
    """Each breaks a writer or a reader of the run: json.dumps raises on the integer,
    pydantic writes NaN as null, UTF-8 cannot hold a lone surrogate, a reader refuses a
    file nested more than MAX_DEPTH deep (and pydantic's writer stops near 255)."""
    problem = storable_problem(value)
    assert problem is not None and problem.startswith(why)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("NaN", "NaN is not a JSON number"),
        ('{"a": [Infinity]}', "Infinity is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("1e400", "1e400 is not a JSON number a float holds"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested more than {MAX_DEPTH}"),
        ("[" * 50_000 + "]" * 50_000, f"nested more than {MAX_DEPTH}"),
        ('{"a": ', "Expecting value"),
    ],
)
def test_strict_json_refuses_what_python_alone_reads(text, error):
    with pytest.raises(ValueError, match=error) as caught:
        loads_strict_json(text)
    if "nested" in error:
        assert isinstance(caught.value, NestingError)


def test_strict_json_keeps_what_it_reads_as_written():
    """Valid JSON reads as Python reads it, lone surrogates kept (the rule that keeps
    values decides about them, with a reason the model is shown)."""
    text = '{"a": [1, 2.5, -0.0, 1e300, "\\ud800"], "b": ' + "[" * 99 + "]" * 99 + "}"
    assert loads_strict_json(text) == json.loads(text)
