"""tau-bench's `calculate` without eval: it answers as upstream's `eval` of the expression
does, values and error messages alike. Hand-checked cases, then random expressions over the
allowed characters against Python's own reading of them (`compile` to a syntax tree only:
nothing is run; the tree is computed by the small walker below)."""

from __future__ import annotations

import ast
import operator
import random
import sys
import warnings
from typing import Any

import pytest

from turnbench.benchmarks.tau_bench.calculator import _power, calculate

NEVER_CLOSED = "Error: '(' was never closed (<string>, line 1)"
COMMA = "Error: invalid syntax. Perhaps you forgot a comma? (<string>, line 1)"
SYNTAX = "Error: invalid syntax (<string>, line 1)"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("3131.1 + 4777.75 + 367.38", "8276.23"),  # a golden task's
        ("2 * ((350 - 122) + (499 - 127))", "1200.0"),  # another
        ("2 + 2", "4.0"), ("1/3", "0.33"), ("(1+2)*3", "9.0"), ("-2**2", "-4.0"),
        ("2**-1", "0.5"), ("2 ** 3 ** 2", "512.0"), ("2**-3**2", "0.0"), ("7//2", "3.0"),
        (" 1.5 + .5", "2.0"), ("5.", "5.0"), ("00", "0.0"), ("01.5", "1.5"),
        ("1-2-3", "-4.0"), ("8/4/2", "1.0"), ("--1", "1.0"),
        ("10/0", "Error: division by zero"), ("10.0/0", "Error: float division by zero"),
        ("5/0 +", SYNTAX),  # read whole before anything is computed
        ("", "Error: invalid syntax (<string>, line 0)"),
        ("  ", "Error: invalid syntax (<string>, line 0)"),
        ("2 * (3", NEVER_CLOSED), ("(1 2", NEVER_CLOSED), ("1 2 (", NEVER_CLOSED),
        ("1 2)", "Error: unmatched ')' (<string>, line 1)"),
        ("(1 2)", COMMA), ("((1)2)", COMMA), ("(1)2", SYNTAX), ("1 2", SYNTAX),
        ("007", "Error: leading zeros in decimal integer literals are not permitted; use an "
                "0o prefix for octal integers (<string>, line 1)"),
        ("(" * 201 + "1" + ")" * 201, "Error: too many nested parentheses (<string>, line 1)"),
        ("(" * 200 + "1" + ")" * 200, "1.0"),
        ("(*1)", "Error: cannot use starred expression here (<string>, line 1)"),
        ("()", "Error: float() argument must be a string or a real number, not 'tuple'"),
        ("...", "Error: float() argument must be a string or a real number, not 'ellipsis'"),
        ("(-8)**0.5", "Error: float() argument must be a string or a real number, not "
                      "'complex'"),
        ("-()", "Error: bad operand type for unary -: 'tuple'"),
        ("1 (2)", "Error: 'int' object is not callable"),
        ("1(*2)", "Error: 1 argument after * must be an iterable, not int"),
        ("10.0**400", "Error: (34, 'Numerical result out of range')"),
        ("import os", "Error: invalid characters in expression"),
        ("9**9**9", "Error: result too large"),  # upstream would compute for minutes
        ("-" * 5000 + "1", "1.0"), ("2**" * 5000 + "1", "Error: result too large"),
        ("+".join("1" * 5000), "5000.0"),  # (longer than the recursion limit: no recursion)
    ],
)  # fmt: skip
def test_calculate_answers_as_upstreams_eval(expression, expected):
    assert calculate(expression) == expected


_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: _power,
}


def _value(node: ast.AST) -> Any:
    """What Python computes for a tree of these characters (calls only ever fail)."""
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left), _value(node.right)
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand)
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.Tuple) and not node.elts:
        return ()
    assert isinstance(node, ast.Call), ast.dump(node)
    callee = _value(node.func)
    for argument in node.args:
        if isinstance(argument, ast.Starred):
            value = _value(argument.value)
            if not isinstance(value, tuple):
                kind = type(value).__name__
                raise TypeError(f"{callee} argument after * must be an iterable, not {kind}")
        else:
            _value(argument)
    for keyword in node.keywords:
        kind = type(_value(keyword.value)).__name__
        raise TypeError(f"{callee} argument after ** must be a mapping, not {kind}")
    raise TypeError(f"'{type(callee).__name__}' object is not callable")


def pythons(expression: str) -> str:
    """Upstream's observation: `str(round(float(eval(expression)), 2))` or the error."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ("'int' object is not callable; perhaps ...")
            tree = compile(expression.lstrip(" \t"), "<string>", "eval", ast.PyCF_ONLY_AST)
    except SyntaxError as error:
        return f"Error: {error}"
    try:
        return str(round(float(_value(tree)), 2))
    except (ArithmeticError, TypeError, ValueError) as error:
        return f"Error: {error}"


PIECES = ["0", "1", "2", "9", "07", "00", "1.5", ".5", "5.", "(", ")", "()", "+", "-", "*",
          "/", "//", "**", " ", "...", "."]  # fmt: skip


def test_random_expressions_answer_as_pythons_own_reading():
    """Exact for every value and runtime error; the words of a syntax error are Python
    3.11's (other versions word a few differently: there only the kind must agree)."""
    draws = random.Random(37)
    exact_syntax = sys.version_info[:2] == (3, 11)
    for _ in range(5_000):
        length = draws.randint(0, 12)
        if draws.random() < 0.5:
            expression = "".join(draws.choice("0123456789+-*/(). ") for _ in range(length))
        else:
            expression = "".join(draws.choice(PIECES) for _ in range(length))
        found, expected = calculate(expression), pythons(expression)
        if exact_syntax or "(<string>, line" not in expected:
            assert found == expected, expression
        else:
            assert "(<string>, line" in found, expression
