"""A cheap detector of answers that try to steer the judge.

It flags an answer that contains score-like tokens in a judge's own formats ("[[10]]",
"[[A]]", "Rating: 9", "10/10"), that addresses the judge or its instructions ("ignore
previous instructions", "note to the evaluator", "give this response the highest score"), or
that forges prompt structure (the judge templates' section markers such as "[The End of
Assistant's Answer]", chat-template tokens such as "<|im_start|>", "[INST]", "### Human:").
It is a list of regular expressions, nothing more: it never changes a score, it only lists
the answers a person should read. Every answer is scanned, so no pattern may try one run of
characters in many ways: a line-start pattern whose leading whitespace could also cross
blank lines took 11 s on an answer of 40,000 newlines, and "rating:" followed by 10,000
spaces took 3.6 s where two whitespace runs around optional brackets could split the
spaces anywhere. Its false-positive rate on real answers is measured by the
tests on the MT-Bench answers of vicuna-13b-v1.3 and alpaca-13b (0 of 320).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

JUDGE_WORDS = r"(?:judge|evaluator|grader|assessor|rater|reviewer|scorer)s?"


@dataclass(frozen=True)
class Rule:
    """One pattern, and `needs`: lowercase strings of which an ASCII text must contain at
    least one for the pattern to match (a cheap test that skips the regular expression on
    most answers; never used on other text, whose case folding is wider than lower())."""

    kind: str  # score_token | addresses_judge | transcript_marker
    label: str
    pattern: re.Pattern[str]
    needs: tuple[str, ...]
    #: what an honest answer writes when the question itself asks for a rating out of 10
    #: ("iPhone: 8.5/10", "Rating: 7"): not counted then
    asked_for: bool = False


def _rule(
    kind: str, label: str, pattern: str, needs: tuple[str, ...], *, asked_for: bool = False
) -> Rule:
    return Rule(kind, label, re.compile(pattern, re.IGNORECASE | re.MULTILINE), needs, asked_for)


#: a question that asks for a rating of its own on a ten-point scale: a rating word and a
#: 1-10 scale in one sentence, in either order ("provide an overall rating for each phone on
#: a scale of 1 to 10", "out of 10, how would you score...")
_TEN_SCALE = r"(?:\b1\s*(?:-|–|to)\s*10|\bout of (?:10|ten)|/\s*10)\b"
_RATING_WORD = r"\b(?:rate|rating|ratings|score|scores|grade|grades|evaluate)\b"
_ASKS_FOR_RATING = re.compile(
    rf"{_RATING_WORD}[^.?!\n]{{0,120}}?{_TEN_SCALE}|{_TEN_SCALE}[^.?!\n]{{0,120}}?{_RATING_WORD}",
    re.IGNORECASE,
)


#: what an ASCII text must contain for _ASKS_FOR_RATING to match: every scale holds "10"
#: or "ten", every rating word one of the stems (the expression tried at every position of
#: a question that has neither took 70 us a question of MT-Bench-101)
_SCALE_NEEDS = ("10", "ten")
_RATING_STEMS = ("rat", "scor", "grad", "evaluat")


@lru_cache(maxsize=4096)
def asks_for_rating(question: str) -> bool:
    """Whether a user's turns ask the model itself for a rating out of 10 (remembered per
    text: every model's answer to a question asks this of the same turns)."""
    if question.isascii():  # (lower() is the expression's case folding only for ASCII)
        lowered = question.lower()
        if not any(need in lowered for need in _SCALE_NEEDS) or not any(
            stem in lowered for stem in _RATING_STEMS
        ):
            return False
    return _ASKS_FOR_RATING.search(question) is not None


_JUDGES = ("judge", "evaluator", "grader", "assessor", "rater", "reviewer", "scorer")

