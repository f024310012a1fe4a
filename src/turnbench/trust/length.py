"""How much of a score is answer length: a rank correlation per model, and a length-controlled
score.

Judges are known to prefer longer answers. Two numbers let a user see how much that matters
in their run:

- `spearman`: Spearman's rank correlation (ties get average ranks) between an answer's
  length in characters and its score, per model;
- the length-controlled score. One slope `b` of score on log answer length is fitted by
  least squares on every scored item of every model of the run, *within* model and, when at
  least two models answered the same items, within item too (a two-way fixed-effects fit, by
  alternating demeaning): only "the same model, or the same question, scored higher when the
  answer was longer" counts as length effect, not "better models write longer" nor "essay
  questions get long answers". Each score is then moved to what it would be at the run's
  pooled mean log length, `score - b * (ln(chars) - mean ln(chars))`, and the benchmark's own
  aggregation of the adjusted scores is the length-controlled overall. With one model and no
  shared items the fit is within-model only; a single model's length-controlled score then
  equals its score whenever the benchmark's overall is a plain mean (its length is the run's
  mean), so the correlation is the informative number there.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

Method = Literal["within-model-and-item", "within-model"]


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, tied values sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        average = (start + end) / 2 + 1
        for position in range(start, end + 1):
            result[order[position]] = average
        start = end + 1
    return result


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    n = len(x)
    if n < 3:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx <= 0 or syy <= 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho; None with fewer than 3 points or no variation."""
    return pearson(ranks(x), ranks(y))


@dataclass(frozen=True)
class LengthRow:
    model: str
    item: Hashable  # (sample, turn, criterion): the same item across models
    chars: int
    score: float

    @property
    def log_length(self) -> float:
        return math.log(max(1, self.chars))


@dataclass(frozen=True)
class LengthFit:
    method: Method
    slope: float | None  # score per unit of ln(characters)
    reference: float  # the pooled mean ln(characters) scores are moved to
    items: int

    @property
    def slope_per_doubling(self) -> float | None:
        return None if self.slope is None else self.slope * math.log(2)

    def adjust(self, score: float, chars: int) -> float:
        if self.slope is None:
            return score
        return score - self.slope * (math.log(max(1, chars)) - self.reference)


def _demean(values: list[float], groups: list[Hashable]) -> list[float]:
    sums: dict[Hashable, float] = {}
    counts: dict[Hashable, int] = {}
    for value, group in zip(values, groups, strict=True):
        sums[group] = sums.get(group, 0.0) + value
        counts[group] = counts.get(group, 0) + 1
    return [v - sums[g] / counts[g] for v, g in zip(values, groups, strict=True)]


def _within(values: list[float], keys: list[list[Hashable]]) -> list[float]:
    """Residuals after removing every grouping's fixed effects (alternating projections)."""
    current = values
    for _ in range(500):
        previous = current
        for groups in keys:
            current = _demean(current, groups)
        if max((abs(a - b) for a, b in zip(current, previous, strict=True)), default=0) < 1e-12:
            break
    return current


def fit_length_effect(rows: Sequence[LengthRow]) -> LengthFit:
    """The pooled within-model (and within-item) slope of score on log length."""
    if not rows:
        return LengthFit("within-model", None, 0.0, 0)
    x = [row.log_length for row in rows]
    y = [row.score for row in rows]
    reference = sum(x) / len(x)
    models = [row.model for row in rows]
    items = [row.item for row in rows]
    seen: dict[Hashable, set[str]] = {}
    for row in rows:
        seen.setdefault(row.item, set()).add(row.model)
    shared = len(set(models)) >= 2 and any(len(m) >= 2 for m in seen.values())
    method: Method = "within-model-and-item" if shared else "within-model"
    keys = [models, items] if shared else [models]
    xt, yt = _within(x, keys), _within(y, keys)
    sxx = sum(v * v for v in xt)
    slope = sum(a * b for a, b in zip(xt, yt, strict=True)) / sxx if sxx > 1e-12 else None
    return LengthFit(method, slope, reference, len(rows))
