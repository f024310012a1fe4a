"""Verdicts for a paired comparison of two runs that do not call noise a change.

Input: one paired score per unit (an MT-Bench question, an MT-Bench-101 dialogue), scored in
both runs, with the unit's group (category or task). Output: the overall row and one row per
group, each with n, base, new, delta, a confidence interval for delta and a verdict.

Method: a sign-flip randomization test on the paired differences, and the interval obtained
by inverting it. If the two runs are draws from the same distribution (same model, only
sampling and judge noise differ), each unit's difference new - base is as likely to be
+x as -x. Flipping the sign of each unit's difference independently then gives the exact
distribution of the aggregate difference under "no change", for any number of units, any
grouping and any aggregation with fixed weights, so a verdict is wrong under the null in at
most 1 - level of comparisons (5% at the default level), also at small n. In the simulation
of benchmarks/paired_stats_calibration.py (MT-Bench-like scores, 1000 seeds) it gave a
verdict to pure noise in 0.7-3.7% of groups of 6-10 units and 1.7-5.5% of overalls (the
test is exact at 5%; 1000 seeds measure a rate to about +-1.4 points); the previous
percentile bootstrap did in 7.4-9.6% of categories of 10, and in 92% of overalls with one
question per category; a Student-t interval in up to 6.0% (9.9% in groups of two, where
all differences are often equal).
The interval for delta is the set of shifts mu that the same test does not reject for the
differences minus mu. It assumes differences symmetric about their mean, which the null
guarantees; under real shifts (with ceiling effects) it covered the true difference in
93-99% of the simulated comparisons.

Why flip units, not turns: the unit is what is drawn independently; turns of one question
share its difficulty. Groups keep their units and their weights in every flip, so a group
of one unit still varies (its one difference flips), and the overall of "mean of group
means" is handled by fixed weights 1/(groups * group size) per unit: there is no stratified
versus plain resampling choice to make, and no zero-width interval from singleton groups.

Exactness: while 2**n is at most `resamples` (n <= 10 at 2000) every sign pattern is
enumerated; above, the test uses `resamples` seeded random patterns and the p-value
(1 + k) / (1 + resamples), which keeps it exact (a valid randomization test for any number
of patterns).

Below MIN_PAIRS units a row is `insufficient_data`: the smallest p-value with n units is
2 / 2**n, so under six units no difference, however large, can be significant at 95%.
"""

from __future__ import annotations

import math
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from turnbench.errors import UserError

Aggregation = Literal["mean", "mean_of_groups"]
Verdict = Literal["better", "worse", "no_change", "insufficient_data"]

DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
# Fewest paired units for a verdict, overall and per group. With n units the smallest
# two-sided sign-flip p-value is 2 / 2**n: 0.0625 at n = 5, 0.031 at n = 6. Below 6 a 95%
# verdict is impossible, so "no_change" there would claim evidence that cannot exist. From 6
# on, false verdicts stay under 5% (simulated: 0.7% of groups of 6, 2.1% of 8, 3.2% of 10),
# but power is low: a +1 point shift was found in 16% of groups of 6, 47% of 8, 66% of 10.
MIN_PAIRS = 6
OVERALL = "overall"
METHOD = "sign-flip randomization test on paired unit differences (interval by test inversion)"

_EXACT_LIMIT = 16  # enumerate every sign pattern up to 2**16 = 65536 of them


class PairLike(Protocol):
    """One unit scored in both runs (compare.Pair satisfies it)."""

    @property
    def sample_id(self) -> str: ...

    @property
    def group(self) -> str: ...

    @property
    def base(self) -> float: ...

    @property
    def new(self) -> float: ...


@dataclass(frozen=True)
class PairedScore:
    """A plain PairLike, for callers and tests without compare.Pair."""

    sample_id: str
    group: str
    base: float
    new: float


@dataclass(frozen=True)
class StatRow:
    """One line of a comparison: `name` is "overall" or a group.

    `ci_low`, `ci_high` and `p_value` are None exactly when the verdict is
    insufficient_data; the numbers n, base, new and delta are always set.
    """

    name: str
    n: int
    base: float
    new: float
    delta: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "new": self.new,
            "delta": self.delta,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "verdict": self.verdict,
            "n": self.n,
        }


@dataclass(frozen=True)
class PairedComparison:
    overall: StatRow
    groups: list[StatRow]
    aggregation: Aggregation
    level: float
    resamples: int
    seed: int
    min_pairs: int
    method: str = METHOD

    def settings_json(self) -> dict[str, Any]:
        """How the intervals were made (for results: they are reproducible from these)."""
        return {
            "method": self.method,
            "level": self.level,
            "resamples": self.resamples,
            "seed": self.seed,
            "min_pairs": self.min_pairs,
            "aggregation": self.aggregation,
        }


