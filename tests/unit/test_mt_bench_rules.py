"""MT-Bench generation rules: temperatures, self-generated history, --limit."""

import pytest

from turnbench.benchmarks.base import BenchmarkSettings, Sample, Turn, select_first
from turnbench.benchmarks.mt_bench.benchmark import MTBench, answer_temperature
from turnbench.benchmarks.mt_bench.data import JUDGE_PROMPTS, QUESTIONS, REFERENCES, Question
from turnbench.engine.history import earlier_pairs
from turnbench.types import SamplingConfig


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
SAMPLE = MTBench._sample(QUESTION)


def answer_messages(data_dir, system_prompt, own, turn):
    files = {name: data_dir / name for name in (QUESTIONS, REFERENCES, JUDGE_PROMPTS)}
    sampling = SamplingConfig(max_tokens=1024, system_prompt=system_prompt)
    benchmark = MTBench(files, BenchmarkSettings(answer=sampling))
    earlier = earlier_pairs(SAMPLE, turn, benchmark.history, dict(enumerate(own, start=1)))
    return benchmark.answer_messages(SAMPLE, turn, earlier)


def test_turn_two_sees_the_models_own_first_answer(data_dir):
    assert answer_messages(data_dir, None, ["my a1"], 2) == [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "my a1"},
        {"role": "user", "content": "q2"},
    ]


def test_system_prompt_only_when_asked(data_dir):
    assert answer_messages(data_dir, None, [], 1) == [{"role": "user", "content": "q1"}]
    assert answer_messages(data_dir, "Be brief.", [], 1)[0] == {
        "role": "system",
        "content": "Be brief.",
    }


def test_limit_takes_the_first_questions_of_every_category():
    samples = [
        Sample(id=i, group=c, turns=(Turn("a"), Turn("b")))
        for i, c in enumerate(["w", "w", "w", "m", "m", "r"])
    ]
    assert [s.id for s in select_first(samples, 2)] == [0, 1, 3, 4, 5]
    assert len(select_first(samples, None)) == 6
