"""tau-bench's `calculate` tool without eval: a small parser of arithmetic.

Upstream evaluates the expression with Python after checking that it holds only digits,
`+ - * / ( ) .` and spaces, and answers `str(round(float(value), 2))`, or `Error: <the
exception>`. This module reads the same language as Python reads those characters (number
literals, `+ - * / // **` with their precedence and associativity, unary signs, `()` the
empty tuple, `...` the ellipsis, and a call such as `2(3)`, which Python accepts and then
refuses to call) and computes with Python's own values and operators, so the results and the
errors of arithmetic ("division by zero", "float division by zero", "'int' object is not
callable") are the ones upstream gives. As in Python, the whole expression is read before
anything is computed (a syntax error wins over a division by zero), and the syntax errors
are Python's for the common mistakes (unmatched or unclosed parenthesis, leading zeros, a
missing operator inside parentheses, too deep a nesting, nothing at all), "invalid syntax"
otherwise. A power whose result would be astronomically large is refused instead of
computed (upstream would spend minutes on it). The parser nests only with the parentheses
(at most 200, Python's own limit) and computes without recursion.
"""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Callable
from typing import Any

ALLOWED = frozenset("0123456789+-*/(). ")
#: Python's limit of nested parentheses
MAX_NESTING = 200
#: the largest integer power computed (bits of the result); beyond it, an error
MAX_POWER_BITS = 100_000
_NUMBER = re.compile(r"\d+\.?\d*|\.\d+")
_OPERATORS = ("**", "//", "...", "+", "-", "*", "/", "(", ")", ".")
_ADDITIVE, _MULTIPLICATIVE = ("+", "-"), ("*", "/", "//")
_LEADING_ZEROS = (
    "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal "
    "integers"
)
_HUGE_LITERAL = (
    " - Consider hexadecimal for huge integer literals to avoid decimal conversion limits."
)


class _Syntax(Exception):
    """The expression is not one Python reads (the message as Python words it). A
    tokenizer's error Python finds `anywhere` on the line replaces the parser's; the others
    only where the parser reads them."""

    def __init__(
        self, message: str | None = None, line: int = 1, *, anywhere: bool = False
    ) -> None:
        message = message or "invalid syntax"
        super().__init__(f"{message} (<string>, line {line})")
        self.anywhere = anywhere


def _power(base: Any, exponent: Any) -> Any:
    whole = type(base) is int and type(exponent) is int and exponent > 0
    if whole and abs(base) > 1 and exponent * abs(base).bit_length() > MAX_POWER_BITS:
        raise OverflowError("result too large")
    return base**exponent


def _call(callee: Any, star: str, argument: Any = None) -> Any:
    """A call, `2(3)`, `2(*())` or `2(**x)`: nothing here can be called, so Python's error
    (its check of a starred argument first)."""
    kind = type(argument).__name__
    if star == "*" and not isinstance(argument, tuple):
        raise TypeError(f"{callee} argument after * must be an iterable, not {kind}")
    if star == "**":
        raise TypeError(f"{callee} argument after ** must be a mapping, not {kind}")
    raise TypeError(f"'{type(callee).__name__}' object is not callable")


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "**": _power,
}
_UNARY: dict[str, Callable[[Any], Any]] = {"-": operator.neg, "+": operator.pos}


def _tokens(expression: str) -> tuple[list[tuple[str, Any]], _Syntax | None]:
    """The tokens before the first error Python's tokenizer would raise, and that error
    (raised when the parser reaches it, or after any other syntax error, as Python does)."""
    tokens: list[tuple[str, Any]] = []
    depth, at, end = 0, 0, len(expression)
    while at < end:
        char = expression[at]
        if char == " ":
            at += 1
            continue
        number = _NUMBER.match(expression, at)
        if number is not None:
            text = number.group()
            at = number.end()
            if "." in text:
                tokens.append(("value", float(text)))
                continue
            if text[0] == "0" and text.strip("0"):
                return tokens, _Syntax(_LEADING_ZEROS, anywhere=True)
            if len(text) > sys.get_int_max_str_digits():
                huge = f"value has {len(text)} digits"
                return tokens, _Syntax(
                    f"Exceeds the limit ({sys.get_int_max_str_digits()} digits) for integer "
                    f"string conversion: {huge}; use sys.set_int_max_str_digits() to increase "
                    f"the limit{_HUGE_LITERAL}"
                )
            tokens.append(("value", int(text)))
            continue
        symbol = next(op for op in _OPERATORS if expression.startswith(op, at))
        at += len(symbol)
        if symbol == "(":
            depth += 1
            if depth > MAX_NESTING:
                return tokens, _Syntax("too many nested parentheses", anywhere=True)
        elif symbol == ")":
            if depth == 0:
                return tokens, _Syntax("unmatched ')'", anywhere=True)
            depth -= 1
        tokens.append(("value", ...) if symbol == "..." else ("op", symbol))
    return tokens, _Syntax("'(' was never closed") if depth else None


