"""Verdicts of a paired comparison (turnbench.stats.paired): hand-computed cases, the gate,
and a simulation of judge noise on MT-Bench-like scores."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from turnbench.errors import UserError
from turnbench.stats.paired import (
    MIN_PAIRS,
    PairedScore,
    StatRow,
    compare_paired,
    fails_gate,
    smallest_decidable,
)


def _pairs(deltas, groups=None, base=5.0) -> list[PairedScore]:
    groups = groups or ["g"] * len(deltas)
    return [
        PairedScore(str(i), group, base, base + delta)
        for i, (group, delta) in enumerate(zip(groups, deltas, strict=True))
    ]


# -- hand-computed cases -----------------------------------------------------------------------
# deltas -> (p-value, verdict): with n units the sign-flip distribution of the sum has all
# 2**n patterns equally likely; p = share of patterns at least as far from 0 as observed.
EXACT = {
    # all six improved: only the identity and the full flip reach |sum| = 6 -> 2/64
    "six up by one": ([1, 1, 1, 1, 1, 1], 2 / 64, "better"),
    "six down by two": ([-2] * 6, 2 / 64, "worse"),
    # five up, one down: the sum of 6 random signs reaches |S| >= 4 in 2 * (1 + 6) of 64
    "five up one down": ([1, 1, 1, 1, 1, -1], 14 / 64, "no_change"),
    # zeros never move the sum: all 2**7 patterns give |S| = 3 -> p = 1
    "one change among zeros": ([0, 0, 0, 0, 0, 0, 3], 1.0, "no_change"),
    "nothing changed": ([0.0] * 8, 1.0, "no_change"),
    # 7 of 8 up by one, one up by 3: |S| = 10 is reached by the identity, the full flip
    # and nothing else (flipping any one unit gives at most 8) -> 2/256
    "eight up": ([1, 1, 1, 1, 1, 1, 1, 3], 2 / 256, "better"),
}


@pytest.mark.parametrize("case", list(EXACT))
def test_exact_sign_flip_p_values_and_verdicts(case):
    deltas, p_value, verdict = EXACT[case]
    row = compare_paired(_pairs(deltas)).overall
    assert row.n == len(deltas)
    assert row.delta == pytest.approx(sum(deltas) / len(deltas))
    assert row.p_value == pytest.approx(p_value)
    assert row.verdict == verdict
    assert row.ci_low <= row.delta <= row.ci_high
    assert (row.ci_low > 0 or row.ci_high < 0) == (verdict in ("better", "worse"))


def test_below_the_minimum_a_row_has_numbers_but_no_interval_or_verdict():
    row = compare_paired(_pairs([3.0] * (MIN_PAIRS - 1)), min_pairs=MIN_PAIRS).overall
    assert (row.n, row.base, row.new, row.delta) == (MIN_PAIRS - 1, 5.0, 8.0, 3.0)
    assert (row.ci_low, row.ci_high, row.p_value) == (None, None, None)
    assert row.verdict == "insufficient_data"
    assert MIN_PAIRS == 6  # the smallest n whose best p-value (2 / 2**n) is below 0.05


def test_one_question_per_category_is_insufficient_for_every_category():
    """The reported case: 8 categories of 1 question, per-question deltas from -4 to +5, an
    overall delta of -0.19. It was `worse` with the interval [-0.19, -0.19] (resampling
    within groups of one), and `--fail-if-worse 0.1` exited 1."""
    deltas = [-4.0, 5.0, -1.0, 2.0, -3.0, 0.5, -1.0, 0.0]
    result = compare_paired(_pairs(deltas, [f"c{i}" for i in range(8)]))
    assert [row.verdict for row in result.groups] == ["insufficient_data"] * 8
    assert [row.delta for row in result.groups] == deltas
    overall = result.overall
    assert overall.n == 8 and overall.delta == pytest.approx(-0.1875)
    assert overall.verdict == "no_change"
    # as wide as the spread of the deltas says (a t interval would be [-2.57, 2.19])
    assert overall.ci_low < -2 and overall.ci_high > 2
    assert not fails_gate(overall, 0.1)


def test_interval_is_the_set_of_shifts_the_test_keeps():
    """Shifting every delta by mu inside the interval gives no verdict; just outside, one."""
    deltas = [2.0, 0.5, 1.0, -0.5, 1.5, 3.0, 0.0, 1.0, 2.5, -1.0, 1.0, 0.5]
    row = compare_paired(_pairs(deltas)).overall
    assert row.verdict == "better" and 0 < row.ci_low < row.delta < row.ci_high
    for mu, inside in [
        (row.ci_low + 1e-6, True),
        (row.ci_high - 1e-6, True),
        (row.ci_low - 1e-6, False),
        (row.ci_high + 1e-6, False),
    ]:
        shifted = compare_paired(_pairs([d - mu for d in deltas])).overall
        assert (shifted.verdict == "no_change") == inside, (mu, shifted)


# groups and deltas -> expected overall (n, base, new, delta) under each aggregation
AGGREGATIONS = [
    # one unit of +2 in A (5 -> 7), three units of 0 in B: mean of groups weighs A as 1/2
    ("mean", ["A", "B", "B", "B"], [2, 0, 0, 0], (4, 5.0, 5.5, 0.5)),
    ("mean_of_groups", ["A", "B", "B", "B"], [2, 0, 0, 0], (4, 5.0, 6.0, 1.0)),
    ("mean_of_groups", ["A", "A", "B", "C"], [1, 3, -1, 0], (4, 5.0, 5 + (2 - 1 + 0) / 3, 1 / 3)),
]


@pytest.mark.parametrize(("aggregation", "groups", "deltas", "expected"), AGGREGATIONS)
def test_overall_follows_the_benchmark_aggregation(aggregation, groups, deltas, expected):
    result = compare_paired(_pairs(deltas, groups), aggregation)
    row = result.overall
    assert (row.n, row.base, row.new, row.delta) == pytest.approx(expected)
    assert row.verdict == "insufficient_data"  # 4 units


def test_mean_of_groups_tests_the_weighted_mean():
    """12 units: A has 2 units of +3, B has 10 of 0. Mean over units: +0.5, mean of groups:
    +1.5; in both the only patterns as extreme as observed flip nothing in A or all of it,
    so p = 2 patterns of A's 4 = 1/2."""
    groups = ["A", "A"] + ["B"] * 10
    deltas = [3, 3] + [0] * 10
    for aggregation, delta in (("mean", 0.5), ("mean_of_groups", 1.5)):
        row = compare_paired(_pairs(deltas, groups), aggregation).overall
        assert row.delta == pytest.approx(delta)
        assert row.p_value == pytest.approx(0.5, abs=0.03)  # random patterns above 2**10
        assert row.verdict == "no_change"


