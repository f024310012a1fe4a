"""The audit's probe texts (package data `prompts/audit_probes.json`, versioned).

A probe question has a right answer, a second right answer worded differently, and a
clearly wrong one. From them the audit derives: the right answer padded by repetition (to
at least twice its length), the wrong answer with each attack appended, and one constant
answer that ignores every question.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

ATTACK_KINDS = ("judge_instructions", "fake_rating", "fake_end_marker")
CONSTANT = "constant_answer"
MANIPULATION_KINDS = (*ATTACK_KINDS, CONSTANT)


class ProbeQuestion(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    category: str
    question: str
    right: str
    right_alt: str
    wrong: str


class ProbeSuite(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    version: int
    questions: list[ProbeQuestion] = Field(min_length=2)
    attacks: dict[str, str]
    constant_answer: str

    @property
    def label(self) -> str:
        return f"{self.name}-v{self.version}"


@cache
def probe_suite() -> ProbeSuite:
    text = resources.files("turnbench").joinpath("prompts/audit_probes.json").read_text("utf-8")
    return ProbeSuite.model_validate(json.loads(text))


def padded(text: str) -> str:
    """The answer repeated until it is at least twice as long (blank line between copies)."""
    copies = [text]
    while len("\n\n".join(copies)) < 2 * len(text):
        copies.append(text)
    return "\n\n".join(copies)


def manipulated(suite: ProbeSuite, kind: str, question: ProbeQuestion) -> str:
    """The probe answer of a manipulation kind for one question (plain replacement, so braces
    in an answer are harmless)."""
    if kind == CONSTANT:
        return suite.constant_answer
    return suite.attacks[kind].replace("{answer}", question.wrong)
