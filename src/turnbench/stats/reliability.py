"""Reliability over repeated conversations: mean, aptitude, unreliability, degradation, pass^k.

Input: for each sample (a document, a scenario) the scores of its N simulated conversations
of one conversation type. Every sample weighs the same, whatever its N: each statistic is
computed per sample first and then averaged over samples.

- mean: the mean of the per-sample means. Its 95% interval is a percentile bootstrap over
  samples (`stats.scoring.bootstrap_mean_ci` on one value per sample, the sample's mean):
  samples are what is drawn independently; a sample's N conversations share its difficulty.
- aptitude and unreliability, as Laban et al. 2025 define them: per sample, the 90th
  percentile of its N scores (its best conversations) and the 90th minus the 10th percentile
  (the spread between its good and bad conversations), each averaged over samples.
  Percentiles are numpy's default ("linear" interpolation between closest ranks), so with
  N = 1 both percentiles are the one score and unreliability is 0.
- degradation: 1 - mean(sharded) / mean(full) over the samples scored in both types, with a
  paired bootstrap: each resample draws sample ids once and uses them for both types.
- pass^k (Yao et al. 2024) and pass@k: unbiased estimators from c successes in n tries.

A sample with no scores (no finished conversation) is left out of every statistic: a failed
conversation is a record, never a number. Samples with different N are allowed (say, a run
whose `--simulations` was raised and is not finished): each sample's percentiles use its own
scores, and `simulations` reports the largest N.

Deterministic for a given seed; sample ids are taken in sorted order, so a statistic does not
depend on the order the caller's mapping lists them in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from turnbench.stats.scoring import bootstrap_mean_ci

LEVEL = 0.95
APTITUDE_PERCENTILE = 90.0
LOW_PERCENTILE = 10.0


class ReliabilitySummary(BaseModel):
    """One conversation type's numbers (results.json `by_conversation[type]`)."""

    model_config = ConfigDict(frozen=True)

    mean: float
    mean_ci95: tuple[float, float]
    aptitude: float
    unreliability: float
    samples: int  # samples with at least one score
    simulations: int  # the largest number of scores of one sample


class Interval(BaseModel):
    """A value with its 95% interval (results.json `degradation`): the same three keys as
    the audit's metrics, but never null (an undefined value raises instead)."""

    model_config = ConfigDict(frozen=True)

    value: float
    ci_low: float
    ci_high: float


