"""Filling FastChat's judge templates: the parts single and pairwise grading share."""

from __future__ import annotations

from turnbench.benchmarks.mt_bench_data import JudgePrompt
from turnbench.types import Message


def reference_fields(references: list[str] | None, turn: int) -> dict[str, str]:
    """`ref_answer_1` for turn 1; both reference turns for the multi-turn templates."""
    if references is None:
        return {}
    fields = {"ref_answer_1": references[0]}
    if turn != 1:
        fields["ref_answer_2"] = references[1]
    return fields


def judge_request(prompt: JudgePrompt, fields: dict[str, str]) -> list[Message]:
    """FastChat's exact request: [system, user], the template filled by `str.format` on the
    raw, unstripped texts."""
    return [
        {"role": "system", "content": prompt.system_prompt},
        {"role": "user", "content": prompt.prompt_template.format(**fields)},
    ]
