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
import unicodedata
from typing import Any

_SURROGATE = re.compile(r"[\ud800-\udfff]")
# C0 controls but newline and tab, DEL, C1 controls (CSI, OSC...), and the bidi controls
# that can make text read differently from what it is
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


# in a name, newline and tab are controls too: they would break a table row or a log line
_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: characters that draw nothing (or a blank) but are no format character by their Unicode
#: category: Hangul fillers, the braille blank, the combining grapheme joiner, Khmer's
#: invisible vowels, Mongolian free variation selectors, variation selectors
_INVISIBLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)
#: Unicode categories never allowed in a name: format characters (zero-width spaces and
#: joiners, the byte order mark, bidi marks, tag characters, U+180E), line and paragraph
#: separators, surrogates; and spaces other than the plain one (Zs, checked apart)
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: the longest name a file may have on common file systems, in bytes of UTF-8
MAX_FILE_NAME_BYTES = 255


def _name_character_problem(char: str) -> str | None:
    code = ord(char)
    if _NAME_CONTROL.match(char):
        return f"holds the control character U+{code:04X}"
    if 0xE0000 <= code <= 0xE007F:
        return f"holds the tag character U+{code:04X} (invisible)"
    category = unicodedata.category(char)
    if category in ("Zl", "Zp"):
        return f"holds the line or paragraph separator U+{code:04X}"
    if category == "Zs" and char != " ":
        return f"holds the space U+{code:04X}, which looks like another (only U+0020 is allowed)"
    if category in _REFUSED_CATEGORIES or _INVISIBLE.match(char):
        return f"holds the invisible character U+{code:04X}"
    return None


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a model's, a judge's or an annotator's name, or None when it can.

    Names come from users and from files (a file's name, a row's field) and are printed in
    tables, logged and used as keys; an empty one is dropped by whatever groups by name, and
    a control character (a newline, an escape) breaks the table it is printed in. A character
    that draws nothing (a zero-width space, a byte order mark, a tag character), a bidi mark
    and a space that is not U+0020 make two different names look the same
    (`vicuna-13b-v1.3` and `vicuna-13b-v1.3` + U+200B would be two rows of one ranking that
    no reader can tell apart). Refusing them where a name enters is simpler than escaping
    them everywhere it is shown.
    """
    if not name.strip():
        return "is empty"
    if name.isascii():  # (the common case: only ASCII controls can be wrong)
        found = _NAME_CONTROL.search(name)
        return None if found is None else f"holds the control character U+{ord(found.group(0)):04X}"
    for char in name:
        problem = _name_character_problem(char)
        if problem is not None:
            return problem
    return None


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return "^" + chr(code + 0x40)  # NUL -> ^@, ESC -> ^[
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible_name(name: str) -> str:
    """A name that was never checked where it entered (a tool's name in a model's reply,
    which the model under test chose) as it can be shown: every character `name_problem`
    would refuse (controls, NUL, bidi overrides such as U+202E, characters that draw
    nothing, spaces that look like another, lone surrogates) written as its escape (^@,
    \\u202e), so the name reads as what it is, not as something it mimics."""
    if name.isascii() and _NAME_CONTROL.search(name) is None:
        return name  # (the common case)
    return "".join(
        _escaped(char) if _name_character_problem(char) is not None else char for char in name
    )


def file_name_problem(name: str) -> str | None:
    """Why `name` (a whole file name, extension included) cannot be written, or None."""
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\x00" in name:
        return "not a file name"
    size = len(name.encode("utf-8", errors="surrogatepass"))
    if size > MAX_FILE_NAME_BYTES:
        return f"too long for a file name ({size} bytes, at most {MAX_FILE_NAME_BYTES})"
    return None


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
