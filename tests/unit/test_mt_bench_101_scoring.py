"""MT-Bench-101 scores on hand-computed tables: minimum rule, failures, tiers, turn analysis."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnbench.benchmarks.base import BenchmarkSettings
from turnbench.benchmarks.mt_bench_101 import MTBench101
from turnbench.benchmarks.mt_bench_101.data import DIALOGUES, JUDGE_PROMPTS
from turnbench.benchmarks.mt_bench_101.scoring import (
    TASK_CODES,
    TurnOutcome,
    score_tables,
    stratified_bootstrap_ci,
)
from turnbench.engine.work import Work
from turnbench.journal.config import RunConfig
from turnbench.judging.judge import JudgeSettings
from turnbench.record_keys import judgment_key
from turnbench.results.build import LogView, model_results
from turnbench.types import JudgmentRecord


def results_of(benchmark: MTBench101, records: list, parser: str = "strict") -> dict:
    """The model's results, rebuilt from `records` as a run rebuilds them."""
    judges = [JudgeSettings(spec="openai/j", parser=parser)]  # type: ignore[arg-type]
    config = RunConfig(
        benchmark="mt-bench-101",
        mode="run",
        model="m",
        judges=judges,
        options=benchmark.config_options(),
    )
    work = Work(benchmark, judges, "run", model="m")
    return model_results(work, config, LogView(records), "m")


def scored(task: str, dialogue: int, turn: int, score: float) -> TurnOutcome:
    return TurnOutcome(task, dialogue, turn, "scored", score)


# task: {dialogue: {turn: score}}
TABLE = {
    "CM": {1: {2: 8, 3: 6}, 2: {2: 4}},
    "AR": {3: {2: 7}},
    "SI": {4: {1: 9, 2: 3}},
    "TS": {5: {1: 5}},
    "CC": {6: {1: 6, 2: 8}},
    "CR": {7: {2: 10}},
    "FR": {8: {2: 2}},
    "SC": {9: {2: 4}},
    "SA": {10: {2: 8}},
    "MR": {11: {1: 3, 2: 5}, 12: {1: 9}},
    "GR": {13: {1: 7}},
    "IC": {14: {1: 2, 2: 6, 3: 1}},
    "PI": {15: {1: 9}},
}
OUTCOMES = [
    scored(task, dialogue, turn, score)
    for task, dialogues in TABLE.items()
    for dialogue, turns in dialogues.items()
    for turn, score in turns.items()
]


def test_dialogue_minimum_task_mean_and_overall():
    tables, dialogues = score_tables(OUTCOMES, TASK_CODES, "strict")
    assert tables["by_task"] == {
        "CM": 5.0,  # dialogues min(8, 6) = 6 and 4
        "AR": 7.0,
        "SI": 3.0,
        "TS": 5.0,
        "CC": 6.0,
        "CR": 10.0,
        "FR": 2.0,
        "SC": 4.0,
        "SA": 8.0,
        "MR": 6.0,  # dialogues min(3, 5) = 3 and 9
        "GR": 7.0,
        "IC": 1.0,
        "PI": 9.0,
    }
    assert tables["overall"] == pytest.approx(73 / 13)
    assert dialogues.incomplete == [] and dialogues.dropped == []


def test_ability_tiers_are_means_of_their_tasks():
    tables, _ = score_tables(OUTCOMES, TASK_CODES, "strict")
    expected = {
        "Memory": 5.0,
        "Understanding": (7 + 3) / 2,
        "Interference": (5 + 6) / 2,
        "Rephrasing": (10 + 2) / 2,
        "Reflection": (4 + 8) / 2,
        "Reasoning": (6 + 7) / 2,
        "Questioning": (1 + 9) / 2,
        # tier 1: mean of its tasks (not of its tier-2 abilities: that would be 31/6)
        "Perceptivity": (5 + 7 + 3 + 5 + 6) / 5,
        "Adaptability": (10 + 2 + 4 + 8 + 6 + 7) / 6,
        "Interactivity": (1 + 9) / 2,
    }
    assert list(tables["by_ability"]) == list(expected)
    assert tables["by_ability"] == pytest.approx(expected)


def test_mean_over_turns_and_turn_analysis():
    tables, _ = score_tables(OUTCOMES, TASK_CODES, "strict")
    assert tables["by_task_mean_over_turns"]["CM"] == 6.0  # (8 + 6 + 4) / 3
    assert tables["by_task_mean_over_turns"]["MR"] == pytest.approx(17 / 3)
    assert tables["by_task_mean_over_turns"]["IC"] == 3.0
    task_means = [6, 7, 6, 5, 7, 10, 2, 4, 8, 17 / 3, 7, 3, 9]
    assert tables["overall_mean_over_turns"] == pytest.approx(sum(task_means) / 13)
    assert tables["by_task_turn"]["CM"] == {"2": 6.0, "3": 6.0}
    assert tables["by_task_turn"]["MR"] == {"1": 6.0, "2": 5.0}
    assert tables["by_task_turn"]["IC"] == {"1": 2.0, "2": 6.0, "3": 1.0}
    assert tables["by_turn"] == pytest.approx(
        {
            "1": (9 + 5 + 6 + 6 + 7 + 2 + 9) / 7,  # SI TS CC MR GR IC PI
            "2": (6 + 7 + 3 + 8 + 10 + 2 + 4 + 8 + 5 + 6) / 10,
            "3": (6 + 1) / 2,  # CM IC
        }
    )


