"""StructFlowBench's metrics on hand-computed turns (the rules of the reference score.py)."""

from __future__ import annotations

import pytest

from turnbench.benchmarks.structflowbench.scoring import (
    CONSTRAINT_TYPES,
    TASKS,
    JudgedConstraints,
    score_tables,
    turn_metrics,
)

C, S = "Content Constraint", "Style Constraint"  # weight 1
R, F = "recall", "follow-up"  # weight 2


@pytest.mark.parametrize(
    ("types", "verdicts", "csr", "isr", "wcsr"),
    [
        ((C, S), ("Yes", "Yes"), 1.0, 1, 1.0),
        ((C, R), ("Yes", "No"), 0.5, 0, 1 / 3),  # the structural one (weight 2) missed
        ((C, R), ("No", "Yes"), 0.5, 0, 2 / 3),
        ((C, S, R, F), ("Yes", "No", "Yes", "No"), 0.5, 0, (1 + 2) / 6),
        ((C,), ("N/A",), 0.0, 0, 0.0),  # only "Yes" is met
        ((C,), ("yes",), 0.0, 0, 0.0),  # ... exactly "Yes", as score.py compares
        (("Unknown Type", C), ("No", "Yes"), 0.5, 0, 1.0),  # unknown: CSR/ISR only
        (("Unknown Type",), ("Yes",), 1.0, 1, 0.0),  # no weight at all: WCSR 0
        ((C, S, R), ("Yes", "Yes"), 1.0, 1, 1.0),  # a short list is cut (zip)
        ((C,), ("No", "Yes"), 0.0, 0, 0.0),  # a long one too
    ],
)
def test_turn_metrics(types, verdicts, csr, isr, wcsr):
    metrics = turn_metrics(types, verdicts)
    assert (metrics.csr, metrics.isr) == (pytest.approx(csr), isr)
    assert metrics.wcsr == pytest.approx(wcsr)


def turn(dialogue, task, number, types, verdicts):
    return JudgedConstraints(dialogue, task, number, types, ("q",) * len(types), verdicts)


def test_tables():
    turns = [
        turn(1, "mix", 1, (C, R), ("Yes", "No")),  # CSR 1/2, ISR 0, WCSR 1/3
        turn(1, "mix", 2, (C,), ("Yes",)),  # 1, 1, 1
        turn(2, "Casual Chat", 1, (S, F, F), ("N/A", "Yes", "Yes")),  # 2/3, 0, 4/5
        turn(2, "Casual Chat", 2, (S,), None),  # failed: in no metric
    ]
    tables = score_tables(turns)
    assert tables["metrics"] == {
        "CSR": pytest.approx((1 / 2 + 1 + 2 / 3) / 3),
        "ISR": pytest.approx(1 / 3),
        "WCSR": pytest.approx((1 / 3 + 1 + 4 / 5) / 3),
        "DRFR": pytest.approx(4 / 6),
    }
    assert tables["overall"] == tables["metrics"]["WCSR"]
    assert list(tables["by_constraint_type"]) == list(CONSTRAINT_TYPES)
    assert tables["by_constraint_type"][C] == 1.0
    assert tables["by_constraint_type"][S] == 0.0
    assert tables["by_constraint_type"][R] == 0.0
    assert tables["by_constraint_type"][F] == 1.0
    assert tables["by_constraint_type"]["summary"] is None  # none in these turns
    assert list(tables["by_task"]) == list(TASKS)
    assert tables["by_task"]["mix"] == pytest.approx((1 / 3 + 1) / 2)
    assert tables["by_task"]["Casual Chat"] == pytest.approx(4 / 5)
    assert tables["by_task"]["Creative Writing"] is None
    assert tables["by_turn"] == {"1": pytest.approx((1 / 3 + 4 / 5) / 2), "2": 1.0}
    assert tables["other_verdicts"] == [
        {"id": 2, "turn": 1, "item": 1, "type": S, "verdict": "N/A"}
    ]
    assert tables["counts"] == {
        "dialogues": 2,
        "constraints": 6,
        "constraints_met": 4,
        "other_verdicts": 1,
    }