class _Parser:
    """Python's grammar for these tokens, read into postfix steps:

    expression := term (("+" | "-") term)*
    term       := factor (("*" | "/" | "//") factor)*
    factor     := ("+" | "-")* power
    power      := primary ("**" factor)?
    primary    := (value | "(" ")" | "(" expression ")") call*
    call       := "(" (("*" | "**")? expression)? ")"
    value      := number | "..."
    """

    def __init__(self, tokens: list[tuple[str, Any]], error: _Syntax | None) -> None:
        self.tokens = tokens
        self.error = error  # (met when the parser reads past the last good token)
        self.at = 0
        self.depth = 0  # the parentheses open where the parser is
        self.steps: list[tuple[str, Any]] = []
        self.probing = False  # (reading the second of two expressions side by side)

    def peek(self, ahead: int = 0) -> tuple[str, Any] | None:
        """The next token (or the one `ahead` of it); None at the end. Reading where the
        tokenizer stopped raises its error, as Python's parser does."""
        if self.at + ahead < len(self.tokens):
            return self.tokens[self.at + ahead]
        if self.error is not None:
            raise self.error
        return None

    def is_op(self, *symbols: str) -> bool:
        token = self.peek()
        return token is not None and token[0] == "op" and token[1] in symbols

    def take(self, *symbols: str) -> None:
        if not self.is_op(*symbols):
            raise _Syntax
        self.at += 1

    def expression(self) -> None:
        """Binary operators by precedence (left-associative), with a stack, not recursion."""
        self.factor()
        pending: list[str] = []
        while self.is_op(*_ADDITIVE, *_MULTIPLICATIVE):
            symbol = self.tokens[self.at][1]
            self.at += 1
            rank = symbol in _MULTIPLICATIVE
            while pending and (pending[-1] in _MULTIPLICATIVE) >= rank:
                self.steps.append(("binary", pending.pop()))
            pending.append(symbol)
            self.factor()
        self.steps.extend(("binary", symbol) for symbol in reversed(pending))
        token = self.peek()
        if token is not None and token[0] == "value":
            self.side_by_side()

    def side_by_side(self) -> None:
        """A value right after an expression: an error. Python reads on as far as the
        second expression goes (so a tokenizer error there is the one it reports), then
        hints at a missing comma inside parentheses."""
        if self.probing:
            raise _Syntax
        mark, depth, self.probing = len(self.steps), self.depth, True
        try:
            self.expression()
        except _Syntax as error:
            if error is self.error:
                raise
        finally:
            self.probing, self.depth = False, depth
            del self.steps[mark:]
        raise _Syntax("invalid syntax. Perhaps you forgot a comma?" if self.depth else None)

    def factor(self) -> None:
        """Signs, then a chain of powers (right-associative: `2**-3**2` is 2**(-(3**2))),
        read in a loop and folded from the right."""
        signs: list[list[str]] = [self.signs()]
        self.primary()
        while self.is_op("**"):
            self.at += 1
            signs.append(self.signs())
            self.primary()
        for inner in reversed(signs[1:]):
            self.steps.extend(("unary", sign) for sign in reversed(inner))
            self.steps.append(("binary", "**"))
        self.steps.extend(("unary", sign) for sign in reversed(signs[0]))

    def signs(self) -> list[str]:
        found = []
        while self.is_op("+", "-"):
            found.append(self.tokens[self.at][1])
            self.at += 1
        return found

    def primary(self) -> None:
        """An atom (a value, `()`, or an expression in parentheses), then any calls."""
        token = self.peek()
        if token is None:
            raise _Syntax
        if token[0] == "value":
            self.at += 1
            self.steps.append(token)
        else:
            self.parenthesized()
        while self.is_op("("):
            self.call()
        if self.is_op("."):  # (Python reads one more token, for a name, before failing)
            self.peek(1)

    def parenthesized(self) -> None:
        """`(` expression `)`, or `()` (the empty tuple). A starred expression is Python's
        error here, once it reads whole."""
        self.take("(")
        self.depth += 1
        if self.is_op(")"):
            self.steps.append(("value", ()))
        elif self.is_op("*", "**"):
            star = self.tokens[self.at][1]
            self.at += 1
            if self.probing and star == "**":
                raise _Syntax  # (Python reads no further here unless it looks for hints)
            self.expression()
            if self.probing:
                raise _Syntax
            self.take(")")
            double = "double " if star == "**" else ""
            raise _Syntax(f"cannot use {double}starred expression here")
        else:
            self.expression()
        self.take(")")
        self.depth -= 1

    def call(self) -> None:
        """`(` [`*` | `**`] expression `)` or `()` after a primary."""
        self.take("(")
        self.depth += 1
        star = ""
        if self.is_op(")"):
            self.steps.append(("call", None))
        else:
            if self.is_op("*", "**"):
                star = self.tokens[self.at][1]
                self.at += 1
            self.expression()
            self.steps.append(("call", star))
        self.take(")")
        self.depth -= 1


def _parse(expression: str) -> list[tuple[str, Any]]:
    tokens, error = _tokens(expression)
    if not tokens and error is None:
        raise _Syntax(line=0)  # (Python's words for nothing at all)
    parser = _Parser(tokens, error)
    try:
        parser.expression()
        if parser.peek() is not None:
            raise _Syntax
    except _Syntax as found:
        if error is not None and error.anywhere and found is not error:
            raise error from None  # (Python checks the rest of the line before it reports)
        raise
    return parser.steps


def _compute(steps: list[tuple[str, Any]]) -> Any:
    stack: list[Any] = []
    for kind, what in steps:
        if kind == "value":
            stack.append(what)
        elif kind == "unary":
            stack.append(_UNARY[what](stack.pop()))
        elif kind == "binary":
            right = stack.pop()
            stack.append(_BINARY[what](stack.pop(), right))
        elif what is None:
            stack.append(_call(stack.pop(), ""))
        else:
            argument = stack.pop()
            stack.append(_call(stack.pop(), what, argument))
    return stack.pop()


def calculate(expression: str) -> str:
    """The `calculate` tool's observation for `expression`."""
    if not all(char in ALLOWED for char in expression):
        return "Error: invalid characters in expression"
    try:
        return str(round(float(_compute(_parse(expression))), 2))
    except (_Syntax, ArithmeticError, TypeError, ValueError) as error:
        return f"Error: {error}"
