"""Length-aware scores: ranks, Spearman's rho, and the length-controlled score on synthetic
data with a known length effect."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from turnbench.benchmarks.base import JudgedTurn, Sample, Turn
from turnbench.benchmarks.tables import ScoreTables
from turnbench.trust.blocks import length_scores
from turnbench.trust.length import LengthRow, fit_length_effect, ranks, spearman


def test_ranks_share_ties():
    assert ranks([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]
    assert ranks([3, 1, 2]) == [3, 1, 2]


@pytest.mark.parametrize(
    ("x", "y", "rho"),
    [
        ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
        ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
        ([1, 2, 3, 4], [1, 3, 2, 4], 0.8),  # sum d^2 = 2: 1 - 6*2 / (4*15)
        ([1, 2], [1, 2], None),  # too few
        ([1, 2, 3], [5, 5, 5], None),  # no variation
    ],
)
def test_spearman(x, y, rho):
    assert spearman(x, y) == (pytest.approx(rho) if rho is not None else None)


def synthetic(slope: float, seed: int = 7) -> tuple[list[LengthRow], dict[str, float]]:
    """Three models of quality 5, 6, 7 answering the same 60 items; the better models also
    write longer answers, and every score rises by `slope` per unit of log length."""
    rng = np.random.default_rng(seed)
    quality = {"small": 5.0, "medium": 6.0, "large": 7.0}
    typical = {"small": 300.0, "medium": 600.0, "large": 1200.0}
    difficulty = rng.normal(0, 1, size=60)
    rows = []
    for model, q in quality.items():
        for item in range(60):
            chars = int(typical[model] * math.exp(rng.normal(0, 0.6)))
            score = float(q + difficulty[item] + slope * math.log(chars) + rng.normal(0, 0.05))
            rows.append(LengthRow(model, item, chars, score))
    return rows, quality


def test_the_pooled_fit_recovers_a_known_length_effect():
    rows, quality = synthetic(slope=0.8)
    fit = fit_length_effect(rows)
    assert fit.method == "within-model-and-item"
    assert fit.slope == pytest.approx(0.8, abs=0.03)
    assert fit.slope_per_doubling == pytest.approx(0.8 * math.log(2), abs=0.03)
    controlled = {
        model: np.mean([fit.adjust(r.score, r.chars) for r in rows if r.model == model])
        for model in quality
    }
    raw = {model: np.mean([r.score for r in rows if r.model == model]) for model in quality}
    # raw differences include the length advantage (0.8 * ln 2 per doubling: about 0.55)
    assert raw["large"] - raw["small"] == pytest.approx(2 + 0.8 * math.log(4), abs=0.3)
    # length-controlled differences are the quality differences
    assert controlled["medium"] - controlled["small"] == pytest.approx(1.0, abs=0.1)
    assert controlled["large"] - controlled["small"] == pytest.approx(2.0, abs=0.1)


def test_no_length_effect_leaves_scores_alone():
    rows, _ = synthetic(slope=0.0)
    fit = fit_length_effect(rows)
    assert fit.slope == pytest.approx(0.0, abs=0.03)


def test_one_model_is_fitted_within_model():
    lengths = [100, 200, 400, 800, 1600]
    alone = [LengthRow("m", i, c, 5 + 0.5 * math.log(c)) for i, c in enumerate(lengths)]
    fit = fit_length_effect(alone)
    assert fit.method == "within-model"
    assert fit.slope == pytest.approx(0.5)
    # moved to the mean log length, every adjusted score is the same
    adjusted = {round(fit.adjust(r.score, r.chars), 9) for r in alone}
    assert adjusted == {round(5 + 0.5 * math.log(400), 9)}
    assert fit_length_effect([]).slope is None


class MeanBenchmark:
    def aggregate(self, judged: Sequence[JudgedTurn]) -> ScoreTables:
        scores = [i.score for i in judged if i.status == "scored" and i.score is not None]
        return ScoreTables(overall=sum(scores) / len(scores) if scores else None, overall_ci95=None)


def test_length_scores_go_through_the_benchmarks_aggregation():
    rows, _ = synthetic(slope=0.8)
    fit = fit_length_effect(rows)
    samples = {i: Sample(id=i, group=None, turns=(Turn("q"),)) for i in range(60)}
    mine = [r for r in rows if r.model == "large"]
    items = [JudgedTurn(samples[r.item], 1, "scored", r.score) for r in mine]
    # LengthRow items are (sample id, turn, criterion) in results; use that shape here
    keyed = [LengthRow("large", (str(r.item), 1, None), r.chars, r.score) for r in mine]
    overall = sum(r.score for r in mine) / len(mine)
    block = length_scores(MeanBenchmark(), items, keyed, fit, overall)  # type: ignore[arg-type]
    expected = sum(fit.adjust(r.score, r.chars) for r in mine) / len(mine)
    assert block["length_controlled_overall"] == pytest.approx(expected)
    assert block["difference"] == pytest.approx(expected - overall)
    assert block["difference"] < -0.3  # the long-winded model loses its length bonus
    assert block["spearman"] > 0.3
    assert block["items"] == 60
