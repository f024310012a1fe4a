"""MT-Bench generation rules: temperatures, self-generated history, --limit."""

import pytest

from turnbench.benchmarks.mt_bench import (
    answer_messages,
    answer_temperature,
    select_questions,
)
from turnbench.benchmarks.mt_bench_data import Question


@pytest.mark.parametrize(
    ("category", "temperature"),
    [
        ("writing", 0.7),
        ("roleplay", 0.7),
        ("reasoning", 0.0),
        ("math", 0.0),
        ("coding", 0.0),
        ("extraction", 0.0),
        ("stem", 0.1),
        ("humanities", 0.1),
        ("unknown", 0.7),
    ],
)
def test_category_temperatures(category, temperature):
    assert answer_temperature(category) == temperature


QUESTION = Question(question_id=81, category="writing", turns=["q1", "q2"])


def test_turn_two_sees_the_models_own_first_answer():
    assert answer_messages(None, QUESTION, ["my a1"], 2) == [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "my a1"},
        {"role": "user", "content": "q2"},
    ]


def test_system_prompt_only_when_asked():
    assert answer_messages(None, QUESTION, [], 1) == [{"role": "user", "content": "q1"}]
    assert answer_messages("Be brief.", QUESTION, [], 1)[0] == {
        "role": "system",
        "content": "Be brief.",
    }


def test_limit_takes_the_first_questions_of_every_category():
    questions = [
        Question(question_id=i, category=c, turns=["a", "b"])
        for i, c in enumerate(["w", "w", "w", "m", "m", "r"])
    ]
    assert [q.question_id for q in select_questions(questions, 2)] == [0, 1, 3, 4, 5]
    assert len(select_questions(questions, None)) == 6
