"""Inter-judge agreement statistics on hand-computed tables."""

from __future__ import annotations

import pytest

from turnbench.trust.agreement import (
    fleiss_kappa,
    krippendorff_alpha_interval,
    label_agreement,
    rating_agreement,
)


def test_krippendorff_alpha_interval_by_hand():
    # units (1, 2), (3, 3), (5, 4); n = 6 pairable values
    # D_o = [2*(1-2)^2/1 + 0 + 2*(5-4)^2/1] / 6 = 4/6
    # pooled 1,2,3,3,5,4: sum over ordered pairs (vi - vj)^2 = 2 (6*64 - 18^2) = 120,
    # D_e = 120 / (6*5) = 4; alpha = 1 - (4/6)/4 = 5/6
    assert krippendorff_alpha_interval([[1, 2], [3, 3], [5, 4]]) == pytest.approx(5 / 6)


def test_krippendorff_alpha_with_missing_values_and_a_lonely_unit():
    # the third unit has one value and is left out; units (1, 2), (3, 3, 3)
    # D_o = [2 + 0] / 5 = 0.4; pooled 1,2,3,3,3: 2 (5*32 - 144) = 32, D_e = 32/20 = 1.6
    units = [[1, 2, None], [3, 3, 3], [5, None, None]]
    assert krippendorff_alpha_interval(units) == pytest.approx(1 - 0.4 / 1.6)


@pytest.mark.parametrize(
    ("units", "expected"),
    [
        ([[4, 4], [7, 7], [2, 2]], 1.0),  # perfect agreement
        ([[5, 5], [5, 5]], None),  # no variation: undefined
        ([[5], [6]], None),  # nothing pairable
        # D_o = (128 + 128) / 4 = 64; pooled 1,9,9,1: 2 (4*164 - 400) / 12 = 128/3
        ([[1, 9], [9, 1]], pytest.approx(-0.5)),
    ],
)
def test_krippendorff_alpha_edge_cases(units, expected):
    assert krippendorff_alpha_interval(units) == expected


def test_fleiss_kappa_by_hand():
    # 3 raters, 4 items: P_i = 1, 1/3, 1, 1/3 -> P = 2/3; p_A = p_B = 1/2 -> P_e = 1/2
    units = [["A", "A", "A"], ["A", "A", "B"], ["B", "B", "B"], ["A", "B", "B"]]
    assert fleiss_kappa(units) == pytest.approx((2 / 3 - 1 / 2) / (1 / 2))
    assert fleiss_kappa([["A", "A"], ["B", "B"]]) == pytest.approx(1.0)
    assert fleiss_kappa([["A", "A"], ["A", "A"]]) is None  # one category: undefined
    # units of another size are left out
    assert fleiss_kappa([*units, ["A", "B"]], 3) == pytest.approx(1 / 3)


def test_rating_and_label_agreement_tables():
    ratings = rating_agreement({"a": [8, 6, None, 3], "b": [8, 5, 7, None]})
    assert ratings["items"] == 2
    pair = ratings["pairs"]["a | b"]
    assert pair["items"] == 2 and pair["exact_agreement"] == 0.5
    assert pair["mean_abs_difference"] == pytest.approx(0.5)
    labels = label_agreement({"a": ["A", "B", "tie", "A"], "b": ["A", "B", "A", None]}, "verdicts")
    assert labels["items"] == 3
    # Cohen over (A,A), (B,B), (tie,A): p_o = 2/3; a: A 1/3, B 1/3, tie 1/3; b: A 2/3, B 1/3
    # p_e = 1/3*2/3 + 1/3*1/3 = 1/3 -> kappa = (2/3 - 1/3) / (2/3) = 1/2
    assert labels["pairs"]["a | b"]["cohen_kappa"] == pytest.approx(0.5)
    assert labels["pairs"]["a | b"]["agreement"] == pytest.approx(2 / 3)


def test_pair_keys_stay_apart_when_judge_names_hold_the_separator():
    """Judges `a | b` + `c` and `a` + `b | c` joined with " | " are one key: one pair's numbers
    overwrote the other's. Names holding `|` make JSON keys, one per pair; plain names keep
    the readable `a | b` key."""
    import json

    table = {"a | b": ["x", "x"], "c": ["x", "x"], "a": ["x", "y"], "b | c": ["y", "x"]}
    pairs = label_agreement(table, "verdicts")["pairs"]
    assert len(pairs) == 6
    decoded = {tuple(json.loads(k)) if k.startswith("[") else tuple(k.split(" | ")) for k in pairs}
    assert decoded == {
        ("a | b", "c"), ("a | b", "a"), ("a | b", "b | c"), ("c", "a"), ("c", "b | c"),
        ("a", "b | c"),
    }  # fmt: skip
    assert pairs[json.dumps(["a | b", "c"])]["agreement"] == 1.0
    assert pairs[json.dumps(["a", "b | c"])]["agreement"] == 0.0
    assert pairs["c | a"]["agreement"] == 0.5  # plain names: the key as before
