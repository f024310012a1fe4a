"""Cleaning model answers before they are judged (the raw text is always kept too).

Reasoning models write `<think>...</think>` before their answer; the judge should grade the
answer, not the reasoning, so the blocks are removed (`--strip-think`, the default;
`--no-strip-think` judges the text as the model wrote it). A reply that ends inside an
unclosed leading `<think>` block (cut off by the token limit) has no answer at all: it is
judged as empty and flagged, so results count and list such turns instead of hiding them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_UNCLOSED_THINK = re.compile(r"^\s*<think>.*\Z", re.DOTALL)

#: `AnswerRecord.meta` key set on answers that ended inside an unclosed `<think>` block
UNCLOSED_THINK = "unclosed_think"


@dataclass(frozen=True)
class Cleaned:
    text: str
    unclosed_think: bool = False  # the reply ended inside its leading <think> block


def clean_answer(text: str, strip_think: bool = True) -> Cleaned:
    """The text the judge sees: `<think>` blocks removed unless `strip_think` is off; an
    unclosed leading block leaves an empty answer, flagged."""
    if not strip_think or "<think>" not in text:  # (most answers have no block at all)
        return Cleaned(text)
    cleaned = _THINK_BLOCK.sub("", text)
    if _UNCLOSED_THINK.match(cleaned):
        return Cleaned("", unclosed_think=True)
    return Cleaned(cleaned)


def strip_reasoning(text: str) -> str:
    """Remove `<think>...</think>` blocks; an unclosed leading block (cut off by the token
    limit) leaves no answer at all rather than letting the judge grade the reasoning."""
    return clean_answer(text).text
