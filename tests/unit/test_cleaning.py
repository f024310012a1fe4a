"""`<think>` stripping: the same text as the reference regular expressions for every input,
in time linear in the answer's length (a hostile answer of unclosed tags blocked the event
loop for 25 s at 140 KB)."""

from __future__ import annotations

import random
import re
import time

import pytest

from turnbench import cleaning
from turnbench.cleaning import clean_answer

# the regular expressions cleaning used before it was made linear: the semantics to keep
_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_UNCLOSED_THINK = re.compile(r"^\s*<think>.*\Z", re.DOTALL)
PIECES = ["<think>", "</think>", "<think", "think>", "</", "a", " ", "\n", "\t", "\u00a0",
          "\u2028", "\x1c", "x y", "<", ">"]  # fmt: skip


def reference(text: str) -> tuple[str, bool]:
    if "<think>" not in text:
        return text, False
    cleaned = _THINK_BLOCK.sub("", text)
    if _UNCLOSED_THINK.match(cleaned):
        return "", True
    return cleaned, False


@pytest.mark.parametrize("seed", range(40))
def test_the_same_text_as_the_reference_expressions(seed):
    rng = random.Random(seed)
    for _ in range(250):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        cleaned = clean_answer(text)
        assert (cleaned.text, cleaned.unclosed_think) == reference(text), repr(text)
        assert cleaning.strip_think_blocks(text) == _THINK_BLOCK.sub("", text), repr(text)


def _seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        clean_answer(text)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("prefix", ["", "An answer first, then "])
def test_many_unclosed_tags_are_cleaned_in_linear_time(prefix):
    size = 140_000
    hostile = prefix + "<think>" * (size // 7)
    cleaned = clean_answer(hostile)
    # a leading unclosed block leaves no answer; after an answer, an unclosed tag is text
    expected = ("", True) if not prefix else (hostile, False)
    assert (cleaned.text, cleaned.unclosed_think) == expected
    small = _seconds(hostile)
    assert small < 0.2, f"{small:.3f} s for a 140 KB answer of unclosed <think> tags"
    doubled = _seconds(prefix + "<think>" * (2 * size // 7))
    # linear: twice the text takes about twice the time (quadratic would take 4x)
    assert doubled < 3 * max(small, 0.002), (small, doubled)


def test_many_closed_blocks_are_cleaned_in_linear_time():
    text = "<think>r</think> answer " * 20_000  # 480 KB, 20,000 blocks
    assert clean_answer(text).text == "answer " * 20_000
    assert _seconds(text) < 0.2