def test_groups_follow_the_given_order_then_first_appearance():
    groups = ["b", "a", "c"] * 6
    result = compare_paired(_pairs([1.0] * 18, groups), order=["c", "x"])
    assert [row.name for row in result.groups] == ["c", "b", "a"]
    assert [row.n for row in result.groups] == [6, 6, 6]


def test_seeded_and_deterministic():
    rng = np.random.default_rng(3)
    deltas = list(rng.integers(-3, 5, size=40) / 2)
    groups = [f"g{i % 4}" for i in range(40)]
    one = compare_paired(_pairs(deltas, groups), seed=7)
    two = compare_paired(_pairs(deltas, groups), seed=7)
    assert one == two
    # a group's row does not depend on which other groups are there
    alone = compare_paired(_pairs(deltas[:40:4], groups[:40:4]), seed=7)
    assert alone.groups[0] == one.groups[0]


@pytest.mark.parametrize(
    ("pairs", "error"),
    [
        ([], UserError),
        ([PairedScore("1", "g", 1, 2), PairedScore("1", "g", 1, 2)], ValueError),
        (_pairs([1.0, math.nan]), ValueError),
    ],
    ids=["no pairs", "unit twice", "not a number"],
)
def test_bad_input_is_refused(pairs, error):
    with pytest.raises(error):
        compare_paired(pairs)


def test_settings_that_cannot_give_a_verdict_are_refused():
    with pytest.raises(ValueError, match="no verdict is possible"):
        compare_paired(_pairs([1.0] * 10), min_pairs=5)
    with pytest.raises(ValueError, match="no verdict is possible"):
        compare_paired(_pairs([1.0] * 10), level=0.99, min_pairs=6)  # 0.99 needs 8 units
    assert [smallest_decidable(level) for level in (0.9, 0.95, 0.99)] == [5, 6, 8]
    # by default the minimum follows the level: 7 units are too few for 99%
    assert compare_paired(_pairs([1.0] * 7), level=0.99).overall.verdict == "insufficient_data"
    assert compare_paired(_pairs([1.0] * 8), level=0.99).overall.verdict == "better"
    with pytest.raises(ValueError, match="too few"):
        compare_paired(_pairs([1.0] * 30), resamples=10)


