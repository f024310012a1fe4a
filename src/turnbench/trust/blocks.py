"""The judge-trust blocks of one model's results, from its judged items.

`PanelItems` holds every judgment of every item of one model, per judge and per repeat (in
the benchmark's planned item order), and combines them as the run asked: repeats first
(`--repeat-aggregate`), then judges (`--panel-aggregate`), so the benchmark's own
aggregation (MT-Bench-101's minimum over turns, say) sees one combined judgment per item.
The other functions build the extra results keys: `by_judge`, `repeats`,
`judge_agreement`, `length` and `flagged_answers`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from turnbench.benchmarks.base import Benchmark, JudgedTurn
from turnbench.trust.agreement import label_agreement, rating_agreement
from turnbench.trust.combine import Aggregate, combine_positionally
from turnbench.trust.detector import scan
from turnbench.trust.length import LengthFit, LengthRow, spearman
from turnbench.types import SampleId

MOST_VARIABLE = 10
AnswerLookup = Callable[[SampleId, int], str | None]


def is_rating(item: JudgedTurn) -> bool:
    return item.status == "scored" and item.score is not None and item.checklist is None


def item_id(item: JudgedTurn) -> tuple[str, int, str | None]:
    return (str(item.sample.id), item.turn, item.criterion)


@dataclass
class PanelItems:
    """grid[judge][repeat] = the model's planned items as that judgment left them."""

    grid: dict[str, list[list[JudgedTurn]]]
    repeat_aggregate: Aggregate = "mean"
    panel_aggregate: Aggregate = "mean"
    judges: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.judges = list(self.grid)

    @property
    def repeats(self) -> int:
        return len(next(iter(self.grid.values()))) if self.grid else 0

    @property
    def is_panel(self) -> bool:
        return len(self.judges) > 1

    @cached_property
    def per_judge(self) -> dict[str, list[JudgedTurn]]:
        return {j: combine_positionally(self.grid[j], self.repeat_aggregate) for j in self.judges}

    @cached_property
    def combined(self) -> list[JudgedTurn]:
        return combine_positionally([self.per_judge[j] for j in self.judges], self.panel_aggregate)

    def judgment_counts(self, judges: Sequence[str] | None = None) -> dict[str, int]:
        cells = [
            item
            for judge in (judges or self.judges)
            for repeat in self.grid[judge]
            for item in repeat
        ]
        return {
            "expected": len(cells),
            "scored": sum(i.status == "scored" for i in cells),
            "failed": sum(i.status == "failed" for i in cells),
            "pending": sum(i.status == "pending" for i in cells),
        }


def by_judge(benchmark: Benchmark, panel: PanelItems) -> dict[str, Any]:
    """Each judge's own score tables (its repeats combined)."""
    return {
        judge: {
            **benchmark.aggregate(panel.per_judge[judge]).results_fields(),
            "counts": panel.judgment_counts([judge]),
        }
        for judge in panel.judges
    }


def _sd(values: Sequence[float]) -> float | None:
    return statistics.stdev(values) if len(values) >= 2 else None


def repeat_spread(benchmark: Benchmark, panel: PanelItems) -> dict[str, Any]:
    """How repeats of the same item differ, and how the overall moves across repeats."""
    sds: list[float] = []
    ranges: list[tuple[float, dict[str, Any]]] = []
    for judge in panel.judges:
        for column in zip(*panel.grid[judge], strict=True):
            scores = [item.score for item in column if is_rating(item)]
            if len(scores) < 2:
                continue
            sds.append(statistics.stdev(scores))  # type: ignore[arg-type]
            spread = max(scores) - min(scores)  # type: ignore[type-var,operator]
            first = column[0]
            ranges.append(
                (
                    spread,
                    {
                        **benchmark.describe(first.sample),
                        "turn": first.turn,
                        "judge": judge,
                        "criterion": first.criterion,
                        "scores": scores,
                    },
                )
            )
    overall = {
        judge: [benchmark.aggregate(repeat).overall for repeat in panel.grid[judge]]
        for judge in panel.judges
    }
    present = {j: [v for v in values if v is not None] for j, values in overall.items()}
    ranges.sort(key=lambda pair: -pair[0])
    return {
        "k": panel.repeats,
        "aggregate": panel.repeat_aggregate,
        "items": len(sds),
        "items_varying": sum(spread > 0 for spread, _ in ranges),
        "mean_item_sd": sum(sds) / len(sds) if sds else None,
        "max_item_range": ranges[0][0] if ranges else None,
        "overall_by_repeat": overall,
        "overall_range": {j: (max(v) - min(v)) if v else None for j, v in present.items()},
        "overall_sd": {j: _sd(v) for j, v in present.items()},
        "most_variable": [row for spread, row in ranges[:MOST_VARIABLE] if spread > 0],
    }


