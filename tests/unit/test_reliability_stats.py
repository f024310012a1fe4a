"""Reliability statistics (turnbench.stats.reliability) on hand-computed tables.

Percentiles are numpy's linear method: the value at rank (n - 1) * q / 100 of the sorted
scores, interpolated between the two closest ranks. With n = 5: P90 is at rank 3.6 and
P10 at rank 0.4.
"""

from __future__ import annotations

import pytest

from turnbench.stats.reliability import (
    DegradationUndefinedError,
    Interval,
    ReliabilitySummary,
    degradation,
    pass_at_k,
    pass_hat_k,
    percentile,
    reliability_summary,
)

# 3 samples x 5 scores
TABLE = {
    # sorted 0, .25, .5, .75, 1: mean .5; P90 = .75 + .6 * .25 = .9; P10 = 0 + .4 * .25 = .1
    "a": [0.0, 0.25, 0.5, 0.75, 1.0],
    # all 1: mean 1, P90 = P10 = 1, spread 0
    "b": [1.0, 1.0, 1.0, 1.0, 1.0],
    # sorted .2, .2, .2, .2, .7: mean 1.5 / 5 = .3; P90 = .2 + .6 * .5 = .5; P10 = .2
    "c": [0.7, 0.2, 0.2, 0.2, 0.2],
}


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([1, 2, 3, 4], 90, 3.7),  # rank 2.7: 3 + .7 * (4 - 3)
        ([1, 2, 3, 4], 10, 1.3),  # rank 0.3
        ([4, 1, 3, 2], 50, 2.5),  # order does not matter; rank 1.5
        ([0.0, 0.25, 0.5, 0.75, 1.0], 90, 0.9),
        ([7], 90, 7.0),  # one value: every percentile is that value
    ],
)
def test_percentile_is_linear_interpolation(values, q, expected):
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_refuses_no_values_and_bad_q():
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_summary_of_three_samples_by_five():
    summary = reliability_summary(TABLE, seed=0)
    assert isinstance(summary, ReliabilitySummary)
    # mean of per-sample means: (.5 + 1 + .3) / 3 = .6
    assert summary.mean == pytest.approx(0.6)
    # aptitude: mean of P90s = (.9 + 1 + .5) / 3 = .8
    assert summary.aptitude == pytest.approx(0.8)
    # unreliability: mean of (P90 - P10) = (.8 + 0 + .3) / 3 = .36667
    assert summary.unreliability == pytest.approx(1.1 / 3)
    assert (summary.samples, summary.simulations) == (3, 5)
    # the interval resamples the 3 samples (means .3, .5, 1): drawing c three times (.3)
    # or b three times (1.0) happens with chance 1/27 = 3.7% each, more than the 2.5% in
    # each tail, so the 95% percentile interval is exactly [.3, 1]
    assert summary.mean_ci95 == pytest.approx((0.3, 1.0))


def test_summary_weights_samples_equally_and_reports_the_largest_n():
    # x: one score 1 (mean 1); y: 0, 0, 1, 1 (mean .5). Pooled over all 5 scores the
    # mean would be 3 / 5 = .6; per sample it is (1 + .5) / 2 = .75
    summary = reliability_summary({"x": [1.0], "y": [0.0, 1.0, 0.0, 1.0]})
    assert summary.mean == pytest.approx(0.75)
    # y sorted 0, 0, 1, 1: P90 at rank 2.7 = 1, P10 at rank .3 = 0 -> spread 1; x: spread 0
    assert summary.aptitude == pytest.approx(1.0)
    assert summary.unreliability == pytest.approx(0.5)
    assert (summary.samples, summary.simulations) == (2, 4)


def test_summary_is_deterministic_and_independent_of_mapping_order():
    first = reliability_summary(TABLE, seed=3)
    again = reliability_summary(dict(reversed(list(TABLE.items()))), seed=3)
    assert first == again


def test_summary_leaves_out_samples_without_scores():
    summary = reliability_summary({"gone": [], "kept": [0.5, 0.5]})
    assert (summary.samples, summary.mean) == (1, 0.5)
    # one sample: the bootstrap has one possible draw
    assert summary.mean_ci95 == (0.5, 0.5)
    with pytest.raises(ValueError):
        reliability_summary({"gone": []})
    with pytest.raises(ValueError):
        reliability_summary({"bad": [float("nan")]})


