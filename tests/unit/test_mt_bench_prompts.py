"""MT-Bench judge requests are the official templates, filled exactly as FastChat fills them.

The expected text is built independently of the code under test: every `{slot}` of the
official template is replaced with `str.replace`, so a renamed slot, a stripped answer or
a stray extra character makes the comparison fail.
"""

import json
from pathlib import Path

import pytest

from turnbench.benchmarks.mt_bench.data import JudgePrompt, Question
from turnbench.benchmarks.mt_bench.prompts import judge_prompt_name, render_single_judgment

# Unstripped, with braces and a format-looking slot: must reach the judge verbatim.
ANSWER_1 = "  First answer with {braces} and {question} inside.\n"
ANSWER_2 = "\nSecond answer.  "
REF_1, REF_2 = "Reference one {x}", "Reference two"


@pytest.fixture(scope="module")
def prompts(data_dir: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (data_dir / "mt_bench/judge_prompts.jsonl").open()]
    return {row["name"]: row for row in rows}


def expected(template: str, slots: dict[str, str]) -> str:
    text = template
    for name in slots:
        marker = "{" + name + "}"
        assert marker in text, f"template lacks {marker}"
        text = text.replace(marker, f"\x00{name}\x00")
    assert "{" not in text.replace("\x00", ""), "template has a slot the test does not fill"
    for name, value in slots.items():
        text = text.replace(f"\x00{name}\x00", value)
    return text


QUESTION = Question(question_id=101, category="reasoning", turns=["Q1 text?", "Q2 {text}?"])


@pytest.mark.parametrize(
    ("name", "turn", "with_reference", "slots"),
    [
        ("single-v1", 1, False, {"question": "Q1 text?", "answer": ANSWER_1}),
        (
            "single-math-v1",
            1,
            True,
            {"question": "Q1 text?", "answer": ANSWER_1, "ref_answer_1": REF_1},
        ),
        (
            "single-v1-multi-turn",
            2,
            False,
            {
                "question_1": "Q1 text?",
                "question_2": "Q2 {text}?",
                "answer_1": ANSWER_1,
                "answer_2": ANSWER_2,
            },
        ),
        (
            "single-math-v1-multi-turn",
            2,
            True,
            {
                "question_1": "Q1 text?",
                "question_2": "Q2 {text}?",
                "answer_1": ANSWER_1,
                "answer_2": ANSWER_2,
                "ref_answer_1": REF_1,
                "ref_answer_2": REF_2,
            },
        ),
    ],
)
def test_single_prompts_byte_for_byte(prompts, name, turn, with_reference, slots):
    official = prompts[name]
    messages = render_single_judgment(
        JudgePrompt.model_validate(official),
        QUESTION.turns,
        [ANSWER_1, ANSWER_2],
        [REF_1, REF_2] if with_reference else None,
        turn,
    )
    assert messages == [
        {"role": "system", "content": official["system_prompt"]},
        {"role": "user", "content": expected(official["prompt_template"], slots)},
    ]


def test_system_prompts_are_verbatim(prompts):
    assert prompts["single-v1"]["system_prompt"] == "You are a helpful assistant."
    assert prompts["single-v1-multi-turn"]["system_prompt"].endswith("\n\n")


@pytest.mark.parametrize(
    ("category", "turn", "name"),
    [
        ("writing", 1, "single-v1"),
        ("writing", 2, "single-v1-multi-turn"),
        ("math", 1, "single-math-v1"),
        ("reasoning", 2, "single-math-v1-multi-turn"),
        ("coding", 1, "single-math-v1"),
        ("humanities", 2, "single-v1-multi-turn"),
        ("some-new-category", 1, "single-v1"),
    ],
)
def test_prompt_selection(category, turn, name):
    assert judge_prompt_name(category, turn) == name