FAILED_TURN = [
    scored("CM", 1, 2, 8),
    TurnOutcome("CM", 1, 3, "failed"),
    scored("CM", 2, 2, 4),
]


def test_strict_leaves_a_dialogue_with_a_failed_turn_unscored():
    tables, dialogues = score_tables(FAILED_TURN, ["CM"], "strict")
    assert tables["by_task"] == {"CM": 4.0}  # not min(8) = 8 for dialogue 1
    assert dialogues.incomplete == [1] and dialogues.dropped == []
    assert tables["by_task_turn"] == {"CM": {"2": 6.0, "3": None}}
    assert tables["by_task_mean_over_turns"] == {"CM": 6.0}


def test_compat_drops_the_failed_turn_and_reports_it():
    tables, dialogues = score_tables(FAILED_TURN, ["CM"], "compat")
    assert tables["by_task"] == {"CM": 6.0}  # dialogue 1 scored min(8) = 8
    assert dialogues.incomplete == [] and dialogues.dropped == [1]


@pytest.mark.parametrize("mode", ["strict", "compat"])
def test_pending_turn_leaves_the_dialogue_unscored_in_both_modes(mode):
    outcomes = [scored("CM", 1, 2, 8), TurnOutcome("CM", 1, 3, "pending"), scored("CM", 2, 2, 4)]
    tables, dialogues = score_tables(outcomes, ["CM"], mode)
    assert tables["by_task"] == {"CM": 4.0}
    assert dialogues.incomplete == [1]


def test_no_overall_while_a_task_has_no_score():
    outcomes = [o for o in OUTCOMES if o.task != "GR"] + [TurnOutcome("GR", 13, 1, "failed")]
    tables, _ = score_tables(outcomes, TASK_CODES, "strict")
    assert tables["by_task"]["GR"] is None
    assert tables["overall"] is None
    assert tables["by_ability"]["Reasoning"] is None
    assert tables["by_ability"]["Adaptability"] is None
    assert tables["by_ability"]["Memory"] == 5.0


def test_stratified_bootstrap():
    groups = [[1.0, 2.0, 3.0, 9.0], [5.0, 5.0, 6.0]]
    point = (15 / 4 + 16 / 3) / 2
    low, high = stratified_bootstrap_ci(groups)
    assert low < point < high
    assert low >= 1.0 and high <= 9.0
    assert stratified_bootstrap_ci(groups) == (low, high)  # seeded
    assert stratified_bootstrap_ci([[4.0, 4.0], [6.0, 6.0]]) == (5.0, 5.0)
    assert stratified_bootstrap_ci([[1.0, 2.0], [3.0]]) is None  # a singleton task


# -- the same rules through the benchmark's results, from log records -------------------------
def results_for(data_dir: Path, parser: str, failed_key: tuple[int, int] | None) -> dict:
    files = {DIALOGUES: data_dir / DIALOGUES, JUDGE_PROMPTS: data_dir / JUDGE_PROMPTS}
    benchmark = MTBench101(files, BenchmarkSettings(parser=parser, limit=1))  # type: ignore[arg-type]
    records = []
    for dialogue, turn in benchmark.turns:
        score = float(1 + (dialogue.id + turn) % 10)
        failed = (dialogue.id, turn) == failed_key
        records.append(
            JudgmentRecord(
                key=judgment_key("openai/j", "m", dialogue.id, turn),
                judge="openai/j",
                model="m",
                sample_id=dialogue.id,
                turn=turn,
                prompt_name="p",
                messages=[],
                outputs=["no rating" if failed else f"[[{score:g}]]"],
                parser="p",
                status="parse_failed" if failed else "scored",
                score=None if failed else score,
                parse_error="no rating" if failed else None,
            )
        )
    return results_of(benchmark, records, parser)


def test_model_results_counts_a_failed_turn(data_dir):
    # dialogue 1 (GR, 3 turns) is the first GR dialogue; its turn 2 fails to parse
    strict = results_for(data_dir, "strict", (1, 2))
    compat = results_for(data_dir, "compat", (1, 2))
    for results in (strict, compat):
        assert results["complete"] is True
        assert results["context"] == "golden" and results["reference_mode"] == "compat"
        assert {k: results["counts"][k] for k in ("expected", "judged", "failed", "pending")} == {
            "expected": 30,
            "judged": 29,
            "failed": 1,
            "pending": 0,
        }
        assert results["parse_failures"] == [
            {"id": 1, "task": "GR", "turn": 2, "reason": "no rating"}
        ]
    assert strict["counts"]["incomplete_dialogues"] == 1
    assert strict["incomplete_dialogue_ids"] == [1]
    assert strict["by_task"]["GR"] is None and strict["overall"] is None
    assert compat["counts"]["incomplete_dialogues"] == 0
    assert compat["counts"]["dialogues_with_dropped_turns"] == 1
    assert compat["by_task"]["GR"] == min(1 + (1 + 1) % 10, 1 + (1 + 3) % 10)  # turns 1, 3
    assert compat["overall"] is not None


def test_model_results_without_judgments_is_pending(data_dir):
    files = {DIALOGUES: data_dir / DIALOGUES, JUDGE_PROMPTS: data_dir / JUDGE_PROMPTS}
    benchmark = MTBench101(files, BenchmarkSettings(limit=1))
    results = results_of(benchmark, [])
    assert results["complete"] is False
    assert results["counts"]["pending"] == 30 and results["counts"]["incomplete_dialogues"] == 13
    assert results["overall"] is None and results["overall_ci95"] is None
