"""What MT-Bench's judge sees: FastChat's templates, chosen by name and filled exactly as
FastChat fills them (`str.format` on the raw, unstripped texts, [system, user] messages).

Turn 1 uses `single-v1` (pairwise: `pair-v2`), turn 2 the `-multi-turn` form that shows the
whole two-turn conversation; math, reasoning and coding use the `-math-v1` forms with the
reference answer(s).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from turnbench.benchmarks.mt_bench.data import JudgePrompt
from turnbench.types import Message

REFERENCE_CATEGORIES = frozenset({"math", "reasoning", "coding"})
PAIR_PROMPT_NAMES = (
    "pair-v2",
    "pair-v2-multi-turn",
    "pair-math-v1",
    "pair-math-v1-multi-turn",
)


def judge_prompt_name(category: str, turn: int) -> str:
    base = "single-math-v1" if category in REFERENCE_CATEGORIES else "single-v1"
    return base if turn == 1 else f"{base}-multi-turn"


def pair_prompt_name(with_reference: bool, turn: int) -> str:
    """`pair-v2` / `pair-math-v1` on turn 1, their `-multi-turn` forms on turn 2."""
    base = "pair-math-v1" if with_reference else "pair-v2"
    return base if turn == 1 else f"{base}-multi-turn"


def unversioned(name: str) -> str:
    """A prompt's name as FastChat's forks write it: `single-v1` -> `single`,
    `pair-math-v1-multi-turn` -> `pair-math-multi-turn`."""
    return re.sub(r"-v\d+(?=-|$)", "", name)


def prompt_names(prompts: Mapping[str, JudgePrompt]) -> dict[str, str]:
    """FastChat's prompt name -> the name it has in `prompts`: itself, or its unversioned
    form when only that is there (a fork's file)."""
    found: dict[str, str] = {}
    for category in ("writing", "math"):
        for turn in (1, 2):
            for name in (
                judge_prompt_name(category, turn),
                pair_prompt_name(category == "math", turn),
            ):
                for candidate in (name, unversioned(name)):
                    if candidate in prompts:
                        found[name] = candidate
                        break
    return found


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


def render_single_judgment(
    prompt: JudgePrompt,
    questions: Sequence[str],
    answers: Sequence[str],
    references: list[str] | None,
    turn: int,
) -> list[Message]:
    """The judge request grading the answer to `turn` (answers of turns 1..turn given)."""
    if turn == 1:
        fields = {"question": questions[0], "answer": answers[0]}
    else:
        fields = {
            "question_1": questions[0],
            "question_2": questions[1],
            "answer_1": answers[0],
            "answer_2": answers[1],
        }
    return judge_request(prompt, fields | reference_fields(references, turn))


def render_pairwise_judgment(
    prompt: JudgePrompt,
    questions: Sequence[str],
    answers_a: Sequence[str],
    answers_b: Sequence[str],
    references: list[str] | None,
    turn: int,
) -> list[Message]:
    """The judge request comparing assistant A's and B's answers to `turn`."""
    if turn == 1:
        fields = {"question": questions[0], "answer_a": answers_a[0], "answer_b": answers_b[0]}
    else:
        fields = {
            "question_1": questions[0],
            "question_2": questions[1],
            "answer_a_1": answers_a[0],
            "answer_b_1": answers_b[0],
            "answer_a_2": answers_a[1],
            "answer_b_2": answers_b[1],
        }
    return judge_request(prompt, fields | reference_fields(references, turn))
