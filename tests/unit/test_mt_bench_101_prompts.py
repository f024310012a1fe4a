"""MT-Bench-101 judge and answer requests equal OpenCompass's construction, byte for byte.

The expected requests come from `reference_rows` below, a re-statement of OpenCompass's
dataset loop as docs/BENCHMARKS.md describes it (a running `history` string, a `pre_dia`
message list grown by `add_format`, `str.format` on the raw templates with the list object
itself as `ref_answer`, then `{prediction}` replaced by the stripped answer). It shares no
code with turnbench's prompt module, so a slip in either shows up as a difference.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from turnbench.benchmarks.base import BenchmarkSettings
from turnbench.benchmarks.mt_bench_101 import MTBench101
from turnbench.benchmarks.mt_bench_101.data import DIALOGUES, JUDGE_PROMPTS, Dialogue
from turnbench.engine.history import earlier_pairs
from turnbench.types import SamplingConfig

# Whitespace around (stripped by the reference), braces and slot names inside (kept verbatim).
ANSWER = "\n  My answer with {braces}, {history} and {ref_answer} inside.  \n"
TASKS = ("CM", "SI", "AR", "TS", "CC", "CR", "FR", "SC", "SA", "MR", "GR", "IC", "PI")


@pytest.fixture(scope="module")
def raw(data_dir: Path) -> dict:
    return json.loads((data_dir / JUDGE_PROMPTS).read_text("utf-8"))


@pytest.fixture(scope="module")
def first_of_each_task(data_dir: Path) -> dict[str, dict]:
    chosen: dict[str, dict] = {}
    for line in (data_dir / DIALOGUES).open(encoding="utf-8"):
        row = json.loads(line)
        if row["task"] not in chosen or row["id"] < chosen[row["task"]]["id"]:
            chosen[row["task"]] = row
    return chosen


def make_benchmark(data_dir: Path, **options: str) -> MTBench101:
    files = {DIALOGUES: data_dir / DIALOGUES, JUDGE_PROMPTS: data_dir / JUDGE_PROMPTS}
    settings = BenchmarkSettings(answer=SamplingConfig(max_tokens=1024), options=dict(options))
    return MTBench101(files, settings)


def judge_request(benchmark: MTBench101, dialogue: Dialogue, turn: int, answer: str, own: dict):
    """(prompt name, messages) judging `answer` in the conversation it answered."""
    sample = benchmark._sample(dialogue)
    earlier = earlier_pairs(sample, turn, benchmark.history, own)
    (task,) = benchmark.judge_tasks(sample, turn, earlier, answer)
    return task.prompt_name, task.messages


def answer_request(benchmark: MTBench101, dialogue: Dialogue, turn: int, own: dict):
    sample = benchmark._sample(dialogue)
    earlier = earlier_pairs(sample, turn, benchmark.history, own)
    return benchmark.answer_messages(sample, turn, earlier)


def add_format(question: str, answer: str) -> list[dict]:
    history = [{"role": "user", "content": question}]
    if answer:
        history += [{"role": "assistant", "content": answer}]
    return history


def reference_rows(dialogue: dict, raw: dict) -> list[dict]:
    """OpenCompass's loop over one dialogue: one row per judged turn."""
    task = dialogue["task"]
    skip_first = task in raw["skip_first_turn_tasks"]
    rows = []
    pre_dia: list[dict] = []
    history = ""
    for turn_index, turn in enumerate(dialogue["history"]):
        human, assistant = turn["user"], turn["bot"]
        if skip_first and turn_index == 0:
            pre_dia = add_format(question=human, answer=assistant)
            history = "\n\n Human: " + human + "\n\nAssistant: " + assistant
            continue
        history = history + "\n\n Human: " + human + "\n\nAssistant: "
        pre_dia += add_format(question=human, answer=assistant)
        system_prompt = raw["judge_preamble"] + raw["task_rubrics"][task] + raw["score_format"]
        if task in raw["reference_tasks"]:
            template = raw["user_prompt_template_with_reference"].format(
                history=history, prediction="{prediction}", ref_answer=pre_dia
            )
        else:
            template = raw["user_prompt_template"].format(
                history=history, prediction="{prediction}"
            )
        rows.append(
            {
                "turn": turn_index + 1,
                "system_prompt": system_prompt,
                "prompt_template": template,
                "golden_before": copy.deepcopy(pre_dia[:-1]),
            }
        )
        history = history + assistant
    return rows


def test_every_task_is_covered(first_of_each_task):
    assert sorted(first_of_each_task) == sorted(TASKS)


