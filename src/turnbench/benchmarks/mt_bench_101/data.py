"""MT-Bench-101's data files: golden dialogues and the official judge texts.

The dialogues and the judge texts are content, validated where they enter; which turns are
judged is read from the judge texts (`skip_first_turn_tasks`), not written into code. Answer
files for judge-only runs use the generic `{"id", "turn", "answer"}` JSONL format
(`turnbench.benchmarks.answers`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from turnbench.errors import UserError
from turnbench.textio import (
    describe_validation_error,
    read_json,
    read_jsonl,
    validate_rows,
)

DIALOGUES = "mt_bench_101/mtbench101.jsonl"
JUDGE_PROMPTS = "mt_bench_101/judge_prompts.json"


class GoldenTurn(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    user: str
    bot: str  # the golden assistant answer


class Dialogue(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    task: str
    id: int
    history: list[GoldenTurn] = Field(min_length=1)


class JudgeTexts(BaseModel):
    """The official judge texts of OpenCompass's MT-Bench-101 port, verbatim."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    source: dict[str, Any] = Field(default_factory=dict)
    judge_preamble: str
    score_format: str
    task_rubrics: dict[str, str]
    skip_first_turn_tasks: list[str]
    reference_tasks: list[str]
    user_prompt_template: str
    user_prompt_template_with_reference: str


def load_dialogues(path: Path) -> list[Dialogue]:
    rows = validate_rows(path, read_jsonl(path), Dialogue, id_of=lambda d: d.id)
    return [dialogue for _, dialogue in rows]


def load_judge_texts(path: Path) -> JudgeTexts:
    value = read_json(path)
    if not isinstance(value, dict):
        raise UserError(f"{path}: expected a JSON object of judge texts")
    try:
        return JudgeTexts.model_validate(value)
    except ValidationError as error:
        raise UserError(f"{path}: {describe_validation_error(error)}") from None


def judged_turns(dialogue: Dialogue, skip_first_tasks: Iterable[str]) -> range:
    """1-based turns that are answered and judged (the first is skipped in some tasks)."""
    first = 2 if dialogue.task in skip_first_tasks else 1
    return range(first, len(dialogue.history) + 1)
