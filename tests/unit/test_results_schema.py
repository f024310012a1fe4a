"""The published results schema is current, and it rejects what results must never hold."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from turnbench.interop.schema import render

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "results.schema.json"


def test_the_published_schema_is_generated_from_the_code():
    assert SCHEMA_FILE.read_text("utf-8") == render(), (
        "docs/results.schema.json is stale: run "
        "`python -m turnbench.interop.schema --write docs/results.schema.json`"
    )


def minimal_run() -> dict:
    info = {
        "schema_version": 2,
        "benchmark": "mt-bench",
        "judge": "openai/j",
        "judges": ["openai/j"],
        "complete": True,
        "usage": {
            role: {"prompt_tokens": 1, "completion_tokens": 1, "requests_logged": 1}
            for role in ("model", "judge")
        },
        "request_failures": [],
        "provenance": {
            "turnbench_version": "0",
            "schema_version": 2,
            "mode": "run",
            "judging": "single",
            "parser": "strict",
            "max_reasks": 2,
            "prompt_versions": {},
            "data_sha256": {},
            "reference_sha256": None,
            "answers_sha256": {},
            "options": {},
            "limit": None,
            "demo": False,
            "endpoints": {},
            "answer_sampling": None,
            "judge_sampling": {},
            "answer_params_sent": [],
            "judge_params_sent": [],
            "model_reported": [],
            "model_system_fingerprints": [],
            "judge_reported": [],
            "judge_system_fingerprints": [],
        },
        "started_at": "2026-12-01T00:00:00+00:00",
        "finished_at": "2026-12-01T00:01:00+00:00",
        "wall_seconds": 60.0,
    }
    model = {
        "model": "openai/m",
        "overall": 5.0,
        "overall_ci95": None,
        "counts": {
            "expected": 1,
            "judged": 1,
            "failed": 0,
            "pending": 0,
            "reasks": 0,
            "answers": 1,
        },
        "parse_failures": [],
        "by_turn": {"1": 5.0},
        "by_turn_ci95": {"1": None},
        "by_category": {"writing": 5.0},
        "by_category_ci95": {"writing": None},
        "by_category_turn": {"writing": {"1": 5.0}},
    }
    return {**info, **model}


@pytest.fixture(scope="module")
def validator():
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text("utf-8")))


def test_a_run_result_is_accepted(validator):
    assert list(validator.iter_errors(minimal_run())) == []


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda r: r.pop("by_category"), "a built-in benchmark's table is missing"),
        (lambda r: r.__setitem__("overall", "high"), "a score that is not a number"),
        (lambda r: r["counts"].pop("pending"), "a count is missing"),
        (lambda r: r.pop("started_at"), "no start time"),
        (lambda r: r["by_category"].__setitem__("writing", [1]), "a table of the wrong shape"),
    ],
)
def test_a_broken_result_is_rejected(validator, change, why):
    broken = copy.deepcopy(minimal_run())
    change(broken)
    assert list(validator.iter_errors(broken)), why


def test_a_benchmark_written_elsewhere_may_add_its_own_tables(validator):
    other = minimal_run()
    for name in ("by_turn", "by_turn_ci95", "by_category", "by_category_ci95", "by_category_turn"):
        other.pop(name)
    other["benchmark"] = "my-bench"
    other["by_skill"] = {"tone": 7.0}
    assert list(validator.iter_errors(other)) == []
