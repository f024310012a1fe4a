"""tau-bench's `calculate` tool without eval: a small parser of arithmetic.

Upstream evaluates the expression with Python after checking that it holds only digits,
`+ - * / ( ) .` and spaces, and answers `str(round(float(value), 2))`, or `Error: <the
exception>`. This parser accepts the same language (Python's number literals and its `+ -
* / // **` with their precedence and associativity, unary signs) and computes with
Python's own numbers and operators, so the results and the arithmetic errors ("division by
zero", "float division by zero") are the ones upstream gives; a malformed expression is
"invalid syntax", as Python says of most. A power whose result would be astronomically
large is refused instead of computed (upstream would spend minutes on it).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

ALLOWED = frozenset("0123456789+-*/(). ")
#: the largest integer power computed (bits of the result); beyond it, an error
MAX_POWER_BITS = 100_000
_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+)|(\*\*|//|[-+*/()]))")
_LEADING_ZERO = re.compile(r"0\d")


class _Syntax(Exception):
    """The expression is not arithmetic."""


def _power(base: float, exponent: float) -> float:
    whole = isinstance(base, int) and isinstance(exponent, int) and exponent > 0
    if whole and abs(base) > 1 and exponent * abs(base).bit_length() > MAX_POWER_BITS:
        raise OverflowError("result too large")
    return base**exponent  # type: ignore[no-any-return]


_BINARY: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
}


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise _Syntax
        token = self.tokens[self.at]
        self.at += 1
        return token

    def expression(self) -> float:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            value = _BINARY[op](value, self.term())
        return value

    def term(self) -> float:
        value = self.unary()
        while self.peek() in ("*", "/", "//"):
            op = self.take()[1]
            value = _BINARY[op](value, self.unary())
        return value

    def unary(self) -> float:
        if self.peek() in ("+", "-"):
            op = self.take()[1]
            value = self.unary()
            return -value if op == "-" else +value
        return self.power()

    def power(self) -> float:
        base = self.atom()
        if self.peek() == "**":
            self.take()
            return _power(base, self.unary())  # (right-associative, binds a signed power)
        return base

    def atom(self) -> float:
        kind, text = self.take()
        if kind == "number":
            if "." in text:
                return float(text)
            if _LEADING_ZERO.match(text) and text.strip("0"):
                raise _Syntax  # (Python refuses 007)
            return int(text)
        if text == "(":
            value = self.expression()
            if self.take()[1] != ")":
                raise _Syntax
            return value
        raise _Syntax


def _tokens(expression: str) -> list[tuple[str, str]]:
    tokens = []
    at = 0
    stripped = expression.rstrip()
    while at < len(stripped):
        found = _TOKEN.match(stripped, at)
        if found is None:
            raise _Syntax
        number, op = found.groups()
        tokens.append(("number", number) if number is not None else ("op", op))
        at = found.end()
    return tokens


def calculate(expression: str) -> str:
    """The `calculate` tool's observation for `expression`."""
    if not all(char in ALLOWED for char in expression):
        return "Error: invalid characters in expression"
    try:
        parser = _Parser(_tokens(expression))
        value = parser.expression()
        if parser.at != len(parser.tokens):
            raise _Syntax
        return str(round(float(value), 2))
    except _Syntax:
        return "Error: invalid syntax (<string>, line 1)"
    except (ArithmeticError, ValueError) as error:
        return f"Error: {error}"
