"""Bradley-Terry ratings, bootstrap intervals, and battles from single-grading scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from turnbench.stats.ratings import (
    Battle,
    bradley_terry,
    fit_strengths,
    score_battles,
    to_elo,
)
from turnbench.stats.scoring import bootstrap_group_cis, bootstrap_mean_ci

TRUE_ELO = {"strong": 1300.0, "good": 1150.0, "fair": 1000.0, "weak": 850.0, "poor": 700.0}


def tournament(questions: int, seed: int) -> list[Battle]:
    """Every pair meets on every question; outcomes drawn from the true BT probabilities,
    with ties when the draw lands in a band around the even point."""
    rng = np.random.default_rng(seed)
    names = list(TRUE_ELO)
    battles = []
    for question in range(questions):
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                p = 1.0 / (1.0 + 10 ** ((TRUE_ELO[b] - TRUE_ELO[a]) / 400.0))
                u = rng.random()
                score = 1.0 if u < p - 0.05 else 0.5 if u < p + 0.05 else 0.0
                battles.append(Battle(question, a, b, score))
    return battles


def widths(ratings: dict) -> dict[str, float]:
    return {n: r["ci95"][1] - r["ci95"][0] for n, r in ratings["models"].items()}


def test_recovers_the_known_ordering_and_intervals_shrink_with_more_data():
    small = bradley_terry(tournament(40, seed=1), resamples=300)
    large = bradley_terry(tournament(640, seed=2), resamples=300)
    for result in (small, large):
        assert list(result["models"]) == list(TRUE_ELO)  # sorted by rating = true order
        assert [r["rank"] for r in result["models"].values()] == [1, 2, 3, 4, 5]
        for name, row in result["models"].items():
            assert row["ci95"][0] <= row["rating"] <= row["ci95"][1], name
    # 16x the questions: intervals about 4x narrower; demand at least 2.5x for every model
    small_w, large_w = widths(small), widths(large)
    for name in TRUE_ELO:
        assert large_w[name] * 2.5 < small_w[name], (name, small_w[name], large_w[name])
    # and close to the truth (differences from the mean, the scale's anchor)
    for name, row in large["models"].items():
        assert abs(row["rating"] - TRUE_ELO[name]) < 40, name
        assert row["ci95"][0] - 15 < TRUE_ELO[name] < row["ci95"][1] + 15, name


def test_fit_matches_an_independent_optimiser():
    battles = tournament(30, seed=3)
    names = list(TRUE_ELO)
    points = np.zeros((5, 5))
    for b in battles:
        i, j = names.index(b.model_a), names.index(b.model_b)
        points[i, j] += b.score_a
        points[j, i] += 1 - b.score_a

    def loss(theta):
        total = 0.0
        for i in range(5):
            for j in range(5):
                total += points[i, j] * math.log1p(math.exp(theta[j] - theta[i]))
        return total + 0.5 * 0.01 * float(theta @ theta)

    reference = minimize(
        loss,
        np.zeros(5),
        method="Nelder-Mead",
        options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 40000, "maxfev": 40000},
    ).x
    ours = fit_strengths(points, prior=0.01)
    assert np.allclose(ours, reference - reference.mean(), atol=1e-3)


def test_two_models_elo_difference_is_the_log_odds():
    # 30 wins to 10 over many questions: P = 0.75, so the gap is 400*log10(3) = 190.85
    battles = [Battle(q, "a", "b", 1.0 if q < 30 else 0.0) for q in range(40)]
    ratings = bradley_terry(battles, prior=1e-9, resamples=0)["models"]
    assert ratings["a"]["rating"] - ratings["b"]["rating"] == pytest.approx(
        400 * math.log10(3), abs=1e-4
    )
    assert ratings["a"]["rating"] + ratings["b"]["rating"] == pytest.approx(2000.0)
    assert ratings["a"]["ci95"] is None  # no resamples, no interval


def test_ties_are_half_a_win_and_a_clean_sweep_stays_finite():
    even = bradley_terry([Battle(q, "a", "b", 0.5) for q in range(10)], resamples=0)
    assert even["models"]["a"]["rating"] == pytest.approx(1000.0)
    sweep = bradley_terry([Battle(q, "a", "b", 1.0) for q in range(80)], resamples=50)
    top = sweep["models"]["a"]
    assert math.isfinite(top["rating"]) and top["rating"] > 1500
    assert to_elo(np.array([0.0]))[0] == 1000.0


def test_bootstrap_is_seeded():
    battles = tournament(20, seed=4)
    first = bradley_terry(battles, resamples=100, seed=7)
    again = bradley_terry(battles, resamples=100, seed=7)
    other = bradley_terry(battles, resamples=100, seed=8)
    assert first == again
    assert first["models"]["good"]["ci95"] != other["models"]["good"]["ci95"]
    assert first["seed"] == 7 and first["questions"] == 20 and first["battles"] == 200


def test_models_without_battles_are_listed_unrated():
    result = bradley_terry([Battle(1, "a", "b", 1.0)], models=["a", "b", "idle"], resamples=0)
    assert result["models"]["idle"] == {"rating": None, "ci95": None, "rank": None, "battles": 0}
    assert list(result["models"])[-1] == "idle"


def test_score_battles_from_single_grading():
    scores = {
        ("x", 81, 1): 8.0,
        ("y", 81, 1): 6.0,  # x wins
        ("z", 81, 1): 8.0,  # ties x, beats y
        ("x", 81, 2): 3.0,
        ("y", 81, 2): 5.0,  # y wins; z has no score on this turn (failed)
        ("x", 82, 1): 7.0,  # only x: no battle
    }
    battles = score_battles(scores, ["x", "y", "z"])
    assert sorted(battles, key=lambda b: (b.group, b.model_a, b.model_b, b.score_a)) == [
        Battle(81, "x", "y", 0.0),  # turn 2
        Battle(81, "x", "y", 1.0),  # turn 1
        Battle(81, "x", "z", 0.5),
        Battle(81, "y", "z", 0.0),
    ]


def test_group_intervals_match_the_per_group_bootstrap():
    rows = [("1", q, float(q % 7)) for q in range(20)] + [("2", q, float(q % 3)) for q in range(20)]
    cis = bootstrap_group_cis(rows)
    assert cis["1"] == bootstrap_mean_ci([[float(q % 7)] for q in range(20)])
    assert cis["2"] == bootstrap_mean_ci([[float(q % 3)] for q in range(20)])
    assert bootstrap_group_cis([("only", 1, 5.0)]) == {"only": None}  # one cluster: no interval


def _reference_interval(clusters, resamples=1000, level=0.95, seed=0):
    """The cluster bootstrap written out plainly: fresh draws, every count summed."""
    kept = [c for c in clusters if c]
    rng = np.random.default_rng(seed)
    sums = np.array([sum(c) for c in kept], dtype=float)
    counts = np.array([len(c) for c in kept], dtype=float)
    draws = rng.integers(0, len(kept), size=(resamples, len(kept)))
    stats = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    low, high = np.quantile(stats, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(low), float(high)


@pytest.mark.parametrize("sizes", ["equal", "unequal", "large"])
def test_bootstrap_interval_is_exactly_the_plain_computation(sizes):
    """Kept draws and the equal-size shortcut change no digit, however often it is asked."""
    rng = np.random.default_rng(11)
    count = 1388 if sizes == "large" else 80  # large: beyond the kept draws
    clusters = [
        [float(v) for v in rng.integers(1, 11, size=2 if sizes != "unequal" else 1 + i % 3)]
        for i in range(count)
    ]
    expected = _reference_interval(clusters)
    assert bootstrap_mean_ci(clusters) == expected
    assert bootstrap_mean_ci(clusters) == expected  # the second time from kept draws
    assert bootstrap_mean_ci(clusters, seed=3) == _reference_interval(clusters, seed=3)
