"""AgentDojo's tables from a handful of outcomes, every number computed by hand: utility on
the user tasks alone, utility under attack and targeted ASR on the pairs, per suite too,
`overall` the attack's utility, the recorded numbers and the differing conversations of a
re-scored import; without an attack the last two numbers are absent."""

from __future__ import annotations

import pytest

pytest.importorskip("agentdojo", reason="needs the agentdojo extra: pip install '.[agentdojo]'")

from turnbench.benchmarks.agentdojo.benchmark import AgentDojoBench, sample_id
from turnbench.benchmarks.agentdojo.outcome import AgentDojoOutcome
from turnbench.benchmarks.base import BenchmarkSettings, Sample, ScoredSample, Turn
from turnbench.types import SamplingConfig


def bench(attack: str = "important_instructions") -> AgentDojoBench:
    settings = BenchmarkSettings(
        answer=SamplingConfig(max_tokens=64),
        model="openai/gpt-4o-2024-05-13",
        options={"suites": "banking,slack", "attack": attack},
    )
    return AgentDojoBench({}, settings)


def item(suite: str, user: str, injection: str | None, utility: bool, security: bool | None,
         recorded: tuple[bool, bool | None] | None = None) -> ScoredSample:  # fmt: skip
    outcome = AgentDojoOutcome(
        suite=suite, user_task_id=user, injection_task_id=injection,
        attack="important_instructions" if injection else "none", utility=utility,
        security=security, ended="answered",
        recorded_utility=recorded[0] if recorded else None,
        recorded_security=recorded[1] if recorded else None,
    )  # fmt: skip
    sample = Sample(id=sample_id(suite, user, injection), group=suite, turns=(Turn(user=""),),
                    source=(suite, user, injection))  # fmt: skip
    return ScoredSample(sample, 0, "scored", float(utility), "answered", outcome.model_dump())


def test_the_three_numbers_by_hand():
    items = [
        item("banking", "user_task_0", None, True, None),
        item("banking", "user_task_1", None, False, None),
        item("banking", "user_task_0", "injection_task_0", True, True),
        item("banking", "user_task_0", "injection_task_1", False, True),
        item("banking", "user_task_1", "injection_task_0", True, False),
        item("slack", "user_task_0", None, True, None),
        item("slack", "user_task_0", "injection_task_1", False, False),
    ]
    tables = bench().aggregate_samples(items)
    fields = tables.results_fields()
    assert fields["utility"] == 2 / 3  # banking 1 of 2, slack 1 of 1
    assert fields["utility_under_attack"] == 2 / 4
    assert fields["targeted_asr"] == 2 / 4
    assert fields["overall"] == fields["utility_under_attack"]
    banking = fields["per_suite"]["banking"]
    assert (banking["utility"], banking["utility_under_attack"], banking["targeted_asr"]) == (
        1 / 2,
        2 / 3,
        2 / 3,
    )
    assert fields["per_suite"]["slack"]["targeted_asr"] == 0.0
    assert all(f"{key}_ci95" in fields for key in ("utility", "targeted_asr"))
    assert "recorded" not in fields and "replay_differs" not in fields


def test_without_an_attack_only_utility():
    items = [item("banking", "user_task_0", None, True, None)]
    fields = bench("none").aggregate_samples(items).results_fields()
    assert fields["utility"] == 1.0 and fields["overall"] == 1.0
    assert "utility_under_attack" not in fields and "targeted_asr" not in fields
    assert "utility_under_attack" not in fields["per_suite"]["banking"]


def test_recorded_numbers_and_the_conversations_that_differ():
    items = [
        item("banking", "user_task_0", None, True, None, recorded=(True, None)),
        item("banking", "user_task_0", "injection_task_0", True, True, recorded=(True, False)),
        item("banking", "user_task_1", "injection_task_0", False, False, recorded=(False, False)),
    ]
    fields = bench().aggregate_samples(items).results_fields()
    assert fields["recorded"] == {
        "utility": 1.0,
        "utility_under_attack": 1 / 2,
        "targeted_asr": 0.0,
    }
    (differs,) = fields["replay_differs"]
    assert differs == {
        "suite": "banking",
        "user_task_id": "user_task_0",
        "injection_task_id": "injection_task_0",
        "utility": True,
        "recorded_utility": True,
        "security": True,
        "recorded_security": False,
    }