def test_degradation_is_paired_over_common_samples():
    # full: a mean 1, b mean .5 (c only in full: ignored)
    full = {"a": [1.0, 1.0], "b": [0.5, 0.5], "c": [0.8]}
    # sharded: a mean .6, b mean .25 (d only in sharded: ignored)
    sharded = {"a": [0.5, 0.7], "b": [0.25], "d": [1.0]}
    result = degradation(full, sharded, seed=0)
    assert isinstance(result, Interval)
    # 1 - ((.6 + .25) / 2) / ((1 + .5) / 2) = 1 - .425 / .75 = .43333
    assert result.value == pytest.approx(1 - 0.425 / 0.75)
    # paired resamples of {a, b}: aa -> 1 - .6 / 1 = .4 (chance 1/4), bb -> 1 - .25 / .5 =
    # .5 (1/4), ab -> .4333 (1/2): the interval is [.4, .5]. Unpaired draws could give
    # 1 - .25 / 1 = .75 or 1 - .6 / .5 = -.2
    assert (result.ci_low, result.ci_high) == pytest.approx((0.4, 0.5))
    assert result.model_dump() == {
        "value": result.value,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
    }


def test_degradation_without_a_full_mean_raises():
    with pytest.raises(DegradationUndefinedError):
        degradation({"a": [0.0, 0.0]}, {"a": [0.5]})
    with pytest.raises(DegradationUndefinedError):
        degradation({"a": [1.0]}, {"b": [0.5]})  # nothing in common
    with pytest.raises(ValueError):
        degradation({"a": [1.0], "b": [-1.0]}, {"a": [0.5], "b": [0.5]})


def test_degradation_drops_resamples_with_no_ratio():
    # a has full 0; only b carries the ratio: 1 - (0 + .5)/2 / ((0 + 1)/2) = .5. Drawing
    # a twice has no ratio (left out), ab and bb give .5: the interval is [.5, .5]
    result = degradation({"a": [0.0], "b": [1.0]}, {"a": [0.0], "b": [0.5]})
    assert (result.value, result.ci_low, result.ci_high) == pytest.approx((0.5, 0.5, 0.5))
    single = degradation({"a": [0.8]}, {"a": [0.2]})
    assert (single.value, single.ci_low, single.ci_high) == pytest.approx((0.75, 0.75, 0.75))


def test_pass_hat_k_for_three_of_five():
    # c = 3 successes of n = 5: C(3,k) / C(5,k) = 3/5, 3/10, 1/10, 0/5, 0/1
    assert pass_hat_k({"s": [True, False, True, True, False]}) == pytest.approx(
        {"1": 0.6, "2": 0.3, "3": 0.1, "4": 0.0, "5": 0.0}
    )


def test_pass_hat_k_and_pass_at_k_average_over_samples():
    successes = {"s1": [True, False, True, True, False], "s2": [True] * 5}
    # s2 always succeeds (1 for every k): the mean of s1's value and 1
    assert pass_hat_k(successes) == pytest.approx(
        {"1": 0.8, "2": 0.65, "3": 0.55, "4": 0.5, "5": 0.5}
    )
    # s1: 1 - C(2,k) / C(5,k) = 1 - 2/5, 1 - 1/10, 1 - 0, 1, 1
    assert pass_at_k(successes) == pytest.approx(
        {"1": 0.8, "2": 0.95, "3": 1.0, "4": 1.0, "5": 1.0}
    )


def test_pass_k_with_unequal_tries_stops_at_the_smallest_n():
    successes = {"s1": [True, True, False], "s2": [True, False], "none": []}
    # k = 1: (2/3 + 1/2) / 2 = 7/12; k = 2: (C(2,2)/C(3,2) + C(1,2)/C(2,2)) / 2 = (1/3 + 0)/2
    assert pass_hat_k(successes) == pytest.approx({"1": 7 / 12, "2": 1 / 6})
    # pass@2: s1 1 - C(1,2)/C(3,2) = 1; s2 1 - C(1,2)/C(2,2) = 1
    assert pass_at_k(successes) == pytest.approx({"1": 7 / 12, "2": 1.0})
    assert pass_hat_k({}) == {} and pass_at_k({"none": []}) == {}