class DegradationUndefinedError(ValueError):
    """`degradation` has no value: no sample is scored in both types, or the full type's
    mean is 0 (1 - x / 0). The caller leaves `degradation` out of its results."""


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) with numpy's default linear interpolation: the
    value at rank (n - 1) * q / 100, interpolated between the two closest ranks."""
    if len(values) == 0:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q must be in [0, 100], not {q}")
    return float(np.percentile(np.asarray(values, dtype=float), q))


def _scored(scores: Mapping[str, Sequence[float]]) -> list[tuple[str, np.ndarray]]:
    """(sample id, its scores) for samples with scores, in sorted id order; scores must be
    finite numbers."""
    kept = []
    for sample_id in sorted(scores):
        values = np.asarray(list(scores[sample_id]), dtype=float)
        if values.size == 0:
            continue
        if not np.isfinite(values).all():
            raise ValueError(f"sample {sample_id!r}: scores must be finite numbers")
        kept.append((sample_id, values))
    return kept


def reliability_summary(
    scores: Mapping[str, Sequence[float]], *, seed: int = 0, resamples: int = 2000
) -> ReliabilitySummary:
    """Mean (with its 95% interval over samples), aptitude and unreliability of one
    conversation type; `scores` maps a sample id to that sample's N scores.

    With a single sample the bootstrap has one possible draw, so the interval is
    (mean, mean): `samples` = 1 says how little it means. No scored sample: ValueError.
    """
    kept = _scored(scores)
    if not kept:
        raise ValueError("no sample has a score")
    means = [float(values.mean()) for _, values in kept]
    mean = float(np.mean(means))
    interval = bootstrap_mean_ci([[m] for m in means], resamples=resamples, level=LEVEL, seed=seed)
    low, high = interval if interval is not None else (mean, mean)
    tops = [percentile(values, APTITUDE_PERCENTILE) for _, values in kept]
    bottoms = [percentile(values, LOW_PERCENTILE) for _, values in kept]
    spreads = [top - bottom for top, bottom in zip(tops, bottoms, strict=True)]
    return ReliabilitySummary(
        mean=mean,
        mean_ci95=(low, high),
        aptitude=float(np.mean(tops)),
        unreliability=float(np.mean(spreads)),
        samples=len(kept),
        simulations=max(values.size for _, values in kept),
    )


def degradation(
    full: Mapping[str, Sequence[float]],
    sharded: Mapping[str, Sequence[float]],
    *,
    seed: int = 0,
    resamples: int = 2000,
) -> Interval:
    """1 - mean(sharded) / mean(full) over the samples scored in both, with a paired 95%
    percentile bootstrap interval (the same drawn sample ids for both types).

    Means are means of per-sample means, as in `reliability_summary`. Scores must be >= 0
    (a ratio of means of signed scores says nothing about loss). If the full mean is 0, or no
    sample is scored in both types, DegradationUndefinedError. A resample whose drawn samples
    all have a full mean of 0 has no ratio and is left out of the interval (the interval is
    conditional on a defined ratio); with a single common sample the interval is
    (value, value).
    """
    full_kept = dict(_scored(full))
    sharded_kept = dict(_scored(sharded))
    common = sorted(full_kept.keys() & sharded_kept.keys())
    if not common:
        raise DegradationUndefinedError("no sample is scored in both conversation types")
    base = np.array([full_kept[s].mean() for s in common])
    other = np.array([sharded_kept[s].mean() for s in common])
    if (base < 0).any() or (other < 0).any():
        raise ValueError("degradation needs scores >= 0")
    if base.sum() == 0:
        raise DegradationUndefinedError("the full conversations' mean score is 0")
    value = 1.0 - float(other.mean()) / float(base.mean())
    if len(common) < 2:
        return Interval(value=value, ci_low=value, ci_high=value)
    draws = np.random.default_rng(seed).integers(0, len(common), size=(resamples, len(common)))
    base_sums = base[draws].sum(axis=1)
    defined = base_sums > 0
    ratios = 1.0 - other[draws].sum(axis=1)[defined] / base_sums[defined]
    alpha = (1.0 - LEVEL) / 2.0
    low, high = np.quantile(ratios, [alpha, 1.0 - alpha])
    return Interval(value=value, ci_low=float(low), ci_high=float(high))


def _tries(successes: Mapping[str, Sequence[bool]]) -> list[tuple[int, int]]:
    """(successes c, tries n) per sample with at least one try, in sorted id order."""
    counts = []
    for sample_id in sorted(successes):
        outcomes = list(successes[sample_id])
        if outcomes:
            counts.append((sum(1 for ok in outcomes if ok), len(outcomes)))
    return counts


def _per_k(
    successes: Mapping[str, Sequence[bool]], estimate: Callable[[int, int, int], float]
) -> dict[str, float]:
    counts = _tries(successes)
    if not counts:
        return {}
    most = min(n for _, n in counts)  # k tries need k tries of every sample
    return {
        str(k): float(np.mean([estimate(c, n, k) for c, n in counts])) for k in range(1, most + 1)
    }


def pass_hat_k(successes: Mapping[str, Sequence[bool]]) -> dict[str, float]:
    """pass^k for k = 1..N: the chance that k tries drawn from a sample's N all succeed,
    C(c, k) / C(n, k) per sample (Yao et al.'s unbiased estimator), averaged over samples.

    Keys are str(k). With different numbers of tries, k runs to the smallest n (the
    estimator needs k <= n for every sample); no sample with a try gives {}.
    """
    return _per_k(successes, lambda c, n, k: math.comb(c, k) / math.comb(n, k))


def pass_at_k(successes: Mapping[str, Sequence[bool]]) -> dict[str, float]:
    """pass@k for k = 1..N: the chance that at least one of k tries drawn from a sample's N
    succeeds, 1 - C(n - c, k) / C(n, k) per sample (unbiased), averaged over samples. Same
    keys and rules as `pass_hat_k`."""
    return _per_k(successes, lambda c, n, k: 1.0 - math.comb(n - c, k) / math.comb(n, k))