@pytest.mark.parametrize("task", TASKS)
def test_judge_request_matches_the_reference_construction(data_dir, raw, first_of_each_task, task):
    row = first_of_each_task[task]
    benchmark = make_benchmark(data_dir)
    dialogue = benchmark.by_id[row["id"]]
    expected = reference_rows(row, raw)
    planned = [t for d, t in benchmark.turns if d.id == dialogue.id]
    assert planned == [r["turn"] for r in expected]
    if task in raw["skip_first_turn_tasks"]:
        assert planned[0] == 2  # the golden first turn is context only
    for reference in expected:
        name, messages = judge_request(benchmark, dialogue, reference["turn"], ANSWER, {})
        assert messages == [
            {"role": "system", "content": reference["system_prompt"]},
            {
                "role": "user",
                "content": reference["prompt_template"].replace("{prediction}", ANSWER.strip()),
            },
        ]
        assert name.startswith(f"mtbench101-{task}")


def test_mr_reference_modes(data_dir, first_of_each_task):
    row = first_of_each_task["MR"]
    turn = len(row["history"])
    golden = row["history"][turn - 1]["bot"]
    compat = make_benchmark(data_dir)
    answer_mode = make_benchmark(data_dir, reference_mode="golden-answer")
    dialogue = compat.by_id[row["id"]]

    _, compat_messages = judge_request(compat, dialogue, turn, ANSWER, {})
    name, golden_messages = judge_request(answer_mode, dialogue, turn, ANSWER, {})
    assert name == "mtbench101-MR+ref-golden-answer"
    # compat: the Python list of the golden dialogue up to and including this turn
    listing = str([m for t in row["history"][:turn] for m in add_format(t["user"], t["bot"])])
    assert compat_messages[1]["content"].endswith(f"\n ### \n {listing} \n ###\n\n")
    # golden-answer: only this turn's golden answer; everything else identical
    assert golden_messages[1]["content"].endswith(f"\n ### \n {golden} \n ###\n\n")
    assert golden_messages[1]["content"].replace(golden, "") == compat_messages[1][
        "content"
    ].replace(listing, "")
    assert golden_messages[0] == compat_messages[0]


def test_compat_reference_omits_empty_golden_answers(data_dir):
    benchmark = make_benchmark(data_dir)
    dialogue = Dialogue.model_validate(
        {
            "task": "GR",
            "id": 99999,
            "history": [{"user": "u1", "bot": ""}, {"user": "u2", "bot": "b2"}],
        }
    )
    _, messages = judge_request(benchmark, dialogue, 2, " a ", {})
    expected = "[{'role': 'user', 'content': 'u1'}, {'role': 'user', 'content': 'u2'}, "
    expected += "{'role': 'assistant', 'content': 'b2'}]"
    assert f" ### \n {expected} \n ###" in messages[1]["content"]
    assert (
        "\n\n Human: u1\n\nAssistant: \n\n Human: u2\n\nAssistant:  a \n ***"
        in (messages[1]["content"])
    )


def test_golden_context_answer_request(data_dir, first_of_each_task):
    benchmark = make_benchmark(data_dir)
    row = first_of_each_task["CM"]
    dialogue = benchmark.by_id[row["id"]]
    turn = len(row["history"])
    expected = []
    for earlier in row["history"][: turn - 1]:
        expected += [
            {"role": "user", "content": earlier["user"]},
            {"role": "assistant", "content": earlier["bot"]},
        ]
    expected.append({"role": "user", "content": row["history"][turn - 1]["user"]})
    assert answer_request(benchmark, dialogue, turn, {}) == expected


def test_self_context_uses_own_answers_but_keeps_a_skipped_golden_first_turn(data_dir):
    benchmark = make_benchmark(data_dir, context="self")
    history = [{"user": f"u{i}", "bot": f"golden{i}"} for i in (1, 2, 3)]
    skip = Dialogue.model_validate({"task": "SC", "id": 90001, "history": history})
    plain = Dialogue.model_validate({"task": "IC", "id": 90002, "history": history})
    own = {1: "mine1", 2: "mine2"}
    assert answer_request(benchmark, skip, 3, own) == [
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "golden1"},
        {"role": "user", "content": "u2"},
        {"role": "assistant", "content": "mine2"},
        {"role": "user", "content": "u3"},
    ]
    assert [m["content"] for m in answer_request(benchmark, plain, 3, own)] == [
        "u1",
        "mine1",
        "u2",
        "mine2",
        "u3",
    ]
    # the judge sees the conversation the model really had
    _, messages = judge_request(benchmark, plain, 3, "a3", own)
    assert (
        "Assistant: mine1\n\n Human: u2\n\nAssistant: mine2\n\n Human: u3"
        in (messages[1]["content"])
    )


def test_system_prompt_only_when_asked(data_dir):
    files = {DIALOGUES: data_dir / DIALOGUES, JUDGE_PROMPTS: data_dir / JUDGE_PROMPTS}
    settings = BenchmarkSettings(answer=SamplingConfig(max_tokens=1024, system_prompt="Be brief."))
    benchmark = MTBench101(files, settings)
    dialogue = benchmark.by_id[1]
    assert answer_request(benchmark, dialogue, 1, {})[0] == {
        "role": "system",
        "content": "Be brief.",
    }
    assert answer_request(make_benchmark(data_dir), dialogue, 1, {})[0]["role"] == "user"
