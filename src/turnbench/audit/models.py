"""The typed shape of `audit.json` (docs/audit.schema.json is generated from it).

The metric keys and their `{"value", "ci_low", "ci_high"}` objects are an interface other
tools check: every metric object allows exactly those three keys.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter


class Metric(BaseModel):
    """A mean over probe questions (or pairs) with its 95% bootstrap interval; null when not
    measured (no interval with fewer than two questions)."""

    model_config = ConfigDict(extra="forbid")

    value: float | None
    ci_low: float | None
    ci_high: float | None


class GuardPair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    without_guard: Metric
    with_guard: Metric


class AuditCounts(BaseModel):
    expected: int
    judged: int
    failed: int
    pending: int
    reasks: int


class AuditFile(BaseModel):
    """`turnbench audit-judge`'s result (see docs/judge-trust.md for every definition)."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["judge-audit"]
    schema_version: int
    turnbench_version: str
    judge: str
    benchmark: str
    probes: dict[str, Any]
    complete: bool
    stopped: str | None
    position_consistency: Metric
    first_position_preference: Metric
    verbosity_delta: Metric
    stability: Metric
    manipulation: dict[
        Literal["judge_instructions", "fake_rating", "fake_end_marker", "constant_answer"],
        GuardPair,
    ]
    scale_sanity: Metric
    sizes: dict[str, Any]
    counts: AuditCounts
    judge_settings: dict[str, Any]
    prompt_versions: dict[str, str]
    started_at: str
    finished_at: str
    wall_seconds: float
    questions: list[dict[str, Any]]
    thresholds: list[dict[str, Any]] | None = None
    notes: list[str]


AUDIT_ADAPTER: TypeAdapter[AuditFile] = TypeAdapter(AuditFile)


def audit_schema() -> dict[str, Any]:
    schema = AUDIT_ADAPTER.json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "turnbench audit.json"
    schema["description"] = (
        "Written by `turnbench audit-judge`. Generated from turnbench.audit.models "
        "(python -m turnbench.interop.schema --audit)."
    )
    return schema
