"""Bradley-Terry ratings on the Elo scale, with bootstrap intervals that resample questions.

A battle is one comparison of two models on one question (and turn): a win is worth 1 point,
a tie half a point to each side. The model is P(i beats j) = 1 / (1 + 10^((R_j - R_i) / 400)),
fitted by maximum likelihood with a weak Gaussian prior on the log-strengths: the prior keeps
the ratings finite when a model won (or lost) every comparison, and fixes the mean rating at
1000. The interval of a rating is the percentile interval over refits on resampled
*questions*, since the battles of one question (both turns, every pair) are not independent.

Battles come from pairwise verdicts, or from single-grading runs of several models: on each
judged (question, turn) that two models both have a score for, the higher score wins and
equal scores tie.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

ELO_SCALE = 400.0
ELO_MEAN = 1000.0
PRIOR = 0.01  # L2 penalty on natural-log strengths; negligible next to ~100 battles a pair
RESAMPLES = 1000
SEED = 0
LEVEL = 0.95


@dataclass(frozen=True)
class Battle:
    """One comparison. `group` is the resampling unit (the question id)."""

    group: Hashable
    model_a: str
    model_b: str
    score_a: float  # 1 = model_a won, 0 = model_b won, 0.5 = tie


def _points_matrix(battles: Iterable[Battle], index: Mapping[str, int]) -> np.ndarray:
    size = len(index)
    points = np.zeros((size, size))
    for battle in battles:
        a, b = index[battle.model_a], index[battle.model_b]
        points[a, b] += battle.score_a
        points[b, a] += 1.0 - battle.score_a
    return points


def _objective(points: np.ndarray, theta: np.ndarray, prior: float) -> np.ndarray:
    diff = theta[:, None, :] - theta[:, :, None]  # diff[b, i, j] = theta_j - theta_i
    fit = np.sum(points * np.logaddexp(0.0, diff), axis=(1, 2))
    return fit + 0.5 * prior * np.sum(theta * theta, axis=1)


def fit_strengths_batch(points: np.ndarray, prior: float = PRIOR) -> np.ndarray:
    """Log-strengths for a stack of point matrices, shape (batch, models, models).

    Damped Newton steps on the (strictly convex) penalised negative log-likelihood, all
    matrices at once: a few dozen small linear solves instead of one optimiser call per
    bootstrap sample. `points[b, i, j]` is what model i scored against model j.
    """
    batch, size, _ = points.shape
    theta = np.zeros((batch, size))
    if size == 0:
        return theta
    eye = np.eye(size)
    totals = points + np.swapaxes(points, 1, 2)  # battles between i and j, both directions
    value = _objective(points, theta, prior)
    for _ in range(100):
        diff = theta[:, None, :] - theta[:, :, None]
        beaten = 1.0 / (1.0 + np.exp(-diff))  # P(j beats i)
        weighted = points * beaten
        grad = weighted.sum(axis=1) - weighted.sum(axis=2) + prior * theta
        curvature = totals * beaten * (1.0 - beaten)
        hessian = -curvature + eye * (curvature.sum(axis=2) + prior)[:, :, None]
        step = np.linalg.solve(hessian, grad[:, :, None])[:, :, 0]
        scale = np.ones(batch)
        for _ in range(30):  # halve the step where it does not lower the objective
            candidate = theta - scale[:, None] * step
            new_value = _objective(points, candidate, prior)
            worse = new_value > value + 1e-12 * np.abs(value)
            if not worse.any():
                break
            scale = np.where(worse, scale / 2.0, scale)
        theta, value = candidate, new_value
        if np.max(np.abs(scale[:, None] * step)) < 1e-10:
            break
    return theta - theta.mean(axis=1, keepdims=True)


def fit_strengths(points: np.ndarray, prior: float = PRIOR) -> np.ndarray:
    """Log-strengths (mean 0) maximising the BT likelihood of `points[i, j]` = points of i vs j."""
    return fit_strengths_batch(points[None, :, :], prior)[0]


def to_elo(theta: np.ndarray) -> np.ndarray:
    return ELO_MEAN + ELO_SCALE * theta / math.log(10.0)


def bradley_terry(
    battles: list[Battle],
    *,
    models: list[str] | None = None,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = SEED,
    prior: float = PRIOR,
) -> dict[str, Any]:
    """Ratings, bootstrap intervals and ranks of every model that took part in a battle."""
    names = list(models) if models is not None else []
    for battle in battles:
        for name in (battle.model_a, battle.model_b):
            if name not in names:
                names.append(name)
    index = {name: i for i, name in enumerate(names)}
    by_group: dict[Hashable, list[Battle]] = defaultdict(list)
    for battle in battles:
        by_group[battle.group].append(battle)
    groups = list(by_group)
    per_group = np.stack([_points_matrix(by_group[g], index) for g in groups]) if groups else None
    played = np.zeros(len(names), dtype=int)
    for battle in battles:
        played[index[battle.model_a]] += 1
        played[index[battle.model_b]] += 1

    ratings = to_elo(fit_strengths(per_group.sum(axis=0), prior)) if per_group is not None else None
    intervals: np.ndarray | None = None
    if per_group is not None and len(groups) >= 2 and resamples > 0:
        rng = np.random.default_rng(seed)
        draws = rng.integers(0, len(groups), size=(resamples, len(groups)))
        flat = per_group.reshape(len(groups), -1)
        counts = np.stack([np.bincount(draw, minlength=len(groups)) for draw in draws])
        points = (counts.astype(float) @ flat).reshape(resamples, len(names), len(names))
        samples = to_elo(fit_strengths_batch(points, prior))
        alpha = (1.0 - level) / 2.0
        intervals = np.quantile(samples, [alpha, 1.0 - alpha], axis=0)

    table: dict[str, dict[str, Any]] = {}
    order = sorted(range(len(names)), key=lambda i: -ratings[i]) if ratings is not None else []
    ranks = {i: position + 1 for position, i in enumerate(order)}
    for i, name in enumerate(names):
        has_data = played[i] > 0 and ratings is not None
        table[name] = {
            "rating": float(ratings[i]) if has_data and ratings is not None else None,
            "ci95": (
                [float(intervals[0, i]), float(intervals[1, i])]
                if has_data and intervals is not None
                else None
            ),
            "rank": ranks.get(i) if has_data else None,
            "battles": int(played[i]),
        }
    return {
        "method": "bradley-terry",
        "scale": f"elo: {ELO_SCALE:g} points = 10:1 odds, mean {ELO_MEAN:g}",
        "prior": prior,
        "resample_unit": "question",
        "resamples": resamples,
        "level": level,
        "seed": seed,
        "battles": len(battles),
        "questions": len(groups),
        "models": dict(sorted(table.items(), key=lambda kv: kv[1]["rank"] or len(names) + 1)),
    }


def score_battles(
    scores: Mapping[tuple[str, Hashable, int], float], models: list[str] | None = None
) -> list[Battle]:
    """Battles from single grading: (model, question, turn) -> score, per pair of models.

    Every judged turn that both models of a pair have a score for is one battle: the higher
    score wins, equal scores tie. A turn one side has no score for (failed, pending) is
    left out for that pair only.
    """
    by_item: dict[tuple[Hashable, int], dict[str, float]] = defaultdict(dict)
    for (model, question, turn), score in scores.items():
        by_item[(question, turn)][model] = score
    names = list(models) if models is not None else sorted({m for m, _, _ in scores})
    battles = []
    for (question, _turn), scored in by_item.items():
        for i, model_a in enumerate(names):
            for model_b in names[i + 1 :]:
                if model_a in scored and model_b in scored:
                    a, b = scored[model_a], scored[model_b]
                    outcome = 1.0 if a > b else 0.0 if a < b else 0.5
                    battles.append(Battle(question, model_a, model_b, outcome))
    return battles
