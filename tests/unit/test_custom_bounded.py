"""Deterministic checks with a time limit: a check that cannot finish (catastrophic
backtracking in a regex or a schema pattern, uniqueItems over thousands of objects) fails
with its reason after CHECK_SECONDS instead of hanging results, and every other check keeps
its outcome."""

from __future__ import annotations

import json
import time

import pytest

from turnbench.benchmarks.custom.bounded import CHECK_SECONDS, BoundedChecks
from turnbench.benchmarks.custom.checks import run_check
from turnbench.benchmarks.custom.spec import Check

TIMED_OUT = f"timed out after {CHECK_SECONDS:g} s"
HOSTILE = [
    (Check("regex", r"^(\w+\s?)*$", "regex"), "a" * 40 + "!"),
    (Check("not_regex", r"^(\w+\s?)*$", "not_regex"), "a" * 40 + "!"),
    (Check("json_schema", {"type": "string", "pattern": "^(a+)+$"}, "pattern"),
     json.dumps("a" * 40 + "!")),
    (Check("json_schema", {"type": "array", "uniqueItems": True}, "unique"),
     json.dumps([{"k": i} for i in range(5000)])),
]  # fmt: skip
NORMAL = [
    (Check("regex", r"\b450\s*ml\b", "ml"), "Milk: 450 ml"),
    (Check("not_regex", r"forc", "forc"), "Never brute-force it."),
    (Check("json_schema", {"type": "object", "required": ["a"]}, "schema"), '{"a": 1}'),
    (Check("json_schema", {"type": "array", "uniqueItems": True}, "unique"), "[1, 2, 1]"),
    (Check("contains", "Sintra", "contains"), "Day 3: Sintra."),
    (Check("max_words", 3, "words"), "one two three four"),
]


@pytest.mark.parametrize(("check", "answer"), HOSTILE, ids=[c.name for c, _ in HOSTILE])
def test_a_check_that_cannot_finish_fails_with_its_reason(check, answer):
    checks = BoundedChecks()
    start = time.perf_counter()
    [outcome] = checks.run_all([(check, answer)])
    took = time.perf_counter() - start
    assert outcome.passed is False and TIMED_OUT in outcome.detail
    assert took < CHECK_SECONDS + 8, f"{took:.1f} s"  # the limit, plus starting the worker
    # remembered: the score tables built again for the same results do not wait again
    start = time.perf_counter()
    assert checks.run_all([(check, answer)]) == [outcome]
    assert time.perf_counter() - start < 0.5 and checks.started == 1


def test_checks_after_one_that_timed_out_keep_their_outcomes():
    requests = [NORMAL[0], HOSTILE[0], *NORMAL[1:], HOSTILE[3], NORMAL[0]]
    checks = BoundedChecks()
    outcomes = checks.run_all(requests)
    expected = [run_check(check, answer) for check, answer in NORMAL]
    assert outcomes[0] == outcomes[-1] == expected[0]
    assert outcomes[2 : 2 + len(NORMAL) - 1] == expected[1:]
    assert [outcomes[1].passed, outcomes[-2].passed] == [False, False]
    assert TIMED_OUT in outcomes[1].detail and TIMED_OUT in outcomes[-2].detail
    # a new worker after the first stopped check; none after the second (the last check's
    # outcome was remembered from the first)
    assert checks.started == 2


def test_a_check_that_raises_in_the_worker_is_a_failed_check():
    [outcome] = BoundedChecks().run_all([(Check("regex", 5, "broken"), "text")])
    assert outcome.passed is False and outcome.detail == "the check could not run (TypeError)"
