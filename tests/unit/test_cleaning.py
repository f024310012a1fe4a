"""`<think>` stripping: the same text as the reference regular expressions for every input,
in time linear in the answer's length (a hostile answer of unclosed tags blocked the event
loop for 25 s at 140 KB)."""

from __future__ import annotations

import random
import re

import pytest

from tests.linear import assert_linear
from turnbench.judging import cleaning
from turnbench.judging.cleaning import clean_answer

# the regular expressions cleaning used before it was made linear: the semantics to keep
_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_UNCLOSED_THINK = re.compile(r"^\s*<think>.*\Z", re.DOTALL)
PIECES = ["<think>", "</think>", "<think", "think>", "</", "a", " ", "\n", "\t", "\u00a0",
          "\u2028", "\x1c", "x y", "<", ">", "</think", "/think>"]  # fmt: skip


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
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        cleaned = clean_answer(text)
        assert (cleaned.text, cleaned.unclosed_think) == reference(text), repr(text)
        assert cleaning.strip_think_blocks(text) == _THINK_BLOCK.sub("", text), repr(text)


@pytest.mark.parametrize("prefix", ["", "An answer first, then "])
def test_many_unclosed_tags_are_cleaned_in_linear_time(prefix):
    size = 140_000
    hostile = prefix + "<think>" * (size // 7)
    cleaned = clean_answer(hostile)
    # a leading unclosed block leaves no answer; after an answer, an unclosed tag is text
    expected = ("", True) if not prefix else (hostile, False)
    assert (cleaned.text, cleaned.unclosed_think) == expected
    assert_linear(clean_answer, lambda n: prefix + "<think>" * (n // 7), size)


def test_many_closed_blocks_are_cleaned_in_linear_time():
    text = "<think>r</think> answer " * 20_000  # 480 KB, 20,000 blocks
    assert clean_answer(text).text == "answer " * 20_000
    assert_linear(clean_answer, lambda n: "<think>r</think> answer " * (n // 24), 480_000)
    # the largest reply a backend accepts is 64 MB: 8 MB of the smallest blocks stays fast
    assert_linear(clean_answer, lambda n: "<think></think>" * (n // 15), 8_000_000, 0.5)