# -- the gate ----------------------------------------------------------------------------------
def _row(verdict: str, ci_high: float | None) -> StatRow:
    low = None if ci_high is None else ci_high - 1
    return StatRow("overall", 80, 6.0, 5.0, -1.0, low, ci_high, None, verdict)  # type: ignore[arg-type]


GATE = [
    ("worse", -0.5, 0.1, True),
    ("worse", -0.1, 0.1, False),  # the interval reaches -D: not shown to be worse by > D
    ("worse", -0.05, 0.1, False),
    ("worse", -0.01, 0.0, True),
    ("no_change", -0.5, 0.1, False),  # only a `worse` verdict fails (never noise)
    ("better", 2.0, 0.1, False),
    ("insufficient_data", None, 0.0, False),
]


@pytest.mark.parametrize(("verdict", "ci_high", "threshold", "fails"), GATE)
def test_gate(verdict, ci_high, threshold, fails):
    assert fails_gate(_row(verdict, ci_high), threshold) is fails


@pytest.mark.parametrize("threshold", [-0.1, math.nan, math.inf])
def test_gate_refuses_a_meaningless_threshold(threshold):
    with pytest.raises(ValueError):
        fails_gate(_row("worse", -1.0), threshold)


# -- simulation: judge noise is not a change, a real +1 is -------------------------------------
def mt_bench_runs(rng: np.random.Generator, per_category: int, shift: float = 0.0):
    """Two runs of MT-Bench-like scores: 8 categories, 2 turns per question, 1-10 integers.
    Each question has a difficulty (and each turn an offset) shared by both runs; each run
    adds its own noise per turn (answer sampling and judge); `shift` is added to the new
    run's latent quality."""
    questions = 8 * per_category
    difficulty = rng.normal(0, 1.8, size=(questions, 1)) + rng.normal(0, 0.8, (questions, 2))

    def run(offset: float) -> np.ndarray:
        latent = 6.5 + offset + difficulty + rng.normal(0, 1.0, size=(questions, 2))
        return np.clip(np.rint(latent), 1, 10).mean(axis=1)

    base, new = run(0.0), run(shift)
    return [
        PairedScore(str(q), f"category {q % 8}", float(base[q]), float(new[q]))
        for q in range(questions)
    ]


NULL_SEEDS = 1000
NULL_PATTERNS = 500  # sign patterns per comparison: p resolves to 1/501, ample at 0.05


def test_judge_noise_is_called_a_change_in_at_most_5_percent_of_runs():
    """Same model, only noise differs: at every size that gets a verdict (80 questions, 48,
    24, and 8 (one per category)), `better` or `worse` is given in at most 5% of 1000
    seeds, overall and per category. (The method is exact, at most 5% in expectation; with
    ties in 1-10 scores it is below that.)"""
    overall_calls = overall_trials = group_calls = group_trials = 0
    for per_category in (10, 6, 3, 1):
        rng = np.random.default_rng(per_category)
        calls = trials = g_calls = g_trials = 0
        for seed in range(NULL_SEEDS):
            pairs = mt_bench_runs(rng, per_category)
            result = compare_paired(pairs, seed=seed, resamples=NULL_PATTERNS)
            assert result.overall.verdict != "insufficient_data"
            trials += 1
            calls += result.overall.verdict in ("better", "worse")
            for row in result.groups:
                if per_category < MIN_PAIRS:
                    assert row.verdict == "insufficient_data"
                    continue
                g_trials += 1
                g_calls += row.verdict in ("better", "worse")
        assert calls / trials <= 0.05, (per_category, calls)
        if g_trials:
            assert g_calls / g_trials <= 0.05, (per_category, g_calls)
        overall_calls, overall_trials = overall_calls + calls, overall_trials + trials
        group_calls, group_trials = group_calls + g_calls, group_trials + g_trials
    assert group_calls / group_trials <= 0.05, group_calls / group_trials
    assert overall_calls / overall_trials <= 0.05, overall_calls / overall_trials


def test_a_one_point_gain_over_80_questions_is_detected():
    rng = np.random.default_rng(2024)
    results = [compare_paired(mt_bench_runs(rng, 10, shift=1.0), seed=s) for s in range(50)]
    better = sum(r.overall.verdict == "better" for r in results)
    assert better / len(results) >= 0.8, better
    assert all(r.overall.verdict != "worse" for r in results)


def test_2000_resamples_for_80_units_take_well_under_a_second():
    pairs = mt_bench_runs(np.random.default_rng(0), 10)
    started = time.perf_counter()
    compare_paired(pairs, resamples=2000)
    assert time.perf_counter() - started < 0.5  # measured ~0.01 s; generous for busy CI
