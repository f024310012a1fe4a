"""Extracting a rating or a verdict from a judge's reply.

Two families: `compat` parsers reproduce the reference implementations exactly (first match
wins, no range check), so published numbers can be reproduced; `strict` parsers refuse any
reply that is not unambiguous, which makes the judge re-asked instead of silently trusting,
say, a "[[10]]" that the judge merely quoted from the answer it was grading.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ParseResult:
    """What a parser read from one reply: exactly one of a score (single grading), a
    positional pairwise verdict ("A", "B", "tie") or a checklist (one answer per item,
    "Yes", "No" or the judge's own word), or an error saying why nothing could be read."""

    score: float | None = None
    verdict: str | None = None
    checklist: tuple[str, ...] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


Parser = Callable[[str], ParseResult]

# FastChat llm_judge/common.py
_FASTCHAT_RATING = re.compile(r"\[\[(\d+\.?\d*)\]\]")
_FASTCHAT_RATING_BACKUP = re.compile(r"\[(\d+\.?\d*)\]")
# OpenCompass mtbench101 post-processing
_OPENCOMPASS_RATING = re.compile(r"\[([0-9]+)\]")
_STRICT_RATING = re.compile(r"\[\[\s*([0-9]{1,3}(?:\.[0-9]{1,3})?)\s*\]\]")
_LONGEST_NUMBER = 32  # characters; a longer "rating" is no rating (and no crash)


def _literal_number(text: str) -> float | None:
    """A matched rating as the reference code reads it (`ast.literal_eval`, `int`), or None
    where the reference would have crashed: "07", non-ASCII digits, a 400-digit number."""
    if len(text) > _LONGEST_NUMBER or not text.isascii():
        return None
    try:
        value = float(ast.literal_eval(text))
    except (SyntaxError, ValueError, TypeError, OverflowError, MemoryError):
        return None
    return value if math.isfinite(value) else None


def parse_rating_fastchat(text: str) -> ParseResult:
    match = _FASTCHAT_RATING.search(text) or _FASTCHAT_RATING_BACKUP.search(text)
    if match is None:
        return ParseResult(error="no [[rating]] or [rating] found")
    value = _literal_number(match.group(1))
    if value is None:
        return ParseResult(error=f"rating {match.group(1)[:12]!r} is not a number")
    return ParseResult(score=value)


def parse_rating_opencompass(text: str) -> ParseResult:
    match = _OPENCOMPASS_RATING.search(text)
    if match is None:
        return ParseResult(error="no [digits] found")
    digits = match.group(1)
    if len(digits) > _LONGEST_NUMBER or not digits.isascii():
        return ParseResult(error=f"rating {digits[:12]!r} is not a number")
    return ParseResult(score=float(int(digits)))


def parse_rating_strict(text: str) -> ParseResult:
    values = [float(value) for value in _STRICT_RATING.findall(text)]
    distinct = sorted(set(values))
    if not distinct:
        return ParseResult(error="no [[rating]] found")
    if len(distinct) > 1:
        shown = ", ".join(f"[[{value:g}]]" for value in distinct)
        return ParseResult(error=f"{len(distinct)} different ratings ({shown})")
    score = distinct[0]
    if not 1.0 <= score <= 10.0:
        return ParseResult(error=f"rating {score:g} is outside 1-10")
    return ParseResult(score=score)


_VERDICT = {"A": "A", "B": "B", "C": "tie"}
_STRICT_VERDICT = re.compile(r"\[\[\s*([ABC])\s*\]\]")


def parse_verdict_fastchat(text: str) -> ParseResult:
    """FastChat's substring order: "[[A]]" wins over "[[B]]", which wins over "[[C]]"."""
    for token in ("A", "B", "C"):
        if f"[[{token}]]" in text:
            return ParseResult(verdict=_VERDICT[token])
    return ParseResult(error="no [[A]], [[B]] or [[C]] found")


def parse_verdict_strict(text: str) -> ParseResult:
    found = sorted(set(_STRICT_VERDICT.findall(text)))
    if not found:
        return ParseResult(error="no [[A]], [[B]] or [[C]] found")
    if len(found) > 1:
        return ParseResult(error="several verdicts (" + ", ".join(f"[[{v}]]" for v in found) + ")")
    return ParseResult(verdict=_VERDICT[found[0]])


#: The scores a parser can produce; a logged score outside them was not produced by it.
SCORE_RANGES: dict[str, tuple[float, float]] = {"rating-strict": (1.0, 10.0)}

PARSERS: dict[str, Parser] = {
    "rating-strict": parse_rating_strict,
    "rating-fastchat": parse_rating_fastchat,
    "rating-opencompass": parse_rating_opencompass,
    "verdict-strict": parse_verdict_strict,
    "verdict-fastchat": parse_verdict_fastchat,
}
