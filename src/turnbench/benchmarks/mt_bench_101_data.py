"""MT-Bench-101's data files (golden dialogues, official judge texts) and answer files.

The dialogues and the judge texts are content, validated where they enter; which turns are
judged is read from the judge texts (`skip_first_turn_tasks`), not written into code. Answer
files for judge-only runs are JSONL rows `{"id", "turn", "answer"}`, one file per model, and
every problem in them is reported with its file:line before anything is written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from turnbench.benchmarks.base import AnswerSet
from turnbench.data import sha256_file
from turnbench.errors import UserError
from turnbench.runlog import LOG_NAME, read_records
from turnbench.textio import (
    ErrorCollector,
    describe_validation_error,
    read_json,
    read_jsonl,
    validate_row,
    validate_rows,
)
from turnbench.types import AnswerRecord

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


class AnswerRow(BaseModel):
    """One judge-only answer: dialogue id, 1-based turn index in the dialogue, the text."""

    model_config = ConfigDict(extra="ignore", strict=True)

    id: int
    turn: int
    answer: str


@dataclass
class DialogueAnswerSet(AnswerSet):
    """Answers of one model; `turns` maps dialogue id -> {turn: text}.

    MT-Bench-101 answers are keyed by turn because the first turn of six tasks has none, so
    the base class's per-sample list (`answers`) stays empty here.
    """

    turns: dict[int, dict[int, str]] = field(default_factory=dict)


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


def load_answer_set(
    path: Path,
    dialogues: dict[int, Dialogue],
    skip_first_tasks: frozenset[str],
    planned: Iterable[tuple[int, int]],
) -> DialogueAnswerSet:
    """One JSONL answer file; the model is named after the file (as for MT-Bench)."""
    collector = ErrorCollector(path)
    turns: dict[int, dict[int, str]] = {}
    seen: dict[tuple[int, int], int] = {}
    for line, value in read_jsonl(path, collector):
        row = validate_row(collector, line, value, AnswerRow)
        if row is None:
            continue
        dialogue = dialogues.get(row.id)
        if dialogue is None:
            collector.add(line, f"id {row.id} is not an MT-Bench-101 dialogue (ids are 1-1388)")
            continue
        if not 1 <= row.turn <= len(dialogue.history):
            collector.add(
                line,
                f"dialogue {row.id} ({dialogue.task}) has turns 1-{len(dialogue.history)}, "
                f"not turn {row.turn}",
            )
            continue
        if row.turn not in judged_turns(dialogue, skip_first_tasks):
            collector.add(
                line,
                f"turn {row.turn} of dialogue {row.id} is not judged (the first turn of "
                f"{dialogue.task} dialogues is part of the golden context)",
            )
            continue
        identity = (row.id, row.turn)
        if identity in seen:
            collector.add(
                line,
                f"duplicate answer for id {row.id} turn {row.turn} (first on line "
                f"{seen[identity]})",
            )
            continue
        seen[identity] = line
        turns.setdefault(row.id, {})[row.turn] = row.answer
    missing = _missing(turns, planned)
    if missing:
        collector.add(None, f"no answers for {missing}")
    collector.raise_if_any()
    return DialogueAnswerSet(
        model=path.stem, path=path, sha256=sha256_file(path), answers={}, turns=turns
    )


def _missing(turns: dict[int, dict[int, str]], planned: Iterable[tuple[int, int]]) -> str:
    """'' when every planned (id, turn) has an answer, else a short description."""
    missing = [(i, t) for i, t in planned if t not in turns.get(i, {})]
    if not missing:
        return ""
    shown = ", ".join(f"id {i} turn {t}" for i, t in missing[:12])
    return f"{len(missing)} planned turn(s): {shown}" + (" ..." if len(missing) > 12 else "")


def load_run_answer_sets(
    path: Path, dialogues: dict[int, Dialogue], planned: Iterable[tuple[int, int]]
) -> list[DialogueAnswerSet]:
    """Answers of an earlier turnbench MT-Bench-101 run directory, one set per model.

    The log is the truth of that run, so its answer records (generated or imported) stand in
    for an answer file; the checksum covers the answer texts, not the growing log file.
    """
    records, _ = read_records(path / LOG_NAME)
    texts: dict[str, dict[int, dict[int, str]]] = {}
    for record in records:
        if (
            isinstance(record, AnswerRecord)
            and isinstance(record.sample_id, int)
            and record.sample_id in dialogues
        ):
            texts.setdefault(record.model, {}).setdefault(record.sample_id, {})[record.turn] = (
                record.text
            )
    if not texts:
        raise UserError(f"{path}: this run directory holds no MT-Bench-101 answers")
    planned = list(planned)
    sets = []
    for model, turns in texts.items():
        missing = _missing(turns, planned)
        if missing:
            raise UserError(
                f"{path}: model {model} has no answers for {missing} (finish that run, or use "
                "the same --limit)"
            )
        canonical = json.dumps(
            {str(i): {str(t): text for t, text in by_turn.items()} for i, by_turn in turns.items()},
            sort_keys=True,
            ensure_ascii=False,
        )
        digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        sets.append(
            DialogueAnswerSet(model=model, path=path, sha256=digest, answers={}, turns=turns)
        )
    return sets