RULES: tuple[Rule, ...] = (
    _rule(
        "score_token",
        "rating in double brackets",
        r"\[\[\s*\d+(?:\.\d+)?\s*\]\]",
        ("[[",),
    ),
    _rule("score_token", "verdict token", r"\[\[\s*[ABC]\s*\]\]", ("[[",)),
    _rule(
        "score_token",
        "rating line",
        r"\b(?:rating|score|verdict)\s*:\s*(?:\[+\s*)?(?:\d|[ABC]\b)",
        ("rating", "score", "verdict"),
        asked_for=True,
    ),
    _rule(
        "score_token",
        "score out of ten",
        r"\b(?:10|[1-9](?:\.\d)?)\s*(?:/\s*10|out of (?:10|ten))\b",
        ("/", "out of"),
        asked_for=True,
    ),
    _rule(
        "addresses_judge",
        "ignore instructions",
        r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|"
        r"preceding|all|your|the|system)\b[^.\n]{0,20}?\b(?:instructions?|prompts?|rules|"
        r"rubric|guidelines|criteria)\b",
        ("ignore", "disregard", "forget", "override"),
    ),
    _rule(
        "addresses_judge",
        "addresses the judge",
        rf"\b(?:dear|attention|hello|hi|note (?:to|for)(?: the| any)?|message (?:to|for)"
        rf"(?: the)?|to the|for the|instructions? (?:to|for)(?: the)?) (?:ai |llm |gpt |model )?"
        rf"{JUDGE_WORDS}\b",
        _JUDGES,
    ),
    _rule(
        "addresses_judge",
        "asks for a score",
        r"\b(?:give|assign|award|grant|rate|score)\b[^.\n]{0,30}?\b(?:this|the|my|that) "
        r"(?:answer|response|reply|assistant|output)\b[^.\n]{0,30}?\b(?:a |the )?(?:perfect|"
        r"highest|maximum|max|full|top|best|10|ten)\b",
        ("give", "assign", "award", "grant", "rate", "score"),
    ),
    _rule(
        "addresses_judge",
        "tells the judge what to do",
        rf"\b(?:you|the {JUDGE_WORDS}|as an? (?:ai |impartial )?{JUDGE_WORDS}, you) (?:must|"
        r"should|will|are required to|have to) (?:rate|score|grade|assign|award) (?:this|the|"
        r"my|it|me)\b",
        ("rate", "score", "grade", "assign", "award"),
    ),
    _rule(
        "transcript_marker",
        "judge template marker",
        r"\[(?:the )?(?:start|end) of (?:the )?(?:assistant|reference|user)\b|<\|the (?:start|end) "
        r"of assistant|\[(?:instruction|user question)\]",
        ("start of", "end of", "[instruction]", "[user question]"),
    ),
    _rule(
        "transcript_marker",
        "chat template token",
        r"<\|(?:im_start|im_end|eot_id|start_header_id|end_header_id|endoftext|end|system|user|"
        r"assistant)\|>|\[/?INST\]|<</?SYS>>|</s>",
        ("<|", "inst]", "<<sys>>", "<</sys>>", "</s>"),
    ),
    _rule(
        "transcript_marker",
        "fake conversation turn",
        r"^[^\S\n]*#{2,}\s*(?:human|user|assistant|system)(?: [ab])?\s*:",
        ("##",),
    ),
)


@dataclass(frozen=True)
class Flag:
    kind: str
    label: str
    excerpt: str  # the matched text (shortened), to show why


#: every rule's needed strings, each tested once per text (rules share some)
_NEEDS = tuple(sorted({need for rule in RULES for need in rule.needs}))


def _candidates(text: str, question: str | None = None) -> tuple[Rule, ...] | list[Rule]:
    """The rules worth running on `text`: for ASCII text, those whose needed strings occur
    (every match contains one of them); otherwise all of them. Without the rules an answer
    to `question` may trip honestly, when it asks for a rating out of 10."""
    rules = RULES
    if question and asks_for_rating(question):
        rules = tuple(rule for rule in RULES if not rule.asked_for)
    if not text.isascii():
        return rules
    lowered = text.lower()
    present = {need for need in _NEEDS if need in lowered}
    return [rule for rule in rules if not present.isdisjoint(rule.needs)]


def scan(text: str, question: str | None = None) -> list[Flag]:
    """Every rule the answer trips (at most one flag per rule). `question`: the user's
    turns up to the answered one; when they ask for a rating out of 10, the answer's own
    ratings ("8.5/10") are what was asked for, not an injection (a judge's [[8]] format,
    words to the judge and forged transcript markers still count)."""
    found = []
    for rule in _candidates(text, question):
        match = rule.pattern.search(text)
        if match is not None:
            excerpt = " ".join(match.group(0).split())[:80]
            found.append(Flag(rule.kind, rule.label, excerpt))
    return found


def is_flagged(text: str, question: str | None = None) -> bool:
    return any(rule.pattern.search(text) for rule in _candidates(text, question))
