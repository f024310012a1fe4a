"""MT-Bench-101 score arithmetic: pure functions from turn outcomes to the score tables.

Dialogue score = minimum over its judged turns (the paper's rule: a dialogue is as good as
its worst turn). A turn without a score changes that minimum, so how such turns are
treated is explicit: `strict` leaves the dialogue unscored (reported as incomplete);
`compat` drops parse failures as OpenCompass does and takes the minimum of what is left
(and counts the dialogues it did that to). A turn still pending (its request failed, to be
retried) always leaves its dialogue unscored. Task = mean of its dialogue scores; overall
and every ability tier = unweighted mean of task scores.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from turnbench.stats.scoring import mean

Status = Literal["scored", "failed", "pending"]


@dataclass(frozen=True)
class TaskInfo:
    code: str
    name: str
    tier2: str
    tier1: str


# The paper's three-tier taxonomy (Bai et al. 2024, Fig. 1; docs/BENCHMARKS.md), in its order.
TASKS: tuple[TaskInfo, ...] = (
    TaskInfo("CM", "Context Memory", "Memory", "Perceptivity"),
    TaskInfo("AR", "Anaphora Resolution", "Understanding", "Perceptivity"),
    TaskInfo("SI", "Separate Input", "Understanding", "Perceptivity"),
    TaskInfo("TS", "Topic Shift", "Interference", "Perceptivity"),
    TaskInfo("CC", "Content Confusion", "Interference", "Perceptivity"),
    TaskInfo("CR", "Content Rephrasing", "Rephrasing", "Adaptability"),
    TaskInfo("FR", "Format Rephrasing", "Rephrasing", "Adaptability"),
    TaskInfo("SC", "Self-correction", "Reflection", "Adaptability"),
    TaskInfo("SA", "Self-affirmation", "Reflection", "Adaptability"),
    TaskInfo("MR", "Mathematical Reasoning", "Reasoning", "Adaptability"),
    TaskInfo("GR", "General Reasoning", "Reasoning", "Adaptability"),
    TaskInfo("IC", "Instruction Clarification", "Questioning", "Interactivity"),
    TaskInfo("PI", "Proactive Interaction", "Questioning", "Interactivity"),
)
TASK_CODES: tuple[str, ...] = tuple(task.code for task in TASKS)
TASK_INFO: dict[str, TaskInfo] = {task.code: task for task in TASKS}
TIER_1: tuple[str, ...] = tuple(dict.fromkeys(task.tier1 for task in TASKS))
TIER_2: tuple[str, ...] = tuple(dict.fromkeys(task.tier2 for task in TASKS))


def abilities() -> dict[str, list[str]]:
    """Ability name -> its task codes: the 7 tier-2 abilities, then the 3 tier-1 ones."""
    groups: dict[str, list[str]] = {}
    for task in TASKS:
        groups.setdefault(task.tier2, []).append(task.code)
    for task in TASKS:
        groups.setdefault(task.tier1, []).append(task.code)
    return groups


@dataclass(frozen=True)
class TurnOutcome:
    task: str
    dialogue: int
    turn: int
    status: Status
    score: float | None = None


@dataclass
class DialogueScores:
    scores: dict[str, dict[int, float]]  # task -> dialogue id -> score
    incomplete: list[int]  # dialogue ids left unscored
    dropped: list[int]  # compat: dialogue ids whose failed turns were dropped


def dialogue_scores(
    outcomes: Iterable[TurnOutcome], mode: Literal["strict", "compat"]
) -> DialogueScores:
    turns: dict[tuple[str, int], list[TurnOutcome]] = defaultdict(list)
    for outcome in outcomes:
        turns[(outcome.task, outcome.dialogue)].append(outcome)
    result = DialogueScores(scores={}, incomplete=[], dropped=[])
    for (task, dialogue), items in turns.items():
        scored = [o.score for o in items if o.status == "scored" and o.score is not None]
        failed = any(o.status == "failed" for o in items)
        pending = any(o.status == "pending" for o in items)
        if failed and mode == "compat":
            result.dropped.append(dialogue)
        blocked = pending or (failed and mode == "strict")
        if blocked or not scored:
            result.incomplete.append(dialogue)
            continue
        result.scores.setdefault(task, {})[dialogue] = min(scored)
    return result


def _mean_of_all(values: Sequence[float | None]) -> float | None:
    """Mean of values that must all be present: one missing part leaves no total."""
    if not values or any(v is None for v in values):
        return None
    return mean(v for v in values if v is not None)


def score_tables(
    outcomes: Sequence[TurnOutcome],
    tasks: Sequence[str],
    mode: Literal["strict", "compat"],
) -> tuple[dict[str, Any], DialogueScores]:
    """Every score table of results.json (unrounded), and the dialogue scores behind them.

    `tasks` fixes the key order of the per-task tables.
    """
    dialogues = dialogue_scores(outcomes, mode)
    by_task = {task: mean(dialogues.scores.get(task, {}).values()) for task in tasks}
    groups = {name: [t for t in codes if t in by_task] for name, codes in abilities().items()}
    by_ability = {
        name: _mean_of_all([by_task[t] for t in codes]) for name, codes in groups.items() if codes
    }
    scored = [o for o in outcomes if o.status == "scored" and o.score is not None]
    by_task_mean_over_turns = {
        task: mean(o.score for o in scored if o.task == task and o.score is not None)
        for task in tasks
    }
    turn_numbers: dict[str, set[int]] = defaultdict(set)
    turn_scores: dict[tuple[str, int], list[float]] = defaultdict(list)
    for outcome in outcomes:
        turn_numbers[outcome.task].add(outcome.turn)
    for outcome in scored:
        assert outcome.score is not None
        turn_scores[(outcome.task, outcome.turn)].append(outcome.score)
    by_task_turn = {
        task: {str(t): mean(turn_scores[(task, t)]) for t in sorted(turn_numbers[task])}
        for task in tasks
    }
    all_turns = sorted({t for numbers in turn_numbers.values() for t in numbers})
    by_turn = {
        str(t): mean(
            value for task in tasks if (value := by_task_turn[task].get(str(t))) is not None
        )
        for t in all_turns
    }
    tables = {
        "overall": _mean_of_all(list(by_task.values())),
        "by_task": by_task,
        "by_ability": by_ability,
        "overall_mean_over_turns": _mean_of_all(list(by_task_mean_over_turns.values())),
        "by_task_mean_over_turns": by_task_mean_over_turns,
        "by_task_turn": by_task_turn,
        "by_turn": by_turn,
    }
    return tables, dialogues


def stratified_bootstrap_ci(
    groups: Sequence[Sequence[float]],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile interval of the mean of group means, resampling items within each group.

    MT-Bench-101's overall is the unweighted mean of task means of dialogue scores, so
    dialogues are redrawn within their task and each draw's overall is the same statistic
    as the point estimate. No interval when a group has fewer than two items (its spread
    would be invisible, and the interval falsely narrow).
    """
    if not groups or any(len(group) < 2 for group in groups):
        return None
    import numpy as np

    rng = np.random.default_rng(seed)
    totals = np.zeros(resamples)
    for group in groups:
        values = np.asarray(group, dtype=float)
        draws = rng.integers(0, len(values), size=(resamples, len(values)))
        totals += values[draws].mean(axis=1)
    stats = totals / len(groups)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)
