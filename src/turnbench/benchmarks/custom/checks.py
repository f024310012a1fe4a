"""Deterministic checks of an answer: no judge, the same verdict every time.

Each check reads the answer as the judge would see it (after `<think>` blocks are removed).
Words are whitespace-separated tokens; characters are counted in the answer with surrounding
whitespace removed. JSON checks read the answer (surrounding whitespace removed) as one JSON
value, or the content of a single ``` fence when the answer is exactly that fence.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from turnbench.benchmarks.custom.spec import Check

_WHOLE_FENCE = re.compile(r"\A```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)\n?```\Z", re.DOTALL)


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    detail: str  # why, in a few words (shown in results)


def _json_value(answer: str) -> tuple[bool, Any, str]:
    text = answer.strip()
    fenced = _WHOLE_FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        return True, json.loads(text), ""
    except (ValueError, RecursionError) as error:  # (a 5,000-digit number is a ValueError)
        reason = getattr(error, "msg", None) or (
            "too deeply nested" if isinstance(error, RecursionError) else str(error)[:80]
        )
        return False, None, f"not JSON ({reason})"


@cache
def _regex(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _no_retrieval(uri: str) -> Any:
    """A schema may refer only to itself: nothing is fetched while answers are checked."""
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)


def _schema_validator(schema: Any) -> Any:
    import jsonschema
    from referencing import Registry

    cls = jsonschema.validators.validator_for(schema)
    registry: Registry[Any] = Registry(retrieve=_no_retrieval)
    return cls(schema, format_checker=cls.FORMAT_CHECKER, registry=registry)


def run_check(check: Check, answer: str) -> CheckResult:
    """Whether `answer` passes `check`."""
    kind, value = check.kind, check.value
    if kind in ("regex", "not_regex"):
        found = _regex(value, check.flags).search(answer) is not None
        passed = found if kind == "regex" else not found
        return CheckResult(passed, "matches" if found else "no match")
    if kind in ("contains", "not_contains"):
        haystack, needle = (
            (answer, value) if check.case_sensitive else (answer.casefold(), value.casefold())
        )
        found = needle in haystack
        return CheckResult(found if kind == "contains" else not found,
                           "found" if found else "not found")  # fmt: skip
    if kind in ("max_words", "min_words"):
        words = len(answer.split())
        passed = words <= value if kind == "max_words" else words >= value
        return CheckResult(passed, f"{words} words")
    if kind in ("max_chars", "min_chars"):
        chars = len(answer.strip())
        passed = chars <= value if kind == "max_chars" else chars >= value
        return CheckResult(passed, f"{chars} characters")
    if kind == "valid_json":
        ok, _, why = _json_value(answer)
        return CheckResult(ok, "valid JSON" if ok else why)
    if kind == "json_schema":
        ok, parsed, why = _json_value(answer)
        if not ok:
            return CheckResult(False, why)
        try:
            error = next(iter(_schema_validator(value).iter_errors(parsed)), None)
        except Exception as problem:  # a $ref that cannot be resolved without fetching it
            return CheckResult(False, f"the schema cannot be used: {problem}"[:200])
        if error is None:
            return CheckResult(True, "matches the schema")
        at = "/".join(str(p) for p in error.absolute_path) or "the value"
        return CheckResult(False, f"{at}: {error.message}"[:200])
    if kind == "exact":
        given, expected = (answer.strip(), value.strip()) if check.strip else (answer, value)
        if not check.case_sensitive:
            given, expected = given.casefold(), expected.casefold()
        passed = given == expected
        return CheckResult(passed, "equal" if passed else "different")
    raise ValueError(f"unknown check kind {kind!r}")
