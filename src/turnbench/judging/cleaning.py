"""Cleaning model answers before they are judged (the raw text is always kept too).

Reasoning models write `<think>...</think>` before their answer; the judge should grade the
answer, not the reasoning, so the blocks are removed (`--strip-think`, the default;
`--no-strip-think` judges the text as the model wrote it). A reply that ends inside an
unclosed leading `<think>` block (cut off by the token limit) has no answer at all: it is
recorded as empty and flagged, and it is not judged: results count and list such turns,
each a failed turn with UNCLOSED_REASON, instead of averaging in a judgment of an empty
answer.

The answer is untrusted text and this runs in the event loop as each reply arrives, so it
takes time linear in the answer's length (about 0.06 s for 8 MB of tiny blocks, so under a
second for the largest reply a backend accepts, 64 MB): the expression never searches again
from every unclosed `<think>` (that took 25 s for a 140 KB answer of unclosed tags, and the
replies waiting meanwhile timed out and were paid for twice).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN = "<think>"
CLOSE = "</think>"
_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_SPACE = re.compile(r"\s*")  # the whitespace after a closing tag (removed with the block)
_LEADING_OPEN = re.compile(r"\s*<think>")

#: `AnswerRecord.meta` key set on answers that ended inside an unclosed `<think>` block
UNCLOSED_THINK = "unclosed_think"
#: why a turn whose answer ended inside <think> has no score (its failure reason in results)
UNCLOSED_REASON = "answer cut off inside <think>: not judged"


@dataclass(frozen=True)
class Cleaned:
    text: str
    unclosed_think: bool = False  # the reply ended inside its leading <think> block


def strip_think_blocks(text: str) -> str:
    """`text` without its `<think>...</think>` blocks (each with the whitespace after it).

    Blocks are matched left to right, each `<think>` with the first `</think>` after it, by
    the non-greedy expression, but only over the text up to the last `</think>`: there
    every `<think>` has a `</think>` after it, so each match scans its own block once and
    none fails (a failing one scanned to the end of the text from every unclosed `<think>`:
    quadratic). After the last `</think>` no block can close, and the text stays as written,
    less the whitespace after that `</think>` when it ended a block.
    """
    last = text.rfind(CLOSE)
    if last < 0:
        return text
    final_open = text.rfind(OPEN, 0, last)  # (a <think> cannot overlap a </think>)
    if final_open < 0:
        return text
    head_end = last + len(CLOSE)
    head = _THINK_BLOCK.sub("", text[:head_end])
    # the block of the final <think> (or the block holding it) ends at the first </think>
    # after it: when that is the last one, its trailing whitespace goes with the block
    if text.find(CLOSE, final_open + len(OPEN)) == last:
        head_end = _SPACE.match(text, head_end).end()  # type: ignore[union-attr]
    return head + text[head_end:]


def clean_answer(text: str, strip_think: bool = True) -> Cleaned:
    """The text the judge sees: `<think>` blocks removed unless `strip_think` is off; an
    unclosed leading block leaves an empty answer, flagged."""
    if not strip_think or OPEN not in text:  # (most answers have no block at all)
        return Cleaned(text)
    cleaned = strip_think_blocks(text)
    if _LEADING_OPEN.match(cleaned):
        return Cleaned("", unclosed_think=True)
    return Cleaned(cleaned)


def strip_reasoning(text: str) -> str:
    """Remove `<think>...</think>` blocks; an unclosed leading block (cut off by the token
    limit) leaves no answer at all rather than letting the judge grade the reasoning."""
    return clean_answer(text).text
