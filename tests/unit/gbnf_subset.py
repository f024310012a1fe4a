"""A matcher for the subset of GBNF (llama.cpp's grammar format) that reply grammars use.

Independent of the grammar builder: it parses the grammar text (rules, "literals" with
escapes, [classes] and [^negated classes], ( groups ), alternatives, ? * + {m,n}) and turns
the non-recursive grammar into one Python regular expression, so a test can ask whether a
reply is in the grammar's language.
"""

from __future__ import annotations

import re

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX = {"x": 2, "u": 4, "U": 8}


class GrammarError(ValueError):
    pass


def _char(text: str, i: int) -> tuple[str, int]:
    """One possibly escaped character at text[i]; returns it and the next index."""
    if text[i] != "\\":
        return text[i], i + 1
    kind = text[i + 1]
    if kind in _HEX:
        digits = text[i + 2 : i + 2 + _HEX[kind]]
        if len(digits) != _HEX[kind] or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise GrammarError(f"bad escape at {text[i:]!r}")
        return chr(int(digits, 16)), i + 2 + _HEX[kind]
    if kind in _ESCAPES:
        return _ESCAPES[kind], i + 2
    raise GrammarError(f"unknown escape at {text[i:]!r}")


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _alternatives(text: str, i: int, refs: set[str]) -> tuple[str, int]:
    options = []
    while True:
        sequence, i = _sequence(text, i, refs)
        options.append(sequence)
        i = _skip(text, i)
        if i < len(text) and text[i] == "|":
            i += 1
            continue
        return "(?:" + "|".join(options) + ")", i


def _sequence(text: str, i: int, refs: set[str]) -> tuple[str, int]:
    parts = []
    while True:
        i = _skip(text, i)
        if i >= len(text) or text[i] in "|)":
            return "".join(parts), i
        c = text[i]
        if c == '"':
            i += 1
            literal = ""
            while text[i] != '"':
                char, i = _char(text, i)
                literal += char
            i += 1
            atom = "(?:" + re.escape(literal) + ")"
        elif c == "[":
            i += 1
            negated = text[i] == "^"
            if negated:
                i += 1
            members = ""
            while text[i] != "]":
                low, i = _char(text, i)
                if text[i] == "-" and text[i + 1] != "]":
                    high, i = _char(text, i + 1)
                    members += re.escape(low) + "-" + re.escape(high)
                else:
                    members += re.escape(low)
            i += 1
            atom = "[" + ("^" if negated else "") + members + "]"
        elif c == "(":
            atom, i = _alternatives(text, i + 1, refs)
            i = _skip(text, i)
            if text[i] != ")":
                raise GrammarError("missing )")
            i += 1
        elif re.match(r"[a-zA-Z]", c):
            name = re.match(r"[a-zA-Z0-9-]+", text[i:]).group(0)
            refs.add(name)
            atom = "(?:{{" + name + "}})"
            i += len(name)
        else:
            raise GrammarError(f"unexpected {text[i:]!r}")
        if i < len(text) and text[i] in "?*+":
            atom += text[i]
            i += 1
        elif i < len(text) and text[i] == "{":
            end = text.index("}", i)
            bounds = text[i + 1 : end]
            if not re.fullmatch(r"\d+(,\d*)?", bounds):
                raise GrammarError(f"bad repetition {{{bounds}}}")
            atom = "(?:" + atom + "){" + bounds + "}"
            i = end + 1
        parts.append(atom)


def to_regex(grammar: str, root: str = "root") -> str:
    """The grammar as one regex (rules inlined); refuses recursion and unknown rules."""
    rules: dict[str, tuple[str, set[str]]] = {}
    for line in grammar.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, body = line.partition("::=")
        if not sep:
            raise GrammarError(f"not a rule: {line!r}")
        refs: set[str] = set()
        pattern, end = _alternatives(body, 0, refs)
        if _skip(body, end) != len(body):
            raise GrammarError(f"trailing text in rule {name.strip()!r}")
        rules[name.strip()] = (pattern, refs)

    def expand(name: str, seen: tuple[str, ...]) -> str:
        if name in seen:
            raise GrammarError(f"recursive rule {name!r}")
        if name not in rules:
            raise GrammarError(f"undefined rule {name!r}")
        pattern, refs = rules[name]
        for ref in refs:
            pattern = pattern.replace("{{" + ref + "}}", expand(ref, (*seen, name)))
        return pattern

    return expand(root, ())


def matches(grammar: str, text: str) -> bool:
    return re.fullmatch(to_regex(grammar), text, re.DOTALL) is not None
