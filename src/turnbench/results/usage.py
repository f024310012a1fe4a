"""The run-wide blocks of results.json: timing, usage and dollars per role, provenance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from turnbench import SCHEMA_VERSION, __version__
from turnbench.journal.config import RunConfig
from turnbench.journal.logindex import (
    LogIndex,
    RoleProvenance,
    RoleTotals,
    index_records,
)
from turnbench.types import ConfigRecord, LogRecord


@dataclass
class Timing:
    started_at: float
    finished_at: float
    wall_seconds: float


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")


def timing(records: Sequence[LogRecord] | LogIndex, finished: float) -> Timing:
    """First start and last finish over every invocation, wall time summed: an invocation
    runs from its config record to its end record (the current one to `finished`); one
    killed before it wrote an end record counts to its last record, so its time counts too."""
    spans: list[list[float]] = []
    if isinstance(records, LogIndex):
        spans = [list(span) for span in records.spans]
    else:
        for record in records:
            if isinstance(record, ConfigRecord):
                spans.append([record.ts, record.ts])
            elif spans:
                spans[-1][1] = max(spans[-1][1], record.ts)
    if spans:
        spans[-1][1] = finished
    first = spans[0][0] if spans else finished
    return Timing(first, finished, round(sum(end - start for start, end in spans), 3))


def _usage(
    totals: RoleTotals, cost: float | None, as_of: str | None, unanswered: tuple[int, float | None]
) -> dict[str, Any]:
    usage, batch = totals.usage, totals.batch
    attempts, worst = unanswered
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "requests_logged": totals.requests_logged,
        "cached_prompt_tokens": usage.cached_prompt_tokens,
        "cache_creation_tokens": usage.cache_creation_tokens,
        "batch_prompt_tokens": batch.prompt_tokens,
        "batch_completion_tokens": batch.completion_tokens,
        "cost_usd": cost,
        "prices_as_of": as_of,
        "unanswered_attempts": attempts,
        "unanswered_cost_usd_worst_case": worst,
    }


def self_judging(config: RunConfig, provenance: Mapping[str, Any]) -> str | None:
    """A warning when the judge may have been the model under test: both roles reached one
    endpoint and the replies of both named the same model (a server that ignores the
    `model` field grades its own answers while results name another judge)."""
    from turnbench.backends.urls import same_endpoint

    model_urls = str(config.endpoints.get("model") or "").split(", ")
    judge_field = config.endpoints.get("judge")
    judge_urls = [
        url
        for item in (judge_field if isinstance(judge_field, list) else [judge_field])
        for url in str(item or "").split(", ")
    ]
    shared = [m for m in model_urls if m and any(same_endpoint(m, j) for j in judge_urls if j)]
    names = set(provenance.get("model_reported") or []) & set(
        provenance.get("judge_reported") or []
    )
    if not shared or not names:
        return None
    return (
        f"the judge ({config.judge}) and the model under test ({config.model}) reached the "
        f"same endpoint ({shared[0]}) and its replies named the same model "
        f"({', '.join(sorted(map(str, names)))}): the model may have judged its own answers. "
        "Check --judge-base-url and $OPENAI_BASE_URL (which moves every role without its own "
        "base URL)."
    )


def _role_cost(prices: Any, specs: Sequence[tuple[str, RoleTotals]]) -> float | None:
    """Dollars of a role's models (None when one that was used has no price)."""
    total = 0.0
    for spec, totals in specs:
        if not totals.requests_logged:
            continue
        cost = prices.role_cost(spec, totals.usage, totals.batch)
        if cost is None:
            return None
        total += cost
    return total


def role_usage(config: RunConfig, index: LogIndex, prices: Any = None) -> dict[str, Any]:
    """results.json's `usage`, by role: "model" (the model under test), "judge" (every judge
    together), "user" (the simulated user's model) and each role a driver names, by its
    name: tokens, dollars and the attempts that returned nothing."""
    if prices is None:
        from turnbench.prices import load_prices

        prices = load_prices()

    def block(names: Sequence[str], specs: Sequence[str]) -> dict[str, Any]:
        pairs = list(zip(names, specs, strict=True))
        spent = [(spec, index.role_usage(name)) for name, spec in pairs]
        attempts = [(spec, index.unanswered.get(name)) for name, spec in pairs]
        cost, unanswered = _role_cost(prices, spent), _unanswered(prices, attempts)
        return _usage(index.roles_usage(list(names)), cost, prices.as_of, unanswered)

    model = [config.model] if config.model else []
    judges = [judge.id for judge in config.judges]
    usage = {
        "model": block(["model"] if model else [], model),
        "judge": block(judges, [judge.spec for judge in config.judges]),
    }
    if config.user is not None:  # the simulated user's model
        usage["user"] = block(["user"], [config.user.spec])
    for name, spec in config.roles.items():
        usage[name] = block([name], [spec])
    return usage


def _unanswered(
    prices: Any, specs: Sequence[tuple[str, RoleTotals | None]]
) -> tuple[int, float | None]:
    """A role's attempts that returned nothing, and their worst case in dollars (None when
    a model that had some has no price)."""
    attempts, total = 0, 0.0
    priced = True
    for spec, totals in specs:
        if totals is None or not totals.requests_logged:
            continue
        attempts += totals.requests_logged
        worst = prices.bound(spec, totals.usage)
        priced = priced and worst is not None
        total += worst or 0.0
    return attempts, total if priced else None


def provenance(config: RunConfig, records: Sequence[LogRecord] | LogIndex) -> dict[str, Any]:
    index = records if isinstance(records, LogIndex) else index_records(list(records))
    answers: RoleProvenance = index.role_provenance("model")
    judgments = index.roles_provenance([judge.id for judge in config.judges])
    first = config.judges[0] if config.judges else None
    return {
        "turnbench_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "benchmark_ref": config.benchmark_ref,
        "mode": config.mode,
        "judging": config.judging,
        "parser": first.parser if first else None,
        "max_reasks": first.max_reasks if first else None,
        "prompt_versions": config.prompt_versions,
        "data_sha256": config.data_sha256,
        "reference_sha256": config.reference_sha256,
        "answers_sha256": config.answers_sha256,
        "options": config.options,
        "limit": config.limit,
        "demo": config.demo,
        "endpoints": config.endpoints,
        "strip_think": config.strip_think,
        "answer_sampling": config.answer_sampling.model_dump() if config.answer_sampling else None,
        "judge_sampling": first.sampling.model_dump() if first else None,
        "user": config.user.model_dump(mode="json") if config.user is not None else None,
        "judge_scoring": first.scoring if first else None,
        "judge_guard": any(judge.guard for judge in config.judges),
        "judge_repeats": config.judge_repeats,
        "repeat_aggregate": config.repeat_aggregate,
        "panel_aggregate": config.panel_aggregate,
        "answer_params_sent": answers.params.values(),
        "judge_params_sent": judgments.params.values(),
        "model_reported": answers.reported_model.values(),
        "model_system_fingerprints": answers.system_fingerprint.values(),
        "judge_reported": judgments.reported_model.values(),
        "judge_system_fingerprints": judgments.system_fingerprint.values(),
        "endpoint_requests": {
            "model": dict(answers.served),
            "judge": {
                judge.id: dict(index.role_provenance(judge.id).served) for judge in config.judges
            },
        },
    }
