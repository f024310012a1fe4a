"""MT-Bench's data files: questions, reference answers, judge prompts and answer files.

All three data files follow FastChat's `llm_judge` layout, so a translated or domain
version of MT-Bench in the same layout reads the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from turnbench.benchmarks.answers import answer_model_name
from turnbench.benchmarks.base import AnswerSet
from turnbench.benchmarks.datafiles import sha256_file
from turnbench.textio import ErrorCollector, read_jsonl, validate_rows

QUESTIONS = "mt_bench/question.jsonl"
REFERENCES = "mt_bench/reference_answer/gpt-4.jsonl"
JUDGE_PROMPTS = "mt_bench/judge_prompts.jsonl"


class Question(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question_id: int
    category: str
    turns: list[str] = Field(min_length=1)


class Choice(BaseModel):
    model_config = ConfigDict(extra="ignore")

    index: int = 0
    turns: list[str] = Field(min_length=1)


class AnswerRow(BaseModel):
    """FastChat's model_answer format (also its reference_answer format)."""

    model_config = ConfigDict(extra="ignore")

    question_id: int
    answer_id: str | None = None
    model_id: str | None = None
    choices: list[Choice] = Field(min_length=1)
    tstamp: float | None = None


class JudgePrompt(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    type: Literal["single", "pairwise"]
    system_prompt: str
    prompt_template: str
    output_format: str


def load_questions(path: Path) -> list[Question]:
    rows = validate_rows(path, read_jsonl(path), Question, id_of=lambda q: q.question_id)
    return [question for _, question in rows]


def load_answer_rows(
    path: Path, collector: ErrorCollector | None = None
) -> list[tuple[int, AnswerRow]]:
    """Well-formed rows; with a shared `collector`, bad rows are added to it, not raised."""
    rows = read_jsonl(path, collector)
    return validate_rows(path, rows, AnswerRow, id_of=lambda a: a.question_id, collector=collector)


def load_judge_prompts(path: Path) -> dict[str, JudgePrompt]:
    rows = validate_rows(path, read_jsonl(path), JudgePrompt, id_of=lambda p: p.name)
    return {prompt.name: prompt for _, prompt in rows}


def load_references(path: Path, questions: dict[int, Question]) -> dict[int, list[str]]:
    collector = ErrorCollector(path)
    references: dict[int, list[str]] = {}
    for line, row in load_answer_rows(path, collector):
        if row.question_id not in questions:
            collector.add(line, f"question_id {row.question_id} is not an MT-Bench question")
            continue
        references[row.question_id] = row.choices[0].turns
    collector.raise_if_any()
    return references


def load_answer_set(path: Path, questions: dict[int, Question], planned: list[int]) -> AnswerSet:
    """One FastChat answer file; the model is named after the file (FastChat's rule), or
    after its folder for a fork's `MODEL/results.jsonl`."""
    model = answer_model_name(path)  # (first: a refused name is told before any row)
    collector = ErrorCollector(path)
    answers: dict[int, dict[int, str]] = {}
    rows = load_answer_rows(path, collector)
    known = f"ids are {min(questions)}-{max(questions)}" if questions else "no questions"
    if rows and not any(row.question_id in questions for _, row in rows):
        collector.add(
            None,
            f"none of its question_ids is an MT-Bench question ({known}): is it an "
            "answer file of another benchmark?",
        )
    for line, row in rows:
        question = questions.get(row.question_id)
        if question is None:
            collector.add(
                line, f"question_id {row.question_id} is not an MT-Bench question ({known})"
            )
            continue
        turns = row.choices[0].turns
        if len(turns) != len(question.turns):
            collector.add(
                line,
                f"question {row.question_id} has {len(question.turns)} turns "
                f"but choices[0].turns has {len(turns)} answers",
            )
            continue
        answers[row.question_id] = dict(enumerate(turns, start=1))
    missing = [qid for qid in planned if qid not in answers]
    if missing:
        shown = ", ".join(map(str, missing[:12])) + (" ..." if len(missing) > 12 else "")
        collector.add(None, f"no answers for {len(missing)} planned question(s): {shown}")
    collector.raise_if_any()
    return AnswerSet(model=model, path=path, sha256=sha256_file(path), turns=dict(answers))