# -- the test ----------------------------------------------------------------------------------
def _signs(n: int, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Sign patterns (rows of +-1): all 2**n of them when that is at most
    max(resamples, 2**MIN_PAIRS) (the exact test), otherwise `resamples` random ones."""
    if n <= _EXACT_LIMIT and 2**n <= max(resamples, 2**MIN_PAIRS):
        codes = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
        return 1.0 - 2.0 * (codes & 1), True
    return 1.0 - 2.0 * rng.integers(0, 2, size=(resamples, n)), False


class _SignCache:
    """The sign patterns of recent rows, by (seed, row name, n, resamples): what a row's
    generator draws depends on nothing else, so a report comparing one base with seven
    models (the same "overall" and the same groups, of the same sizes, each time) draws
    each matrix once instead of seven times, and every row gets exactly the patterns it
    would have drawn. Bounded in bytes (the arrays are kept read-only)."""

    def __init__(self, budget: int = 64 << 20) -> None:
        self.budget = budget
        self._kept: dict[tuple[int, str, int, int], tuple[np.ndarray, bool]] = {}
        self._lock = threading.Lock()

    def get(self, seed: int, name: str, n: int, resamples: int) -> tuple[np.ndarray, bool]:
        key = (seed, name, n, resamples)
        with self._lock:
            found = self._kept.pop(key, None)
            if found is not None:
                self._kept[key] = found  # (most recently used last)
                return found
        # one generator per row, from the seed and the row's name: a row does not depend on
        # which other groups exist or in which order they come
        rng = np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])
        signs, exact = _signs(n, resamples, rng)
        signs.setflags(write=False)
        if signs.nbytes <= self.budget:
            with self._lock:
                self._kept[key] = (signs, exact)
                while sum(kept.nbytes for kept, _ in self._kept.values()) > self.budget:
                    self._kept.pop(next(iter(self._kept)))
        return signs, exact


_SIGN_CACHE = _SignCache()


class _SignFlipTest:
    """The randomization distribution of T(mu) = sum(w * s * (d - mu)) over sign patterns s.

    With sum(w) = 1 the observed statistic is estimate - mu, and a pattern's statistic is
    a - mu * c, with a = s @ (w * d) and c = s @ w. A pattern counts as extreme at mu when
    |a - mu * c| >= |estimate - mu|; as |c| <= 1 that holds on an interval of mu around the
    estimate, whose ends have a closed form. So the p-value is monotone on each side of the
    estimate and the interval (every mu the test keeps) is read off sorted ends: exact, no
    search.
    """

    def __init__(
        self,
        deltas: np.ndarray,
        weights: np.ndarray,
        signs: np.ndarray,
        exact: bool,
        estimate: float,
    ) -> None:
        # `estimate` is weights @ deltas, summed the way the row reports it
        self.estimate = estimate
        self._a = signs @ (weights * deltas)
        self._c = c = signs @ weights
        self._exact = exact
        self._patterns = len(signs)
        self._tol = 1e-9 * (float(np.max(np.abs(deltas))) + 1.0)  # same sum, other order
        # ends of each pattern's interval: estimate - below .. estimate + above
        e = self._a - self.estimate * c
        whole = np.abs(c) >= 1.0 - 1e-9  # all signs kept, or all flipped: always extreme
        c = np.where(whole, 0.0, c)
        e = np.where(np.abs(e) <= self._tol, 0.0, e)
        self._above = np.where(whole, np.inf, np.where(e > 0, e / (1 + c), -e / (1 - c)))
        self._below = np.where(whole, np.inf, np.where(e > 0, e / (1 - c), -e / (1 + c)))

    def p_value(self, mu: float) -> float:
        observed = abs(self.estimate - mu)
        extreme = int(np.count_nonzero(np.abs(self._a - mu * self._c) >= observed - self._tol))
        return self._p(extreme)

    def _p(self, extreme: int) -> float:
        if self._exact:  # the identity pattern is among them and counts itself
            return extreme / self._patterns
        return (1 + extreme) / (1 + self._patterns)

    def interval(self, alpha: float) -> tuple[float, float] | None:
        """[low, high]: the shifts mu with p-value above alpha (None: unbounded)."""
        # the test rejects mu when at most `allowed` patterns are extreme there
        if self._exact:
            allowed = math.floor(alpha * self._patterns + 1e-9)
        else:
            allowed = math.floor(alpha * (1 + self._patterns) - 1 + 1e-9)
        if allowed < 0 or allowed >= self._patterns:
            return None
        # mu is kept while more than `allowed` patterns are extreme: up to the
        # (allowed + 1)-th largest end on each side
        index = self._patterns - 1 - allowed
        above = float(np.partition(self._above, index)[index])
        below = float(np.partition(self._below, index)[index])
        if not (math.isfinite(above) and math.isfinite(below)):
            return None
        return self.estimate - below, self.estimate + above


def _aggregate(values: np.ndarray, parts: list[np.ndarray] | None) -> float:
    """Mean over units, or (with `parts`, the units of each group) mean of group means;
    the way the benchmark reports it, so 5.0 stays 5.0 (no weighted-sum rounding)."""
    if parts is None:
        return float(np.mean(values))
    return float(np.mean([np.mean(values[part]) for part in parts]))


def _row(
    name: str,
    base: np.ndarray,
    new: np.ndarray,
    weights: np.ndarray,
    parts: list[np.ndarray] | None,
    *,
    level: float,
    resamples: int,
    seed: int,
    min_pairs: int,
) -> StatRow:
    n = len(base)
    deltas = new - base
    delta = _aggregate(deltas, parts)
    numbers = {"name": name, "n": n, "base": _aggregate(base, parts)}
    numbers |= {"new": _aggregate(new, parts), "delta": delta}
    if n < min_pairs:
        return StatRow(
            **numbers,  # type: ignore[arg-type]
            ci_low=None,
            ci_high=None,
            p_value=None,
            verdict="insufficient_data",
        )
    signs, exact = _SIGN_CACHE.get(seed, name, n, resamples)
    test = _SignFlipTest(deltas, weights, signs, exact, delta)
    alpha = 1.0 - level
    bounds = test.interval(alpha)
    if bounds is None:  # min_pairs below what the level can decide: no verdict is possible
        raise ValueError(f"min_pairs={min_pairs} is too small for level={level}")
    low, high = bounds
    p_value = test.p_value(0.0)
    significant = p_value <= alpha
    if not significant:  # the interval holds every shift the test keeps, 0 included
        low, high = min(low, 0.0), max(high, 0.0)
    verdict: Verdict = "no_change"
    if significant and low > 0:
        verdict = "better"
    elif significant and high < 0:
        verdict = "worse"
    return StatRow(
        **numbers,  # type: ignore[arg-type]
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        verdict=verdict,
    )


# -- the comparison ----------------------------------------------------------------------------
def smallest_decidable(level: float) -> int:
    """The fewest units with which a sign-flip test can reach `level`: 2 / 2**n <= 1 - level."""
    return max(1, math.ceil(1.0 + math.log2(1.0 / (1.0 - level)) - 1e-9))


def compare_paired(
    pairs: Sequence[PairLike],
    aggregation: Aggregation = "mean",
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    order: Sequence[str] | None = None,
    min_pairs: int | None = None,
) -> PairedComparison:
    """Overall and per-group rows for units scored in both runs.

    `aggregation` is the benchmark's overall: "mean" over units (MT-Bench) or
    "mean_of_groups", the mean of the group means (MT-Bench-101). Groups are listed in
    `order` first (names not in it follow, in order of first appearance). Rows with fewer
    than `min_pairs` units (default: MIN_PAIRS, or more if `level` needs more) are
    insufficient_data. Deterministic for a given seed.
    """
    if not pairs:
        raise UserError("the two runs have no judged sample in common; nothing to compare")
    if not 0.5 < level < 1.0:
        raise ValueError(f"level must be in (0.5, 1), not {level}")
    if min_pairs is None:
        min_pairs = max(MIN_PAIRS, smallest_decidable(level))
    if min_pairs < smallest_decidable(level):
        raise ValueError(f"min_pairs={min_pairs}: no verdict is possible at level {level}")
    if resamples * (1.0 - level) < 1.0:
        raise ValueError(f"resamples={resamples} is too few for level {level}")
    if aggregation not in ("mean", "mean_of_groups"):
        raise ValueError(f"unknown aggregation {aggregation!r}")
    seen: set[str] = set()
    for pair in pairs:
        if pair.sample_id in seen:
            raise ValueError(f"unit {pair.sample_id!r} is paired twice")
        seen.add(pair.sample_id)
    base = np.array([float(p.base) for p in pairs])
    new = np.array([float(p.new) for p in pairs])
    if not (np.isfinite(base).all() and np.isfinite(new).all()):
        raise ValueError("scores must be finite numbers")
    groups = [p.group for p in pairs]
    members: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    rank = {name: i for i, name in enumerate(order or [])}
    names = sorted(members, key=lambda name: rank.get(name, len(rank)))  # stable
    settings = {"level": level, "resamples": resamples, "seed": seed, "min_pairs": min_pairs}

    rows = []
    for name in names:
        index = np.array(members[name])
        weights = np.full(len(index), 1.0 / len(index))
        rows.append(_row(name, base[index], new[index], weights, None, **settings))

    parts: list[np.ndarray] | None = None
    if aggregation == "mean":
        weights = np.full(len(pairs), 1.0 / len(pairs))
    else:
        sizes = {name: len(found) for name, found in members.items()}
        weights = np.array([1.0 / (len(members) * sizes[group]) for group in groups])
        parts = [np.array(members[name]) for name in names]
    overall = _row(OVERALL, base, new, weights, parts, **settings)
    return PairedComparison(overall, rows, aggregation, level, resamples, seed, min_pairs)


def fails_gate(row: StatRow, threshold: float) -> bool:
    """`--fail-if-worse D`: exit 1 only when the verdict is `worse` and the whole interval
    lies more than D below zero (ci_high < -D)."""
    if not math.isfinite(threshold) or threshold < 0:
        raise ValueError(f"the threshold must be a number >= 0, not {threshold}")
    return row.verdict == "worse" and row.ci_high is not None and row.ci_high < -threshold
