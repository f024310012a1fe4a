"""The audit's probe texts, intervals and thresholds."""

from __future__ import annotations

import pytest

from turnbench.audit.probes import ATTACK_KINDS, manipulated, padded, probe_suite
from turnbench.audit.stats import interval
from turnbench.audit.thresholds import Threshold, metric_paths
from turnbench.errors import UserError


def test_the_probe_suite_is_well_formed():
    suite = probe_suite()
    assert suite.label == "turnbench-audit-probes-v1"
    ids = [q.id for q in suite.questions]
    assert len(ids) == len(set(ids)) == 12
    for q in suite.questions:
        # the fake judges of the tests tell right from wrong by containment
        assert q.right not in q.wrong and q.right_alt not in q.wrong
        assert len(padded(q.right)) >= 2 * len(q.right)
        for kind in ATTACK_KINDS:
            assert manipulated(suite, kind, q).startswith(q.wrong)
    assert padded("abc") == "abc\n\nabc"


def test_interval_of_a_mean():
    assert interval([]) == {"value": None, "ci_low": None, "ci_high": None}
    assert interval([2.0]) == {"value": 2.0, "ci_low": None, "ci_high": None}
    assert interval([1.0, 1.0, 1.0]) == {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0}
    spread = interval([0.0, 1.0] * 10, seed=3)
    assert spread["value"] == 0.5 and 0.2 < spread["ci_low"] < 0.5 < spread["ci_high"] < 0.8
    assert interval([0.0, 1.0] * 10, seed=3) == spread  # seeded


AUDIT = {
    "position_consistency": {"value": 0.7, "ci_low": 0.6, "ci_high": 0.8},
    "stability": {"value": None, "ci_low": None, "ci_high": None},
    "manipulation": {"fake_rating": {"without_guard": {"value": 2.0}, "with_guard": {"value": 0}}},
}


@pytest.mark.parametrize(
    ("rule", "failed"),
    [
        ("position_consistency<0.8", True),
        ("position_consistency <= 0.7", True),
        ("position_consistency<0.5", False),
        ("manipulation.fake_rating.without_guard>1", True),
        ("manipulation.fake_rating.with_guard>1", False),
        ("stability>1", True),  # not measured: fails
    ],
)
def test_thresholds(rule, failed):
    assert Threshold.parse(rule).check(AUDIT)["failed"] is failed


@pytest.mark.parametrize("rule", ["position_consistency", "nope<1", "stability = 1"])
def test_bad_thresholds_are_refused(rule):
    with pytest.raises(UserError):
        Threshold.parse(rule)


def test_metric_paths_cover_the_interface():
    paths = metric_paths()
    assert "manipulation.constant_answer.with_guard" in paths
    assert {"position_consistency", "first_position_preference", "verbosity_delta"} <= set(paths)


def test_the_published_audit_schema_is_generated_from_the_code():
    from pathlib import Path

    from turnbench.interop.schema import render

    path = Path(__file__).resolve().parents[2] / "docs" / "audit.schema.json"
    assert path.read_text("utf-8") == render(audit=True), (
        "docs/audit.schema.json is stale: run "
        "`python -m turnbench.interop.schema --audit --write docs/audit.schema.json`"
    )


def test_a_metric_object_holds_exactly_value_and_interval():
    from pydantic import ValidationError

    from turnbench.audit.models import Metric

    Metric(value=1.0, ci_low=None, ci_high=None)
    with pytest.raises(ValidationError):
        Metric.model_validate({"value": 1.0, "ci_low": 0.0, "ci_high": 2.0, "n": 3})
