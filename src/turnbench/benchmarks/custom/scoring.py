"""Scores of a user-defined benchmark: per check, per turn, per dialogue, per tag.

Every scored element of a judged turn is one requirement with a weight (1 unless the file
says otherwise) and a value from 0 to 1: the rubric rating r (1-10) counts as (r - 1) / 9,
each checklist question 1 when the judge said "Yes" (else 0), each deterministic check 1
when it passed. A turn's score is the weighted mean of its requirements; a dialogue's is the
minimum or the mean of its judged turns' scores (the file's `dialogue_score`); `overall` is
the mean over dialogues. A turn whose judge reply was unreadable, or that is still pending,
has no score, and neither has its dialogue (listed under `incomplete_dialogue_ids`).
Deterministic checks run with a time limit (`bounded`): one that does not finish fails.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from turnbench.benchmarks.base import JudgedTurn
from turnbench.benchmarks.custom.bounded import BoundedChecks
from turnbench.benchmarks.custom.checks import CheckResult
from turnbench.benchmarks.custom.spec import BenchmarkSpec, DialogueSpec, TurnSpec
from turnbench.stats.scoring import bootstrap_mean_ci, mean

CHECKLIST_CRITERION = "checklist"


@dataclass
class TurnScore:
    dialogue: DialogueSpec
    turn: int
    status: Literal["scored", "failed", "pending"]
    score: float | None = None
    rubric: float | None = None
    verdicts: tuple[str, ...] | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    parts: list[tuple[str, float, float]] = field(default_factory=list)  # name, weight, value


def rubric_value(rating: float) -> float:
    return (rating - 1.0) / 9.0


def turn_answer(items: Sequence[JudgedTurn]) -> str | None:
    return next((item.answer for item in items if item.answer is not None), None)


def _checked_answer(items: Sequence[JudgedTurn]) -> str | None:
    """The answer a turn's checks read: none when it was cut off inside <think>."""
    return None if any(i.unclosed_think for i in items) else turn_answer(items)


def score_turn(
    dialogue: DialogueSpec,
    turn: int,
    items: Sequence[JudgedTurn],
    checked: Sequence[CheckResult] = (),
) -> TurnScore:
    """One judged turn's score; `checked`: the outcome of each of the turn's checks on its
    answer (given when it has one)."""
    spec: TurnSpec = dialogue.turns[turn - 1]
    answer = turn_answer(items)
    rubric = next((i for i in items if i.criterion is None and spec.rubric is not None), None)
    checklist = next((i for i in items if i.criterion == CHECKLIST_CRITERION), None)
    judged = [i for i in (rubric, checklist) if i is not None]
    result = TurnScore(dialogue, turn, "scored")
    if any(i.status == "pending" for i in items) or answer is None:
        result.status = "pending"
    elif any(i.status == "failed" for i in judged) or any(i.unclosed_think for i in items):
        result.status = "failed"
    if answer is not None and not any(i.unclosed_think for i in items):
        for check, outcome in zip(spec.checks, checked, strict=True):
            result.checks.append(
                {"name": check.name, "kind": check.kind, "passed": outcome.passed,
                 "detail": outcome.detail}
            )  # fmt: skip
            result.parts.append((check.name, check.weight, 1.0 if outcome.passed else 0.0))
    if rubric is not None and rubric.status == "scored" and rubric.score is not None:
        assert spec.rubric is not None
        result.rubric = rubric.score
        result.parts.append(("rubric", spec.rubric.weight, rubric_value(rubric.score)))
    if checklist is not None and checklist.checklist is not None:
        result.verdicts = checklist.checklist
        for item, verdict in zip(spec.checklist, checklist.checklist, strict=False):
            result.parts.append((item.name, item.weight, 1.0 if verdict == "Yes" else 0.0))
    if result.status == "scored":
        total = sum(weight for _, weight, _ in result.parts)
        result.score = sum(w * v for _, w, v in result.parts) / total if total else None
    return result


def score_tables(
    spec: BenchmarkSpec,
    planned: Sequence[DialogueSpec],
    judged: Sequence[JudgedTurn],
    checks: BoundedChecks | None = None,
) -> dict[str, Any]:
    """The fields of a benchmark file's `CustomTables`, its `counts` among them; `checks` runs
    the deterministic checks (and remembers their outcomes across calls)."""
    by_turn_items: dict[tuple[Any, int], list[JudgedTurn]] = defaultdict(list)
    for item in judged:
        by_turn_items[(item.sample.id, item.turn)].append(item)
    # every check of every answered turn first, in one go (one worker process for them all)
    requests = [
        (check, answer)
        for dialogue in planned
        for number, turn in enumerate(dialogue.turns, start=1)
        if turn.judged
        and (answer := _checked_answer(by_turn_items.get((dialogue.id, number), []))) is not None
        for check in turn.checks
    ]
    outcomes = iter((checks or BoundedChecks()).run_all(requests))
    turns: list[TurnScore] = []
    dialogue_scores: dict[str, float | None] = {}
    incomplete: list[Any] = []
    for dialogue in planned:
        scores = []
        for number, turn in enumerate(dialogue.turns, start=1):
            if not turn.judged:
                continue
            items = by_turn_items.get((dialogue.id, number), [])
            checked = (
                [next(outcomes) for _ in turn.checks] if _checked_answer(items) is not None else []
            )
            outcome = score_turn(dialogue, number, items, checked)
            turns.append(outcome)
            scores.append(outcome.score)
        if any(score is None for score in scores) or not scores:
            dialogue_scores[str(dialogue.id)] = None
            incomplete.append(dialogue.id)
            continue
        values = [s for s in scores if s is not None]
        combined = min(values) if spec.dialogue_score == "min" else sum(values) / len(values)
        dialogue_scores[str(dialogue.id)] = combined
    scored = {k: v for k, v in dialogue_scores.items() if v is not None}
    tags = list(dict.fromkeys(tag for d in planned for tag in d.tags))
    by_tag = {
        tag: mean(scored[str(d.id)] for d in planned if tag in d.tags and str(d.id) in scored)
        for tag in tags
    }
    positions = sorted({t.turn for t in turns})
    by_turn = {
        str(p): mean(t.score for t in turns if t.turn == p and t.score is not None)
        for p in positions
    }
    checks: dict[str, list[float]] = defaultdict(list)
    for outcome in turns:
        for name, _, value in outcome.parts:
            if name != "rubric":
                checks[name].append(value)
    interval = bootstrap_mean_ci([[value] for value in scored.values()])
    ratings = [t.rubric for t in turns if t.rubric is not None]
    return {
        "overall": mean(scored.values()),
        "overall_ci95": list(interval) if interval else None,
        "history": spec.history,
        "dialogue_score": spec.dialogue_score,
        "by_tag": by_tag,
        "by_check": {name: mean(values) for name, values in checks.items()},
        "by_turn": by_turn,
        "by_dialogue": dialogue_scores,
        "rubric_mean": mean(ratings),
        "turns": [
            {
                "id": t.dialogue.id,
                "turn": t.turn,
                "status": t.status,
                "score": t.score,
                "rubric": t.rubric,
                "checklist": list(t.verdicts) if t.verdicts is not None else None,
                "checks": t.checks,
            }
            for t in turns
        ],
        "incomplete_dialogue_ids": incomplete,
        "counts": {
            "dialogues": len(planned),
            "dialogues_scored": len(scored),
            "checks_run": sum(len(t.checks) for t in turns),
            "checks_passed": sum(c["passed"] for t in turns for c in t.checks),
        },
    }
