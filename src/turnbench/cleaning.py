"""Cleaning model answers before they are judged (the raw text is always kept too)."""

from __future__ import annotations

import re

_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_UNCLOSED_THINK = re.compile(r"^\s*<think>.*\Z", re.DOTALL)


def strip_reasoning(text: str) -> str:
    """Remove `<think>...</think>` blocks; an unclosed leading block (cut off by the token
    limit) leaves no answer at all rather than letting the judge grade the reasoning."""
    if "<think>" not in text:  # (both patterns need it; most answers have none)
        return text
    cleaned = _THINK_BLOCK.sub("", text)
    if _UNCLOSED_THINK.match(cleaned):
        return ""
    return cleaned
