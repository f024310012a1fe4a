"""Pure score arithmetic: means that ignore failures, grouped means, bootstrap intervals."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence


def mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


def grouped_means(pairs: Iterable[tuple[Hashable, float]]) -> dict:
    groups: dict = defaultdict(list)
    for key, value in pairs:
        groups[key].append(value)
    return {key: sum(values) / len(values) for key, values in groups.items()}


def bootstrap_mean_ci(
    clusters: Sequence[Sequence[float]],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile interval for the pooled mean, resampling whole clusters (questions).

    The statistic is the mean over all values of the drawn clusters, the same statistic as
    the point estimate (FastChat's mean over kept judgments), so the interval brackets it.
    """
    kept = [list(cluster) for cluster in clusters if len(cluster) > 0]
    if len(kept) < 2:
        return None
    import numpy as np

    rng = np.random.default_rng(seed)
    sums = np.array([sum(c) for c in kept], dtype=float)
    counts = np.array([len(c) for c in kept], dtype=float)
    draws = rng.integers(0, len(kept), size=(resamples, len(kept)))
    stats = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)


def bootstrap_group_cis(
    rows: Iterable[tuple[Hashable, Hashable, float]],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> dict:
    """`bootstrap_mean_ci` per group: rows are (group, cluster, value), e.g. (turn, question,
    score). Each group's interval resamples that group's clusters, so a per-turn or
    per-category mean gets the same kind of interval as the overall mean."""
    clusters: dict = defaultdict(lambda: defaultdict(list))
    for group, cluster, value in rows:
        clusters[group][cluster].append(value)
    return {
        group: bootstrap_mean_ci(
            list(members.values()), resamples=resamples, level=level, seed=seed
        )
        for group, members in clusters.items()
    }
