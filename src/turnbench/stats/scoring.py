"""Pure score arithmetic: means that ignore failures, grouped means, bootstrap intervals."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from functools import lru_cache
from typing import Any


def mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


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

    sums = np.array([sum(c) for c in kept], dtype=float)
    sizes = {len(c) for c in kept}
    draws = _draws(seed, len(kept), resamples)
    if len(sizes) == 1:  # every draw holds the same number of values: the same division
        stats = sums[draws].sum(axis=1) / float(sizes.pop() * len(kept))
    else:
        counts = np.array([len(c) for c in kept], dtype=float)
        stats = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)


_CACHED_DRAWS = 200_000  # indices; larger draws (11 MB for 1388 clusters) are not kept


def _draws(seed: int, clusters: int, resamples: int) -> Any:
    """The resampled cluster indices: a fixed seed draws the same ones every time, and a
    run's results ask for them again for every model, turn and category of one size."""
    if clusters * resamples > _CACHED_DRAWS:
        return _new_draws(seed, clusters, resamples)
    return _cached_draws(seed, clusters, resamples)


def _new_draws(seed: int, clusters: int, resamples: int) -> Any:
    import numpy as np

    draws = np.random.default_rng(seed).integers(0, clusters, size=(resamples, clusters))
    draws.flags.writeable = False
    return draws


_cached_draws = lru_cache(maxsize=8)(_new_draws)


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


def wilson_interval(
    successes: int, trials: int, z: float = 1.959963984540054
) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default): unlike the normal
    approximation it stays inside [0, 1] and is not zero-width at 0 or n successes, which a
    rate near 0 or 1 (an injection always or never obeyed) needs. `trials` must be > 0."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, not {successes}/{trials}")
    share = successes / trials
    denominator = 1 + z * z / trials
    centre = (share + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)
