"""Untrusted text made safe to store and to show.

Text from outside (answers, judge replies, dataset rows, server error bodies, file names,
model names) is data. Two things can still go wrong with data: a lone surrogate (a valid
JSON escape such as "\\ud83d" that is not valid Unicode) cannot be written as UTF-8 and
would crash the writer of the log, and control characters (ANSI escapes, OSC 8 hyperlinks,
carriage returns) would act on a terminal. `fix_surrogates` handles the first where text
enters; `plain` the second where text is shown in a terminal.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile(r"[\ud800-\udfff]")
# C0 controls but newline and tab, DEL, C1 controls (CSI, OSC...), and the bidi controls
# that can make text read differently from what it is
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def fix_surrogates(text: str) -> str:
    """Replace lone surrogates with U+FFFD (the replacement character)."""
    return _SURROGATE.sub("\ufffd", text)


def may_hold_surrogates(json_text: str) -> bool:
    """Whether parsing `json_text` can give a lone surrogate: only a \\uD800-\\uDFFF escape
    makes one (decoded UTF-8 holds none), and each such escape starts with \\ud or \\uD.
    A false alarm (an escaped backslash before "ud") only costs a `fix_tree` for nothing."""
    return "\\ud" in json_text or "\\uD" in json_text


def fix_tree(value: Any) -> Any:
    """`fix_surrogates` on every string (keys included) of a parsed JSON value."""
    if isinstance(value, str):
        return fix_surrogates(value)
    if isinstance(value, list):
        return [fix_tree(item) for item in value]
    if isinstance(value, dict):
        return {fix_tree(key): fix_tree(item) for key, item in value.items()}
    return value


def _visible(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    if code < 0x20:
        return "^" + chr(code + 0x40)  # ESC -> ^[, BEL -> ^G
    return f"\\u{code:04x}"


def plain(value: Any, *, keep_newlines: bool = True) -> str:
    """Text safe to print on a terminal: control characters shown as ^[ or \\uXXXX, never
    executed; surrogates replaced. Newlines (and tabs) stay unless `keep_newlines` is off."""
    text = fix_surrogates("" if value is None else str(value))
    text = _CONTROL.sub(_visible, text)
    if not keep_newlines:
        text = text.replace("\n", " ").replace("\t", " ")
    return text
