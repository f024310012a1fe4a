"""One model's results when its driver scores whole samples: each planned (sample, trial)
as its `SampleRecord` left it, scored by the benchmark's `aggregate_samples`."""

from __future__ import annotations

from typing import Any

from turnbench.benchmarks.base import ScoredSample
from turnbench.engine.work import Work
from turnbench.journal.config import RunConfig
from turnbench.journal.logindex import SampleDone
from turnbench.record_keys import sample_key
from turnbench.results.logview import LogView
from turnbench.results.single import simulated, simulator_counts


def scored_samples(work: Work, view: LogView, model: str) -> list[ScoredSample]:
    """Every planned (sample, trial) of `model`, in plan order, as the log has it."""
    items = []
    for sample, trial in work.plan.scored:
        done = view.done.get(sample_key(model, sample.id, trial))
        if isinstance(done, SampleDone):
            items.append(ScoredSample(sample, trial, "scored", done.score, done.ended, done.detail))
        else:
            items.append(ScoredSample(sample, trial, "pending"))
    return items


def sample_results(work: Work, config: RunConfig, view: LogView, model: str) -> dict[str, Any]:
    """The results object of `model` (the keys every model's results have)."""
    benchmark = work.benchmark
    items = scored_samples(work, view, model)
    tables = benchmark.aggregate_samples(items)
    scored = sum(item.status == "scored" for item in items)
    pending = len(items) - scored
    results: dict[str, Any] = {
        "benchmark": benchmark.name,
        "model": model,
        "judge": config.judge,
        "complete": pending == 0,
        **benchmark.results_header(),
    }
    results.update(tables.results_fields())
    results["counts"] = {
        "expected": len(items),
        "judged": scored,
        "failed": 0,
        "pending": pending,
        "reasks": 0,
        "answers": len(view.answered(model)),
        **tables.counts,
    }
    results["parse_failures"] = []
    if simulated(view, model):
        results["simulator"] = simulator_counts(work, view, model)
    return results