def panel_agreement(panel: PanelItems) -> dict[str, Any]:
    """Agreement of the judges on this model's items (each judge's repeats combined)."""
    judges = panel.judges
    columns = list(zip(*(panel.per_judge[j] for j in judges), strict=True))
    ratings = {
        judge: [column[index].score if is_rating(column[index]) else None for column in columns]
        for index, judge in enumerate(judges)
    }
    result = rating_agreement(ratings)
    lists = [column for column in columns if any(i.checklist is not None for i in column)]
    if lists:
        answers: dict[str, list[str | None]] = {judge: [] for judge in judges}
        for column in lists:
            length = max(len(i.checklist or ()) for i in column)
            for position in range(length):
                for index, judge in enumerate(judges):
                    checklist = column[index].checklist
                    answers[judge].append(
                        checklist[position]
                        if checklist is not None and position < len(checklist)
                        else None
                    )
        checklist_agreement = label_agreement(answers, "checklist")
        if result["items"] == 0:
            return checklist_agreement
        result["checklist"] = checklist_agreement
    return result


def length_rows(
    model: str, items: Sequence[JudgedTurn], length: Callable[[SampleId, int], int | None]
) -> list[LengthRow]:
    """One row per rated item: its answer's length in characters (`length` looks it up) and
    its score."""
    rows = []
    for item in items:
        if not is_rating(item):
            continue
        chars = length(item.sample.id, item.turn)
        if chars is not None:
            rows.append(LengthRow(model, item_id(item), chars, float(item.score)))  # type: ignore[arg-type]
    return rows


def length_scores(
    benchmark: Benchmark,
    items: Sequence[JudgedTurn],
    rows: Sequence[LengthRow],
    fit: LengthFit,
    overall: float | None,
) -> dict[str, Any]:
    """One model's `length` block: the rank correlation and the length-controlled overall
    (the benchmark's aggregation of its length-adjusted scores)."""
    chars = {row.item: row.chars for row in rows}
    adjusted = [
        replace(item, score=fit.adjust(item.score, chars[item_id(item)]))  # type: ignore[arg-type]
        if is_rating(item) and item_id(item) in chars
        else item
        for item in items
    ]
    controlled = benchmark.aggregate(adjusted).overall if fit.slope is not None else overall
    return {
        "spearman": spearman([r.chars for r in rows], [r.score for r in rows]),
        "items": len(rows),
        "median_chars": statistics.median([r.chars for r in rows]) if rows else None,
        "method": fit.method,
        "slope_per_doubling": fit.slope_per_doubling,
        "length_controlled_overall": controlled,
        "difference": (
            controlled - overall if controlled is not None and overall is not None else None
        ),
    }


def flagged_answers(
    benchmark: Benchmark,
    turns: Sequence[tuple[Any, int]],
    answer: AnswerLookup,
    model: str | None = None,
) -> list[dict[str, Any]]:
    """Answers of the given (sample, turn) pairs that the injection detector flags."""
    found = []
    for sample, turn in turns:
        text = answer(sample.id, turn)
        question = "\n".join(t.user for t in sample.turns[:turn])
        flags = scan(text, question) if text else []
        if flags:
            found.append(
                {
                    **benchmark.describe(sample),
                    "turn": turn,
                    **({"model": model} if model is not None else {}),
                    "flags": [
                        {"kind": f.kind, "label": f.label, "excerpt": f.excerpt} for f in flags
                    ],
                }
            )
    return found
