"""Combining several judgments of one item into one: repeats first, then the judges of a panel.

Rules (each documented where a user reads results):
- ratings: `mean` (default), `median` (the mean of the two middle values for an even count)
  or `majority` (the most common rating; when several ratings are equally common, the median
  of all of them);
- pairwise verdicts ("A", "B", "tie"): always the majority; when the most common verdicts
  tie, the result is "tie" (a panel that cannot agree does not pick a winner);
- checklists: item by item, "Yes" when more than half of the judgments say "Yes", else the
  most common other answer (so a 1-1 split is not met).
A judgment that failed (unparseable after its re-asks) or is still pending is left out; an
item is scored when at least one of its judgments is, failed when all of them finished and
none was scored, pending otherwise.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from turnbench.benchmarks.base import JudgedTurn

RepeatAggregate = Literal["mean", "median"]
PanelAggregate = Literal["mean", "median", "majority"]
Aggregate = Literal["mean", "median", "majority"]


def combine_scores(values: Sequence[float], how: Aggregate) -> float | None:
    if not values:
        return None
    if how == "mean":
        return sum(values) / len(values)
    if how == "median":
        return float(statistics.median(values))
    if how == "majority":
        counts = Counter(values).most_common()
        top = [value for value, count in counts if count == counts[0][1]]
        return float(top[0]) if len(top) == 1 else float(statistics.median(values))
    raise ValueError(f"unknown aggregate {how!r}")


def combine_verdicts(values: Sequence[str]) -> str | None:
    if not values:
        return None
    counts = Counter(values).most_common()
    top = [value for value, count in counts if count == counts[0][1]]
    return top[0] if len(top) == 1 else "tie"


def combine_checklists(lists: Sequence[Sequence[str]]) -> tuple[str, ...] | None:
    if not lists:
        return None
    length = max(len(items) for items in lists)
    combined = []
    for position in range(length):
        answers = [items[position] for items in lists if position < len(items)]
        if answers.count("Yes") * 2 > len(answers):
            combined.append("Yes")
        else:
            others = Counter(a for a in answers if a != "Yes").most_common(1)
            combined.append(others[0][0] if others else "No")
    return tuple(combined)


def combine_items(items: Sequence[JudgedTurn], how: Aggregate) -> JudgedTurn:
    """Several judgments of the same item (same sample, turn and criterion) as one."""
    if not items:
        raise ValueError("nothing to combine")
    first = items[0]
    if len(items) == 1:
        return first
    reasks = sum(item.reasks for item in items)
    scored = [item for item in items if item.status == "scored"]
    if scored:
        scores = [item.score for item in scored if item.score is not None]
        lists = [item.checklist for item in scored if item.checklist is not None]
        return replace(
            scored[0],
            status="scored",
            score=combine_scores(scores, how),
            checklist=combine_checklists(lists),
            reasks=reasks,
            reason=None,
        )
    if any(item.status == "pending" for item in items):
        return replace(first, status="pending", score=None, checklist=None, reasks=reasks)
    return replace(first, status="failed", score=None, checklist=None, reasks=reasks)


def combine_positionally(lists: Sequence[Sequence[JudgedTurn]], how: Aggregate) -> list[JudgedTurn]:
    """Item lists in the same planned order (one per repeat, or per judge), combined item by
    item."""
    if not lists:
        return []
    return [combine_items(column, how) for column in zip(*lists, strict=True)]
