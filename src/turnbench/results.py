"""results.json, rebuilt from the run log every time (never updated in place)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from turnbench import SCHEMA_VERSION, __version__
from turnbench.benchmarks.base import Benchmark
from turnbench.config import RunConfig
from turnbench.runlog import open_failures
from turnbench.types import AnswerRecord, JudgmentRecord, LogRecord, Usage

RESULTS_NAME = "results.json"


def _distinct(values: list[Any]) -> list[Any]:
    seen: dict[str, Any] = {}
    for value in values:
        if value is not None:
            seen.setdefault(json.dumps(value, sort_keys=True), value)
    return list(seen.values())


def _usage(records: list[AnswerRecord] | list[JudgmentRecord]) -> dict[str, int]:
    total = Usage()
    for record in records:
        total = total + record.usage
    return {
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "requests_logged": len(records),
    }


def provenance(config: RunConfig, records: list[LogRecord]) -> dict[str, Any]:
    answers = [r for r in records if isinstance(r, AnswerRecord) and r.origin == "generated"]
    judgments = [r for r in records if isinstance(r, JudgmentRecord) and r.judge == config.judge]
    return {
        "turnbench_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "mode": config.mode,
        "judging": config.judging,
        "parser": config.parser,
        "max_reasks": config.max_reasks,
        "prompt_versions": config.prompt_versions,
        "data_sha256": config.data_sha256,
        "reference_sha256": config.reference_sha256,
        "answers_sha256": config.answers_sha256,
        "options": config.options,
        "limit": config.limit,
        "demo": config.demo,
        "endpoints": config.endpoints,
        "answer_sampling": config.answer_sampling.model_dump() if config.answer_sampling else None,
        "judge_sampling": config.judge_sampling.model_dump(),
        "answer_params_sent": _distinct([r.params for r in answers]),
        "judge_params_sent": _distinct([r.params for r in judgments]),
        "model_reported": _distinct([r.reported_model for r in answers]),
        "model_system_fingerprints": _distinct([r.system_fingerprint for r in answers]),
        "judge_reported": _distinct([r.reported_model for r in judgments]),
        "judge_system_fingerprints": _distinct([r.system_fingerprint for r in judgments]),
    }


def build_results(
    benchmark: Benchmark, config: RunConfig, records: list[LogRecord]
) -> dict[str, Any]:
    outstanding = open_failures(records)
    answers = [r for r in records if isinstance(r, AnswerRecord) and r.origin == "generated"]
    judgments = [r for r in records if isinstance(r, JudgmentRecord) and r.judge == config.judge]
    common = {
        "schema_version": SCHEMA_VERSION,
        "benchmark": config.benchmark,
        "judge": config.judge,
        "usage": {"model": _usage(answers), "judge": _usage(judgments)},
        "request_failures": [
            {"key": f.key, "stage": f.stage, "error": f.error, "attempts": f.attempts}
            for f in outstanding.values()
        ],
        "provenance": provenance(config, records),
    }
    if config.mode == "run":
        assert config.model is not None
        results = benchmark.model_results(records, config, config.model)
        results.update(common)
        return results
    if config.judging != "single":
        from turnbench.benchmarks.mt_bench_pairwise import pairwise_results

        return {**common, **pairwise_results(benchmark, config, records)}
    models = {name: benchmark.model_results(records, config, name) for name in config.models}
    results: dict[str, Any] = {}
    if len(models) == 1:
        # One model: its object also stands at the top level, shaped like a `run` result,
        # so either reading of "the same object" finds it; `models` stays authoritative.
        results.update(next(iter(models.values())))
    results.update(
        {
            **common,
            "complete": all(m["complete"] for m in models.values()),
            "models": models,
        }
    )
    if len(config.models) >= 2:
        results["ranking"] = single_grading_ranking(benchmark, config, records)
    return results


def single_grading_ranking(
    benchmark: Benchmark, config: RunConfig, records: list[LogRecord]
) -> dict[str, Any]:
    """Bradley-Terry ratings of several single-graded models from per-turn score comparisons."""
    from turnbench.ratings import bradley_terry, score_battles

    planned = benchmark.planned_keys(config.mode, config.models)["judgments"]
    latest: dict[str, JudgmentRecord] = {}
    for record in records:
        if isinstance(record, JudgmentRecord) and record.key in planned:
            latest[record.key] = record
    scores = {
        (r.model, r.sample_id, r.turn): r.score
        for r in latest.values()
        if r.judge == config.judge and r.status == "scored" and r.score is not None
    }
    return bradley_terry(score_battles(scores, config.models), models=config.models)


def write_results(directory: Path, results: dict[str, Any]) -> Path:
    target = directory / RESULTS_NAME
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".results-")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(results, out, indent=2, ensure_ascii=False, allow_nan=False)
        out.write("\n")
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    return target
