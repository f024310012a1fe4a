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
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from turnbench.judging.parsers import PARSERS, ParseResult
from turnbench.types import ReplyConstraint

VerdictKind = Literal["rating", "verdict", "checklist"]
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


@cache  # (frozen: one object serves every judgment)
def rating_constraint() -> ReplyConstraint:
    return ReplyConstraint(kind="rating", choices=RATING_CHOICES, lead="Rating: ")


@cache
def verdict_constraint() -> ReplyConstraint:
    return ReplyConstraint(kind="verdict", choices=VERDICT_CHOICES, lead="Final verdict: ")


def standard_format(
    kind: VerdictKind, parser: str, parse: Callable[[str], ParseResult] | None = None
) -> ReplyFormat:
    """A reply format for one of the registered parsers (or a given `parse` function)."""
    constraint = {"rating": rating_constraint, "verdict": verdict_constraint}.get(kind)
    return ReplyFormat(
        parser=parser,
        parse=parse or PARSERS[parser],
        followup=followup(kind),
        constraint=constraint() if constraint else None,
    )
