"""StructFlowBench's metrics, exactly as the reference `evaluation/score.py` computes them.

A constraint is met when its verdict is exactly "Yes" (a "No", an "N/A" or anything else is
not met). Per turn: CSR = share of its constraints met, ISR = 1 when all are met, WCSR =
weighted share, with weight 1 for the 8 intra-turn constraint types and 2 for the 5
structural ones (a type outside both lists counts in CSR and ISR but not in WCSR; a turn
without weight has WCSR 0). Verdicts are paired with constraints in order, and a list
longer or shorter than the checklist is cut to the shorter, as `zip` does in score.py.
Overall CSR, ISR, WCSR = means over turns; DRFR = share met over all constraints; per
constraint type = share met; per task = mean WCSR of its turns. Nothing is rounded (the
published table rounds to 2 decimals). Turns without verdicts (a judgment that failed or is
still pending) are in no metric; the engine counts them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from turnbench.stats.scoring import bootstrap_mean_ci, mean

WEIGHTS: dict[str, int] = {
    "Inverse Constraint": 1,
    "Keyword/Element Constraint": 1,
    "Style Constraint": 1,
    "Situation Constraint": 1,
    "Basic Format Constraint": 1,
    "Quantity Format Constraint": 1,
    "Template Format Constraint": 1,
    "Content Constraint": 1,
    "follow-up": 2,
    "refinement": 2,
    "expansion": 2,
    "summary": 2,
    "recall": 2,
}
CONSTRAINT_TYPES: tuple[str, ...] = tuple(WEIGHTS)
TASKS: tuple[str, ...] = (
    "Fact-based Q&A",
    "Open-ended Questions",
    "Professional Writing",
    "Practical Writing",
    "Creative Writing",
    "Casual Chat",
    "Task-oriented Role-playing",
    "mix",
)
METRICS = ("CSR", "ISR", "WCSR", "DRFR")
MET = "Yes"


def weights_of(types: Iterable[str]) -> tuple[float, ...]:
    """Each constraint's WCSR weight (0 for a type outside the reference's table)."""
    return tuple(float(WEIGHTS.get(kind, 0)) for kind in types)


@dataclass(frozen=True)
class TurnMetrics:
    csr: float
    isr: int
    wcsr: float
    results: tuple[int, ...]  # 1 met, 0 not, per constraint paired with a verdict


def turn_metrics(types: Sequence[str], verdicts: Sequence[str]) -> TurnMetrics:
    """One turn's CSR, ISR and WCSR from its constraint types and verdicts."""
    results = tuple(1 if verdict == MET else 0 for _, verdict in zip(types, verdicts, strict=False))
    numerator = denominator = 0.0
    for kind, result in zip(types, results, strict=False):
        weight = WEIGHTS.get(kind)
        if weight is None:
            continue
        numerator += result * weight
        denominator += weight
    return TurnMetrics(
        csr=sum(results) / len(results) if results else 0.0,
        isr=0 if any(result != 1 for result in results) else 1,
        wcsr=numerator / denominator if denominator else 0.0,
        results=results,
    )


@dataclass(frozen=True)
class JudgedConstraints:
    """One turn's verdicts (None: no verdicts, the turn is left out)."""

    dialogue: int
    task: str
    turn: int
    types: tuple[str, ...]
    questions: tuple[str, ...]
    verdicts: tuple[str, ...] | None


def score_tables(turns: Sequence[JudgedConstraints]) -> dict[str, Any]:
    """Every metric table of results.json (unrounded), keyed as overall_score.csv is: the
    fields of `StructFlowBenchTables`, its `counts` among them."""
    judged = [t for t in turns if t.verdicts is not None]
    by_turn: list[tuple[JudgedConstraints, TurnMetrics]] = [
        (t, turn_metrics(t.types, t.verdicts or ())) for t in judged
    ]
    all_results = [r for _, m in by_turn for r in m.results]
    per_type: dict[str, list[int]] = defaultdict(list)
    for item, metrics in by_turn:
        for kind, result in zip(item.types, metrics.results, strict=False):
            if kind in WEIGHTS:
                per_type[kind].append(result)
    tasks = list(TASKS) + sorted({t.task for t in turns} - set(TASKS))
    per_dialogue: dict[int, list[float]] = defaultdict(list)
    for item, metrics in by_turn:
        per_dialogue[item.dialogue].append(metrics.wcsr)
    interval = bootstrap_mean_ci(list(per_dialogue.values()))
    positions = sorted({t.turn for t in turns})
    other = [
        {"id": item.dialogue, "turn": item.turn, "item": number, "type": kind,
         "verdict": verdict}
        for item in judged
        for number, (kind, verdict) in enumerate(zip(item.types, item.verdicts or (),
                                                     strict=False), start=1)
        if verdict not in ("Yes", "No")
    ]  # fmt: skip
    return {
        "overall": mean(m.wcsr for _, m in by_turn),
        "overall_ci95": list(interval) if interval else None,
        "metrics": {
            "CSR": mean(m.csr for _, m in by_turn),
            "ISR": mean(float(m.isr) for _, m in by_turn),
            "WCSR": mean(m.wcsr for _, m in by_turn),
            "DRFR": mean(float(r) for r in all_results),
        },
        "by_constraint_type": {
            kind: mean(float(r) for r in per_type[kind]) for kind in CONSTRAINT_TYPES
        },
        "by_task": {
            task: mean(m.wcsr for item, m in by_turn if item.task == task) for task in tasks
        },
        "by_turn": {
            str(p): mean(m.wcsr for item, m in by_turn if item.turn == p) for p in positions
        },
        "other_verdicts": other,
        "counts": {
            "dialogues": len({t.dialogue for t in turns}),
            "constraints": len(all_results),
            "constraints_met": sum(all_results),
            "other_verdicts": len(other),
        },
    }
