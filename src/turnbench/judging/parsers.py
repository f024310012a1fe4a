"""Extracting a rating, a verdict or a checklist from a judge's reply.

Two families: `compat` parsers reproduce the reference implementations exactly (first match
wins, no range check), so published numbers can be reproduced; `strict` parsers refuse any
reply that is not unambiguous, which makes the judge re-asked instead of silently trusting,
say, a "[[10]]" that the judge merely quoted from the answer it was grading.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Sequence
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
    #: the reply cannot be read, and the reference implementation would send the same
    #: request again (not a re-ask: no follow-up text); see `ReplyFormat.resend_tries`
    retry: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


Parser = Callable[[str], ParseResult]

# FastChat llm_judge/common.py: `\[\[(\d+\.?\d*)\]\]` and `\[(\d+\.?\d*)\]`, written so that
# they match the same text with one way to split a run of digits (FastChat's form tries
# every split between `\d+` and `\d*`: a judge reply of "[[" and 10,000 digits took 2.7 s)
_FASTCHAT_RATING = re.compile(r"\[\[(\d+(?:\.\d*)?)\]\]")
_FASTCHAT_RATING_BACKUP = re.compile(r"\[(\d+(?:\.\d*)?)\]")
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


# -- checklists ------------------------------------------------------------------------------
# A checklist reply is JSON: {"judge result": [{"judgement": "Yes" | "No", "reason": ...}, ...]},
# one entry per item of the check list, in order, possibly inside a ```json fence.
ChecklistParser = Callable[[str, int], ParseResult]
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
VERDICT_KEY = "judge result"
JUDGEMENT_KEY = "judgement"


def _entries_error(entries: object, items: int) -> str | None:
    if not isinstance(entries, list):
        return f"'{VERDICT_KEY}' is not a list"
    if len(entries) != items:
        return f"{len(entries)} verdict(s) for {items} check-list item(s)"
    return None


def parse_checklist_strict(text: str, items: int) -> ParseResult:
    """One "Yes" or "No" per check-list item, nothing ambiguous.

    The JSON object is the whole reply or the content of its only ``` fence; it must hold
    exactly `items` verdicts, each a "Yes" or "No" (case and surrounding spaces ignored,
    recorded as "Yes"/"No"). Anything else is unreadable and re-asked.
    """
    blocks = _FENCE.findall(text)
    if len(blocks) > 1:
        return ParseResult(error=f"{len(blocks)} fenced blocks; expected one JSON object")
    candidate = blocks[0] if blocks else text
    try:
        value = json.loads(candidate.strip())
    except (json.JSONDecodeError, RecursionError) as error:
        message = getattr(error, "msg", "too deeply nested")
        return ParseResult(error=f"not valid JSON ({message})")
    if not isinstance(value, dict) or VERDICT_KEY not in value:
        return ParseResult(error=f"no '{VERDICT_KEY}' list in the JSON object")
    entries = value[VERDICT_KEY]
    problem = _entries_error(entries, items)
    if problem is not None:
        return ParseResult(error=problem)
    verdicts = []
    for number, entry in enumerate(entries, start=1):
        said = entry.get(JUDGEMENT_KEY) if isinstance(entry, dict) else None
        word = said.strip().lower() if isinstance(said, str) else None
        if word not in ("yes", "no"):
            shown = json.dumps(said, ensure_ascii=False)[:40] if said is not None else "missing"
            return ParseResult(error=f"item {number}: judgement {shown} is not Yes or No")
        verdicts.append("Yes" if word == "yes" else "No")
    return ParseResult(checklist=tuple(verdicts))


def parse_checklist_compat(text: str, items: int) -> ParseResult:
    """StructFlowBench's `evaluate.py`: strip, cut a leading "```json" and a trailing "```",
    `json.loads`. Unparseable JSON is final (the reference records it and moves on); a reply
    without a list of exactly `items` verdicts is sent again (`retry`), as the reference
    sends the same request again. Verdict strings are kept as the judge wrote them (only
    "Yes" counts as met when scored)."""
    body = text.strip()
    if body.startswith("```json"):
        body = body[7:]
    if body.endswith("```"):
        body = body[:-3]
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, RecursionError) as error:
        message = getattr(error, "msg", "too deeply nested")
        return ParseResult(error=f"not valid JSON ({message})")
    entries = value.get(VERDICT_KEY) if isinstance(value, dict) else None
    problem = (
        f"no '{VERDICT_KEY}' list in the JSON object"
        if entries is None
        else _entries_error(entries, items)
    )
    if problem is not None:
        return ParseResult(error=problem, retry=True)
    verdicts = []
    for number, entry in enumerate(entries, start=1):
        said = entry.get(JUDGEMENT_KEY) if isinstance(entry, dict) else None
        if not isinstance(said, str):
            return ParseResult(error=f"item {number} has no '{JUDGEMENT_KEY}' string")
        verdicts.append(said)
    return ParseResult(checklist=tuple(verdicts))


def checklist_score(verdicts: Sequence[str], weights: Sequence[float] | None = None) -> float:
    """The weighted share of items met ("Yes", exactly; "No", "N/A" or anything else is not
    met). Equal weights without `weights`; 0.0 when the weights sum to zero, as
    StructFlowBench's `score.py` scores such a turn."""
    shares = list(weights) if weights is not None else [1.0] * len(verdicts)
    if len(shares) != len(verdicts):
        raise ValueError(f"{len(shares)} weights for {len(verdicts)} verdicts")
    total = sum(shares)
    if total == 0:
        return 0.0
    return sum(w for w, v in zip(shares, verdicts, strict=True) if v == "Yes") / total


CHECKLIST_PARSERS: dict[str, ChecklistParser] = {
    "checklist-strict": parse_checklist_strict,
    "checklist-compat": parse_checklist_compat,
}

#: The scores a parser can produce; a logged score outside them was not produced by it.
SCORE_RANGES: dict[str, tuple[float, float]] = {
    "rating-strict": (1.0, 10.0),
    **{name: (0.0, 1.0) for name in CHECKLIST_PARSERS},
}

PARSERS: dict[str, Parser] = {
    "rating-strict": parse_rating_strict,
    "rating-fastchat": parse_rating_fastchat,
    "rating-opencompass": parse_rating_opencompass,
    "verdict-strict": parse_verdict_strict,
    "verdict-fastchat": parse_verdict_fastchat,
}
