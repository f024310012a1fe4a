"""Aggregation rules of repeats and panels, on hand-computed tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from turnbench.benchmarks.base import JudgedTurn, Sample, Turn
from turnbench.benchmarks.tables import ScoreTables
from turnbench.trust.blocks import PanelItems, by_judge, panel_agreement, repeat_spread
from turnbench.trust.combine import (
    combine_checklists,
    combine_items,
    combine_scores,
    combine_verdicts,
)

SAMPLE = Sample(id="d1", group="g", turns=(Turn("q1"), Turn("q2")))
OTHER = Sample(id="d2", group="g", turns=(Turn("q1"), Turn("q2")))


@pytest.mark.parametrize(
    ("values", "how", "expected"),
    [
        ([7, 8, 9], "mean", 8.0),
        ([7, 9], "median", 8.0),
        ([1, 2, 10], "median", 2.0),
        ([1, 2, 10], "mean", 13 / 3),
        ([7, 7, 9], "majority", 7.0),
        ([7, 9], "majority", 8.0),  # no majority: the median
        ([5, 7, 7, 9, 9], "majority", 7.0),  # 7 and 9 tie: median of all five
        ([3], "majority", 3.0),
        ([], "mean", None),
    ],
)
def test_combine_scores(values, how, expected):
    assert combine_scores(values, how) == expected


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        (["A", "A", "B"], "A"),
        (["A", "B"], "tie"),
        (["A", "tie"], "tie"),
        (["B"], "B"),
        (["tie", "tie", "A"], "tie"),
        (["B", "B", "A", "A", "tie"], "tie"),
        ([], None),
    ],
)
def test_combine_verdicts(verdicts, expected):
    assert combine_verdicts(verdicts) == expected


def test_combine_checklists_item_by_item():
    lists = [("Yes", "No", "Yes"), ("Yes", "Yes", "No"), ("No", "No", "N/A")]
    assert combine_checklists(lists) == ("Yes", "No", "No")
    assert combine_checklists([("Yes",), ("No",)]) == ("No",)  # a split is not met
    assert combine_checklists([("Yes",), ("N/A",), ("N/A",)]) == ("N/A",)


def item(sample: Sample, turn: int, status: str, score: float | None = None, reasks: int = 0):
    return JudgedTurn(sample, turn, status, score, reasks=reasks)  # type: ignore[arg-type]


def test_combine_items_status_rules():
    scored, failed, pending = (
        item(SAMPLE, 1, "scored", 6, 1),
        item(SAMPLE, 1, "failed", reasks=2),
        item(SAMPLE, 1, "pending"),
    )
    combined = combine_items([scored, failed, pending], "mean")
    assert (combined.status, combined.score, combined.reasks) == ("scored", 6, 3)
    assert combine_items([failed, pending], "mean").status == "pending"
    assert combine_items([failed, failed], "mean").status == "failed"
    assert combine_items([scored], "mean") is scored


class MinOverTurns:
    """A stand-in benchmark whose sample score is the minimum over its turns (MT-Bench-101's
    rule) and overall the mean of sample scores."""

    def aggregate(self, judged: Sequence[JudgedTurn]) -> ScoreTables:
        by_sample: dict[Any, list[float]] = {}
        for it in judged:
            if it.status == "scored" and it.score is not None:
                by_sample.setdefault(it.sample.id, []).append(it.score)
        scores = [min(v) for v in by_sample.values()]
        overall = sum(scores) / len(scores) if scores else None
        return ScoreTables(overall=overall, overall_ci95=None, counts={"x": 1})

    def describe(self, sample: Sample) -> dict[str, Any]:
        return {"id": sample.id}


def grid(values: dict[str, list[list[float | None]]]) -> dict[str, list[list[JudgedTurn]]]:
    """judge -> repeat -> scores of the planned items (d1 t1, d1 t2); None = failed."""
    return {
        judge: [
            [
                item(SAMPLE, turn, "scored", score)
                if score is not None
                else item(SAMPLE, turn, "failed")
                for turn, score in enumerate(scores, 1)
            ]
            for scores in repeats
        ]
        for judge, repeats in values.items()
    }


def test_repeats_then_judges_are_combined_per_item_before_the_benchmark_aggregates():
    # judge a: turn 1 repeats (9, 9), turn 2 (3, 5); judge b: turn 1 (3, 3), turn 2 (9, 9)
    panel = PanelItems(grid({"a": [[9, 3], [9, 5]], "b": [[3, 9], [3, 9]]}), "mean", "mean")
    assert [i.score for i in panel.per_judge["a"]] == [9, 4]
    assert [i.score for i in panel.per_judge["b"]] == [3, 9]
    assert [i.score for i in panel.combined] == [6, 6.5]
    bench = MinOverTurns()
    # the minimum over turns applies to the combined scores: min(6, 6.5) = 6, where taking
    # each judge's minimum first would give mean(4, 3) = 3.5
    assert bench.aggregate(panel.combined).overall == 6
    tables = by_judge(bench, panel)  # type: ignore[arg-type]
    assert tables["a"]["overall"] == 4 and tables["b"]["overall"] == 3
    assert tables["a"]["counts"] == {"expected": 4, "scored": 4, "failed": 0, "pending": 0}
    assert "x" not in tables["a"]  # the benchmark's counts stay out


def test_median_and_majority_panels():
    values = {"a": [[8, 2]], "b": [[8, 4]], "c": [[3, 4]]}
    assert [i.score for i in PanelItems(grid(values), "mean", "median").combined] == [8, 4]
    assert [i.score for i in PanelItems(grid(values), "mean", "majority").combined] == [8, 4]
    assert [i.score for i in PanelItems(grid(values), "mean", "mean").combined] == [
        pytest.approx(19 / 3),
        pytest.approx(10 / 3),
    ]
    repeats = {"a": [[2, 2], [9, 2], [10, 2]]}
    assert [i.score for i in PanelItems(grid(repeats), "median").combined] == [9, 2]


def test_a_judge_that_failed_an_item_leaves_it_to_the_others():
    panel = PanelItems(grid({"a": [[None, 5]], "b": [[7, 5]]}))
    assert [(i.status, i.score) for i in panel.combined] == [("scored", 7), ("scored", 5)]
    assert panel.judgment_counts() == {"expected": 4, "scored": 3, "failed": 1, "pending": 0}


def test_repeat_spread_on_a_hand_computed_table():
    # item 1 repeats (6, 8, 7): sd 1, range 2; item 2 (5, 5, 5): sd 0
    panel = PanelItems(grid({"a": [[6, 5], [8, 5], [7, 5]]}))
    spread = repeat_spread(MinOverTurns(), panel)  # type: ignore[arg-type]
    assert spread["k"] == 3
    assert spread["items"] == 2 and spread["items_varying"] == 1
    assert spread["mean_item_sd"] == pytest.approx(0.5)
    assert spread["max_item_range"] == 2
    assert spread["overall_by_repeat"] == {"a": [5, 5, 5]}  # min over turns per repeat
    assert spread["overall_range"] == {"a": 0}
    assert spread["most_variable"] == [
        {"id": "d1", "turn": 1, "judge": "a", "criterion": None, "scores": [6, 8, 7]}
    ]


def test_panel_agreement_uses_each_judges_combined_scores():
    # after combining repeats: a = (9, 4), b = (3, 9)
    panel = PanelItems(grid({"a": [[9, 3], [9, 5]], "b": [[3, 9], [3, 9]]}))
    agreement = panel_agreement(panel)
    assert agreement["kind"] == "ratings" and agreement["items"] == 2
    # values 9,3 | 4,9: D_o = (2*36 + 2*25) / 4 = 30.5; pooled 9,3,4,9 mean 6.25,
    # SS = 7.5625 + 10.5625 + 5.0625 + 7.5625 = 30.75, D_e = 2*4*30.75 / 12 = 20.5
    assert agreement["krippendorff_alpha"] == pytest.approx(1 - 30.5 / 20.5)
    assert agreement["pairs"]["a | b"]["mean_abs_difference"] == pytest.approx(5.5)
