"""A GBNF grammar (llama.cpp's grammar format) that forces a judge reply into shape.

A small judge (the embedded 135M model) rarely writes "[[7]]" on its own. Decoding under
this grammar makes every reply a bounded explanation followed by exactly one well-formed
rating or verdict, and nothing after it:

    <explanation: at most N characters, none of them the first character of `open`>
    <lead><open><one of choices><close>

Keeping the first character of `open` (e.g. "[") out of the explanation is stricter than
"never contains `open`", and it is what makes the bound exact with llama.cpp's repetition
operator: a single character class repeated at most N times. It also means no other
"[[...]]" can appear before the rating, so the strict parser finds exactly one.

Pure string building, no llama.cpp import: the grammar is checked by unit tests with a
small matcher, and by llama.cpp itself in the integration tests.
"""

from __future__ import annotations

from turnbench.types import ReplyConstraint


def gbnf_char(char: str) -> str:
    """One character as a GBNF escape: valid both in a "literal" and in a [class]."""
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02X}"
    if point < 0x10000:
        return f"\\u{point:04X}"
    return f"\\U{point:08X}"


def gbnf_literal(text: str) -> str:
    """A quoted GBNF literal; letters, digits and spaces stay readable, the rest is escaped."""
    readable = {" ", "_", ":", ".", ",", "-"}
    kept = (c if c.isascii() and (c.isalnum() or c in readable) else gbnf_char(c) for c in text)
    return '"' + "".join(kept) + '"'


def tail_text(constraint: ReplyConstraint, choice: str) -> str:
    """What a constrained reply ends with for one choice, e.g. "Rating: [[7]]"."""
    return f"{constraint.lead}{constraint.open}{choice}{constraint.close}"


def longest_tail(constraint: ReplyConstraint) -> int:
    return max(len(tail_text(constraint, choice)) for choice in constraint.choices)


def explanation_budget(constraint: ReplyConstraint, max_tokens: int | None) -> int:
    """The explanation's bound in characters, so that the whole reply fits `max_tokens`.

    Every generated token holds at least one character, so a reply of C characters takes
    at most C tokens: bounding the explanation by `max_tokens - longest tail` guarantees
    the rating is written before the token limit cuts the reply.
    """
    bound = constraint.max_explanation_chars
    if max_tokens is not None:
        bound = min(bound, max_tokens - longest_tail(constraint))
    return max(0, bound)


def check_constraint(constraint: ReplyConstraint) -> None:
    """Refuse constraints no grammar can honour (ValueError names the problem)."""
    if not constraint.open:
        raise ValueError("constraint.open must not be empty")
    if not constraint.choices or any(not choice for choice in constraint.choices):
        raise ValueError("constraint.choices must be non-empty strings")
    if constraint.max_explanation_chars < 0:
        raise ValueError("constraint.max_explanation_chars must be >= 0")
    head = constraint.lead + constraint.open
    if head.find(constraint.open) != len(constraint.lead):
        raise ValueError("constraint.lead must not contain or run into constraint.open")


def grammar_for(constraint: ReplyConstraint, max_explanation_chars: int | None = None) -> str:
    """The GBNF grammar of `constraint`; `max_explanation_chars` overrides its bound."""
    check_constraint(constraint)
    bound = constraint.max_explanation_chars
    if max_explanation_chars is not None:
        bound = max_explanation_chars
    bound = max(0, bound)
    excluded = gbnf_char(constraint.open[0])
    choices = " | ".join(gbnf_literal(choice) for choice in constraint.choices)
    explanation = f"[^{excluded}]{{0,{bound}}}" if bound > 0 else '""'
    lines = [
        "root ::= explanation tail",
        f"explanation ::= {explanation}",
        f"tail ::= {gbnf_literal(constraint.lead + constraint.open)} choice "
        f"{gbnf_literal(constraint.close)}",
        f"choice ::= {choices}",
    ]
    return "\n".join(lines) + "\n"
