"""Agreement between the judges of a panel: Krippendorff's alpha for ratings, Fleiss' and
Cohen's kappa for verdicts and checklist answers.

Each statistic is the textbook one, written out so the tests can check it on hand-computed
tables:
- Krippendorff's alpha with the interval metric, 1 - D_o / D_e: D_o sums the squared
  differences of every ordered pair of values within a unit, each unit weighted by
  1 / (m_u - 1), over n (the number of values in units with at least two); D_e sums the
  squared differences of every ordered pair of those n values over n (n - 1). Units (items)
  with fewer than two values are left out, so a judge that failed on an item only removes
  its own value. Undefined (None) with fewer than two such values or no variation at all.
- Fleiss' kappa over units rated by the same number of raters (units with another number
  of ratings are left out).
- Cohen's kappa of two raters (`turnbench.stats.vote_agreement.cohen_kappa`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations
from typing import Any

from turnbench.stats.vote_agreement import cohen_kappa, pair_key


def _pair_sum(values: Sequence[float]) -> float:
    """Sum of (v_i - v_j)^2 over ordered pairs i != j: 2 (m * sum v^2 - (sum v)^2)."""
    total = sum(values)
    squares = sum(v * v for v in values)
    return 2.0 * (len(values) * squares - total * total)


def krippendorff_alpha_interval(units: Sequence[Sequence[float | None]]) -> float | None:
    """Alpha of a table: one row per unit (item), one value per rater (None: missing)."""
    kept = [[v for v in unit if v is not None] for unit in units]
    kept = [unit for unit in kept if len(unit) >= 2]
    pooled = [v for unit in kept for v in unit]
    n = len(pooled)
    if n < 2:
        return None
    observed = sum(_pair_sum(unit) / (len(unit) - 1) for unit in kept) / n
    expected = _pair_sum(pooled) / (n * (n - 1))
    if expected <= 0:
        return None
    return 1.0 - observed / expected


def fleiss_kappa(units: Sequence[Sequence[Hashable]], raters: int | None = None) -> float | None:
    """Fleiss' kappa; units with a number of ratings other than `raters` (default: the most
    common number) are left out. None when undefined."""
    sizes = Counter(len(unit) for unit in units if len(unit) >= 2)
    if not sizes:
        return None
    n = raters if raters is not None else sizes.most_common(1)[0][0]
    kept = [unit for unit in units if len(unit) == n]
    if not kept or n < 2:
        return None
    categories = sorted({label for unit in kept for label in unit}, key=str)
    totals = Counter(label for unit in kept for label in unit)
    grand = len(kept) * n
    p_j = [totals[c] / grand for c in categories]
    p_i = [
        (sum(count * count for count in Counter(unit).values()) - n) / (n * (n - 1))
        for unit in kept
    ]
    observed = sum(p_i) / len(kept)
    chance = sum(p * p for p in p_j)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


def rating_agreement(table: Mapping[str, Sequence[float | None]]) -> dict[str, Any]:
    """Agreement of judges' ratings: `table` maps each judge to its ratings of the same items
    in the same order (None where it has none)."""
    judges = list(table)
    units = [list(row) for row in zip(*(table[j] for j in judges), strict=True)]
    pairs: dict[str, Any] = {}
    for a, b in combinations(judges, 2):
        both = [(x, y) for x, y in zip(table[a], table[b], strict=True) if None not in (x, y)]
        pairs[pair_key(a, b, " | ")] = {
            "items": len(both),
            "krippendorff_alpha": krippendorff_alpha_interval([[x, y] for x, y in both]),
            "mean_abs_difference": (
                sum(abs(x - y) for x, y in both) / len(both) if both else None  # type: ignore[operator]
            ),
            "exact_agreement": (sum(x == y for x, y in both) / len(both) if both else None),
        }
    return {
        "kind": "ratings",
        "judges": judges,
        "items": sum(sum(v is not None for v in unit) >= 2 for unit in units),
        "krippendorff_alpha": krippendorff_alpha_interval(units),
        "pairs": pairs,
    }


def label_agreement(table: Mapping[str, Sequence[str | None]], kind: str) -> dict[str, Any]:
    """Agreement of judges' labels (pairwise verdicts, checklist answers): Fleiss' kappa over
    the items every judge labelled, Cohen's kappa and the agreement rate per pair."""
    judges = list(table)
    units = [list(row) for row in zip(*(table[j] for j in judges), strict=True)]
    complete = [[v for v in unit if v is not None] for unit in units]
    complete = [unit for unit in complete if len(unit) == len(judges)]
    pairs: dict[str, Any] = {}
    for a, b in combinations(judges, 2):
        both = [(x, y) for x, y in zip(table[a], table[b], strict=True) if None not in (x, y)]
        pairs[pair_key(a, b, " | ")] = {
            "items": len(both),
            "cohen_kappa": cohen_kappa(both),  # type: ignore[arg-type]
            "agreement": sum(x == y for x, y in both) / len(both) if both else None,
        }
    return {
        "kind": kind,
        "judges": judges,
        "items": len(complete),
        "fleiss_kappa": fleiss_kappa(complete, len(judges)),
        "pairs": pairs,
    }
