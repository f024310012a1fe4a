"""StructFlowBench requests equal the reference construction, byte for byte.

The expected texts come from `reference_generation` and `reference_judge` below: a
re-statement of the reference's loops as docs/BENCHMARKS.md describes them (a running
history string grown turn by turn; the judge template filled with `str.format`). They share
no code with turnbench's prompt module, so a slip in either shows up as a difference.
Dialogues of every length in the data (2 to 6 turns) are checked at every turn.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnbench.benchmarks.base import BenchmarkSettings
from turnbench.benchmarks.structflowbench import StructFlowBench
from turnbench.benchmarks.structflowbench.data import DIALOGUES, JUDGE_PROMPT
from turnbench.benchmarks.structflowbench.extract import judge_prompt_json
from turnbench.engine.history import earlier_pairs
from turnbench.errors import UserError
from turnbench.types import SamplingConfig

# braces, slot names and a trailing newline must all reach the judge unchanged
ANSWER = "An answer with {braces}, {conv_history} and {check_list}.\n"


@pytest.fixture(scope="module")
def raw(data_dir: Path) -> list[dict]:
    return json.loads((data_dir / DIALOGUES).read_text("utf-8"))


@pytest.fixture(scope="module")
def template(data_dir: Path) -> str:
    return json.loads((data_dir / JUDGE_PROMPT).read_text("utf-8"))["judge_prompt_template"]


def benchmark(data_dir: Path, **options: str) -> StructFlowBench:
    files = {DIALOGUES: data_dir / DIALOGUES, JUDGE_PROMPT: data_dir / JUDGE_PROMPT}
    settings = BenchmarkSettings(answer=SamplingConfig(max_tokens=64), options=dict(options))
    return StructFlowBench(files, settings)


def one_of_each_length(raw: list[dict]) -> list[tuple[int, dict]]:
    """(1-based id, dialogue): the first dialogue of every length."""
    chosen: dict[int, tuple[int, dict]] = {}
    for number, dialogue in enumerate(raw, start=1):
        chosen.setdefault(len(dialogue["whole_conv"]), (number, dialogue))
    assert sorted(chosen) == [2, 3, 4, 5, 6]
    return [chosen[length] for length in sorted(chosen)]


def reference_generation(dialogue: dict, index: int) -> str:
    """inference.py: one user message, earlier turns flattened with their golden answers."""
    text = ""
    for earlier in dialogue["whole_conv"][:index]:
        text = text + "user" + ":" + earlier["user prompt"] + "\n"
        text = text + "assistant" + ":" + earlier["assistant answer"] + "\n"
    return text + "user" + ":" + dialogue["whole_conv"][index]["user prompt"] + "\n"


def reference_judge(template: str, dialogue: dict, index: int, response: str) -> str:
    """evaluate.py: c1..ck history with golden answers, the checklist as '-' lines."""
    history = ""
    for number in range(index):
        turn = dialogue["whole_conv"][number]
        history += "c" + str(number + 1) + ":\n"
        history += "user:" + turn["user prompt"] + "\n"
        history += "LLM assistant:" + turn["assistant answer"] + "\n"
    history += "c" + str(index + 1) + ":\n"
    current = dialogue["whole_conv"][index]
    checks = "".join("-" + item["content"] + "\n" for item in current["constraints"])
    return template.format(
        conv_history=history,
        cur_user_prompt=current["user prompt"] + "\n",
        cur_llm_response=response + "\n",
        check_list=checks,
    )


def test_flat_generation_messages_equal_the_reference(data_dir, raw):
    bench = benchmark(data_dir, history_format="flat")
    for ident, dialogue in one_of_each_length(raw):
        sample = next(s for s in bench.all_samples() if s.id == ident)
        for index in range(len(dialogue["whole_conv"])):
            earlier = earlier_pairs(sample, index + 1, bench.history, {})
            messages = bench.answer_messages(sample, index + 1, earlier)
            assert messages == [{"role": "user", "content": reference_generation(dialogue, index)}]


def test_chat_history_sends_the_same_golden_turns_as_messages(data_dir, raw):
    bench = benchmark(data_dir)
    for ident, dialogue in one_of_each_length(raw):
        sample = next(s for s in bench.all_samples() if s.id == ident)
        turns = dialogue["whole_conv"]
        for index in range(len(turns)):
            earlier = earlier_pairs(sample, index + 1, bench.history, {})
            expected = []
            for turn in turns[:index]:
                expected.append({"role": "user", "content": turn["user prompt"]})
                expected.append({"role": "assistant", "content": turn["assistant answer"]})
            expected.append({"role": "user", "content": turns[index]["user prompt"]})
            assert bench.answer_messages(sample, index + 1, earlier) == expected


def test_judge_messages_equal_the_reference(data_dir, raw, template):
    bench = benchmark(data_dir)
    for ident, dialogue in one_of_each_length(raw):
        sample = next(s for s in bench.all_samples() if s.id == ident)
        for index, turn in enumerate(dialogue["whole_conv"]):
            earlier = earlier_pairs(sample, index + 1, bench.history, {})
            (task,) = bench.judge_tasks(sample, index + 1, earlier, ANSWER)
            assert task.messages == [
                {"role": "user", "content": reference_judge(template, dialogue, index, ANSWER)}
            ]
            assert task.kind == "checklist" and task.items == len(turn["constraints"])
            structural = {"follow-up", "refinement", "expansion", "summary", "recall"}
            assert task.weights == tuple(
                2.0 if c["type"] in structural else 1.0 for c in turn["constraints"]
            )


def test_ids_are_positions_in_the_file(data_dir, raw):
    bench = benchmark(data_dir)
    assert [s.id for s in bench.all_samples()] == list(range(1, 156))
    assert sum(len(s.turns) for s in bench.all_samples()) == 643
    third = bench.all_samples()[2]
    assert third.turns[0].user == raw[2]["whole_conv"][0]["user prompt"]
    assert third.group == raw[2]["conv_task"].split(":", 1)[0]


def test_limit_takes_the_first_dialogues_of_every_task(data_dir, raw):
    files = {DIALOGUES: data_dir / DIALOGUES, JUDGE_PROMPT: data_dir / JUDGE_PROMPT}
    bench = StructFlowBench(files, BenchmarkSettings(limit=2))
    by_task: dict[str, list[int]] = {}
    for number, dialogue in enumerate(raw, start=1):
        by_task.setdefault(dialogue["conv_task"].split(":", 1)[0], []).append(number)
    assert [s.id for s in bench.samples] == [
        number
        for number, dialogue in enumerate(raw, start=1)
        if number in by_task[dialogue["conv_task"].split(":", 1)[0]][:2]
    ]
    assert len(bench.samples) == 16


def test_the_judge_prompt_is_read_from_evaluate_py_without_running_it(data_dir, template):
    """A source holding the template as the reference holds it (a triple-quoted string
    assigned to self.prompt_template in a method) extracts to the pinned bytes."""
    source = (
        "import os\nraise SystemExit('never executed')\n\n\nclass Evaluate():\n"
        "    def __init__(self, model_name):\n"
        f'        self.prompt_template="""{template}"""\n'
        "        self.other = 'x'\n"
    )
    extracted = judge_prompt_json(source.encode("utf-8"))
    assert extracted == (data_dir / JUDGE_PROMPT).read_bytes()
    with pytest.raises(UserError, match=r"expected one self\.prompt_template"):
        judge_prompt_json(b"x = 1\n")
