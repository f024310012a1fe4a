"""results.json: rebuilt from the run log every time (never updated in place).

`build_results` assembles the file from its parts: the run-wide blocks (`usage`), one
model's results under single grading (`single`), pairwise results (`pairwise`), the stress
arms (`stress`); `shapes` holds the typed shapes it is validated against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from turnbench import SCHEMA_VERSION
from turnbench.engine.work import Work
from turnbench.journal.config import RunConfig
from turnbench.journal.logindex import (
    LogIndex,
)
from turnbench.results.logview import LogView
from turnbench.results.pairwise import pairwise_results
from turnbench.results.samples import sample_results
from turnbench.results.shapes import RESULTS_ADAPTER as RESULTS_ADAPTER
from turnbench.results.shapes import PairwiseResults, ResultsModel, typed_shapes
from turnbench.results.shapes import ResultsFile as ResultsFile
from turnbench.results.shapes import results_schema as results_schema
from turnbench.results.single import model_results, panel_items
from turnbench.results.stress import perturbations
from turnbench.results.usage import Timing, iso, provenance, role_usage, self_judging
from turnbench.results.usage import timing as timing
from turnbench.trust import blocks as trust
from turnbench.trust.length import fit_length_effect
from turnbench.types import LogRecord


def single_grading_ranking(work: Work, config: RunConfig, view: LogView) -> dict[str, Any]:
    """Bradley-Terry ratings of several single-graded models from per-turn score comparisons."""
    from turnbench.stats.ratings import bradley_terry, score_battles

    scores: dict[tuple[str, Any, int], float] = {}
    for model in work.models:
        for item in panel_items(work, config, view, model).combined:
            if item.status == "scored" and item.score is not None and item.criterion is None:
                scores[(model, item.sample.id, item.turn)] = item.score
    return bradley_terry(score_battles(scores, work.models), models=work.models)


def build_results(
    work: Work,
    config: RunConfig,
    records: Sequence[LogRecord] | LogIndex,
    *,
    when: Timing,
    stopped: str | None = None,
    notes: Mapping[str, Any] | None = None,
    prices: Any = None,
    log_path: Path | None = None,
    warnings: Sequence[str] = (),
) -> ResultsModel:
    """The results object of a run, validated against its typed shape. `records`: the log's
    index (what a run holds) or its records; `prices`: a PriceTable (default: the shipped
    table) for the dollars under `usage`; `log_path`: the log, for answer texts the index
    does not keep; `warnings`: what the invocation warned the user of (a replica set aside,
    no logprobs for weighted scoring...), kept under `warnings` beside those the log itself
    gives, so the file says everything the terminal said."""
    view = LogView(records, log_path)
    index = view.index
    origin = provenance(config, index)
    warning = self_judging(config, origin)
    common: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "benchmark": config.benchmark,
        "judge": config.judge,
        "judges": [judge.spec for judge in config.judges],
        "usage": role_usage(config, index, prices),
        "request_failures": [
            {"key": f.key, "stage": f.stage, "error": f.error, "attempts": f.attempts}
            for f in index.failures.values()
        ],
        "invalid_records": view.invalid,
        "provenance": origin,
        "warnings": list(dict.fromkeys([*([warning] if warning else []), *warnings])),
        "started_at": iso(when.started_at),
        "finished_at": iso(when.finished_at),
        "wall_seconds": when.wall_seconds,
        "stopped": stopped,
        "batches": [
            {
                "batch_id": b.batch_id,
                "provider": str(b.intent.get("provider")),
                "role": b.role,
                "stage": b.stage,
                "items": len(b.intent.get("custom_ids") or {}),
                "state": b.state,
                "counts": b.counts,
            }
            for b in index.submissions.values()
        ],
        **(notes or {}),
    }
    results: dict[str, Any]
    if work.pairwise:
        results = {**common, **pairwise_results(work, config, view)}
    elif config.mode == "run" and work.plan.scored:  # a driver that scores whole samples
        assert config.model is not None
        results = {**sample_results(work, config, view, config.model), **common}
    elif config.mode == "run":
        assert config.model is not None
        panels = {config.model: panel_items(work, config, view, config.model)}
        single = model_results(work, config, view, config.model, panels[config.model])
        _add_length(work, view, panels, {config.model: single})
        if work.arms:  # --perturb: each stress arm against the unperturbed run
            model = config.model
            arm_items = {
                arm.kind: panel_items(work, config, view, model, arm.kind).combined
                for arm in work.arms
            }
            single["perturbations"] = perturbations(
                work,
                panels[model].combined,
                arm_items,
                lambda sample_id, turn, arm: view.answer(model, sample_id, turn, arm=arm),
            )
        results = {**single, **common}
    else:
        panels = {name: panel_items(work, config, view, name) for name in work.models}
        models = {
            name: model_results(work, config, view, name, panels[name]) for name in work.models
        }
        control = _add_length(work, view, panels, models)
        if len(models) >= 2:
            common["length_control"] = control
        results = {}
        if len(models) == 1:
            # One model: its object also stands at the top level, shaped like a `run` result,
            # so either reading of "the same object" finds it; `models` stays authoritative.
            results.update(next(iter(models.values())))
        results.update(
            {**common, "complete": all(m["complete"] for m in models.values()), "models": models}
        )
        if len(models) >= 2:
            results["ranking"] = single_grading_ranking(work, config, view)
    typed = typed_shapes(type(work.benchmark))
    shape: type[ResultsModel] = (
        PairwiseResults if work.pairwise else typed.single if config.mode == "run" else typed.judged
    )
    return shape.model_validate(results)


def _add_length(
    work: Work,
    view: LogView,
    panels: Mapping[str, trust.PanelItems],
    models: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """Add each model's `length` block (one length fit pooled over the run's models); returns
    the run's `length_control` summary."""
    rows = {
        name: trust.length_rows(name, panels[name].combined, view.answer_length_lookup(name))
        for name in models
    }
    fit = fit_length_effect([row for found in rows.values() for row in found])
    for name, results in models.items():
        results["length"] = trust.length_scores(
            work.benchmark, panels[name].combined, rows[name], fit, results.get("overall")
        )
    return {
        "method": fit.method,
        "slope_per_doubling": fit.slope_per_doubling,
        "items": fit.items,
        "models": {n: r["length"]["length_controlled_overall"] for n, r in models.items()},
    }
