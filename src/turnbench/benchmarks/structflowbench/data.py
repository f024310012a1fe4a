"""StructFlowBench's data: 155 dialogues with golden answers and per-turn constraint
checklists, and the official judge prompt template.

The dataset has no id field: a dialogue's id is its 1-based position in
`StructFlowBench.json` (1-155), the order of the pinned file. Its task is the part of
`conv_task` before the first ':'.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from turnbench.errors import UserError
from turnbench.textio import ErrorCollector, describe_validation_error, read_json

DIALOGUES = "structflowbench/StructFlowBench.json"
JUDGE_PROMPT = "structflowbench/judge_prompt.json"


class Constraint(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    type: str
    content: str  # a yes/no question for the judge


class ConvTurn(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    name: str = ""
    user_prompt: str = Field(alias="user prompt")
    assistant_answer: str = Field(alias="assistant answer")  # the golden answer
    constraints: list[Constraint] = Field(min_length=1)


class Dialogue(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: int = 0  # 1-based position in the file (not a field of the data)
    conv_task: str
    whole_conv: list[ConvTurn] = Field(min_length=1)

    @property
    def task(self) -> str:
        return self.conv_task.split(":", 1)[0]


def load_dialogues(path: Path) -> list[Dialogue]:
    """Every dialogue of the file, numbered from 1; every bad dialogue reported at once."""
    value = read_json(path)
    if not isinstance(value, list):
        raise UserError(f"{path}: expected a JSON list of dialogues")
    collector = ErrorCollector(path)
    dialogues = []
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            collector.add(None, f"dialogue {number}: expected an object")
            continue
        try:
            dialogues.append(Dialogue.model_validate({**item, "id": number}))
        except ValidationError as error:
            collector.add(None, f"dialogue {number}: {describe_validation_error(error)}")
    collector.raise_if_any()
    return dialogues


def load_judge_prompt(path: Path) -> tuple[str, dict[str, Any]]:
    """The judge prompt template (a `str.format` template) and its recorded source."""
    value = read_json(path)
    template = value.get("judge_prompt_template") if isinstance(value, dict) else None
    if not isinstance(template, str):
        raise UserError(f"{path}: no judge_prompt_template text")
    source = value.get("source")
    return template, source if isinstance(source, dict) else {}


def signature(turns: list[dict[str, Any]] | list[ConvTurn]) -> tuple:
    """What identifies a dialogue: each turn's prompt and its constraints (type, content).
    Other fields (purpose, structure) differ between releases of the same dialogue."""
    found = []
    for turn in turns:
        if isinstance(turn, ConvTurn):
            found.append((turn.user_prompt, tuple((c.type, c.content) for c in turn.constraints)))
            continue
        constraints = turn.get("constraints")
        found.append(
            (
                turn.get("user prompt"),
                tuple(
                    (c.get("type"), c.get("content"))
                    for c in (constraints if isinstance(constraints, list) else [])
                    if isinstance(c, dict)
                ),
            )
        )
    return tuple(found)
