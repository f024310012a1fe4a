"""How a judge reply is read: the parser, the re-ask text, and the reply's shape.

A benchmark says what kind of verdict a judge request asks for (a rating, a pairwise
verdict, a checklist) and which parser reads it under `--parser strict` and `--parser
compat`; this module turns that into a `ReplyFormat` the judge loop uses. An unreadable
reply is re-asked (up to the judge's `max_reasks`: 2 by default with the strict parser, 0
with compat, as the reference implementations never re-ask) with a fixed, versioned
follow-up text from the package data.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from turnbench.judging.parsers import CHECKLIST_PARSERS, PARSERS, ParseResult, checklist_score
from turnbench.samples import VerdictKind as VerdictKind
from turnbench.types import ReplyConstraint

ParserMode = Literal["strict", "compat"]
RATING_CHOICES = tuple(str(value) for value in range(1, 11))
VERDICT_CHOICES = ("A", "B", "C")


@dataclass(frozen=True)
class Followup:
    name: str
    version: int
    text: str

    @property
    def label(self) -> str:
        return f"{self.name}-v{self.version}"


@cache
def followup(kind: str) -> Followup:
    """A re-ask text from prompts/reask.json (`rating`, `verdict`, `checklist`)."""
    raw = json.loads(resources.files("turnbench").joinpath("prompts/reask.json").read_text("utf-8"))
    entry = raw[kind]
    return Followup(name=entry["name"], version=int(entry["version"]), text=entry["text"])


@dataclass(frozen=True)
class ReplyFormat:
    """Everything the judge loop needs to read one kind of reply."""

    parser: str  # its name, recorded in every judgment
    parse: Callable[[str], ParseResult]
    followup: Followup | None  # None: an unreadable reply is final (no re-ask)
    constraint: ReplyConstraint | None = None  # for backends that can constrain decoding
    weighted: bool = False  # a 1-10 rating that --judge-scoring weighted can weigh
    #: requests in all (the first included) while the parser asks for the same request
    #: again (`ParseResult.retry`): how a reference implementation retries, with no
    #: follow-up text; 1 = never
    resend_tries: int = 1


#: StructFlowBench's evaluate.py sends a checklist request up to 5 times (`--max_try`).
RESEND_TRIES = {"checklist-compat": 5}


@cache  # (frozen: one object serves every judgment)
def rating_constraint() -> ReplyConstraint:
    return ReplyConstraint(kind="rating", choices=RATING_CHOICES, lead="Rating: ")


@cache
def verdict_constraint() -> ReplyConstraint:
    return ReplyConstraint(kind="verdict", choices=VERDICT_CHOICES, lead="Final verdict: ")


def standard_format(
    kind: VerdictKind,
    parser: str,
    parse: Callable[[str], ParseResult] | None = None,
    *,
    items: int | None = None,
    weights: Sequence[float] | None = None,
) -> ReplyFormat:
    """A reply format for one of the registered parsers (or a given `parse` function).

    A checklist parser needs the number of check-list `items`; the reply's score is the
    weighted share of items met (`weights`, equal without them)."""
    if kind == "checklist" and parse is None:
        if items is None:
            raise ValueError("a checklist reply format needs the number of items")
        parse = checklist_reader(parser, items, weights)
    constraint = {"rating": rating_constraint, "verdict": verdict_constraint}.get(kind)
    return ReplyFormat(
        parser=parser,
        parse=parse or PARSERS[parser],
        followup=followup(kind),
        constraint=constraint() if constraint else None,
        weighted=kind == "rating",
        resend_tries=RESEND_TRIES.get(parser, 1),
    )


def checklist_reader(
    parser: str, items: int, weights: Sequence[float] | None = None
) -> Callable[[str], ParseResult]:
    """`parse` for a checklist of `items` items: the verdicts and their weighted score."""
    read = CHECKLIST_PARSERS[parser]
    shares = tuple(weights) if weights is not None else None
    if shares is not None and len(shares) != items:
        raise ValueError(f"{len(shares)} weights for {items} check-list items")

    def parse(text: str) -> ParseResult:
        result = read(text, items)
        if result.checklist is None:
            return result
        return ParseResult(
            score=checklist_score(result.checklist, shares), checklist=result.checklist
        )

    return parse
