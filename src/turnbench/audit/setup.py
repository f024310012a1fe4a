"""What an audit is set up from: its options, the configuration its log records, and the
prepared plan (kept apart from `run.py` so `results.py` reads them without importing the
runner)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from turnbench.audit.plan import AuditPlan
from turnbench.audit.thresholds import Threshold
from turnbench.benchmarks.base import Benchmark
from turnbench.judging.config import JudgeConfig
from turnbench.judging.judge import JudgeSettings
from turnbench.options import JudgeOption
from turnbench.types import MAX_TOKEN_LIMIT

AUDIT_KIND = "judge-audit"

DEFAULTS = {"questions": None, "repeats": 3, "judge_max_tokens": 2048, "max_reasks": None}
EMBEDDED_DEFAULTS = {"questions": 3, "repeats": 2, "judge_max_tokens": 48, "max_reasks": 0}
EMBEDDED_REASK_TOKENS = 16


class AuditOptions(BaseModel):
    """The options of `turnbench audit-judge` (None: the default, which for an embedded
    judge is smaller)."""

    model_config = ConfigDict(extra="forbid")

    judge: JudgeOption
    out: Path
    benchmark: str = "mt-bench"
    questions: int | None = Field(default=None, ge=2)
    repeats: int | None = Field(default=None, ge=2, le=20)
    parser: Literal["strict", "compat"] = "strict"
    max_reasks: int | None = Field(default=None, ge=0)
    judge_max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKEN_LIMIT)
    reask_max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKEN_LIMIT)
    judge_temperature: float = Field(default=0.0, ge=0)
    judge_extra: dict[str, Any] = Field(default_factory=dict)
    judge_token_param: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    concurrency: int | Literal["auto"] = 8
    request_timeout: float = Field(default=600.0, gt=0)
    max_attempts: int = Field(default=10, ge=1)
    retry_max_time: float = Field(default=900.0, ge=0)
    retry_initial_wait: float = Field(default=1.0, ge=0)
    data_dir: Path | None = None
    download: bool = True
    seed: int = 0
    resamples: int = Field(default=2000, ge=100)
    fail_if: list[str] = Field(default_factory=list)

    @property
    def embedded(self) -> bool:
        return self.judge.spec.startswith("local/")

    def resolved(self, name: str) -> Any:
        value = getattr(self, name)
        if value is not None:
            return value
        return (EMBEDDED_DEFAULTS if self.embedded else DEFAULTS)[name]


class AuditConfig(BaseModel):
    """An audit's configuration as its log records it."""

    kind: Literal["judge-audit"] = AUDIT_KIND
    benchmark: str
    judge: JudgeSettings
    probes: str
    prompt_versions: dict[str, str]
    # free to change between invocations:
    questions: list[str]
    repeats: int
    endpoints: dict[str, Any] = Field(default_factory=dict)
    concurrency: int | str = 8

    def identity(self) -> dict[str, Any]:
        return self.model_dump(
            mode="json", exclude={"questions", "repeats", "endpoints", "concurrency"}
        )


# -- preparation ----------------------------------------------------------------------------
@dataclass
class PreparedAudit:
    options: AuditOptions
    benchmark: Benchmark
    plan: AuditPlan
    judge: JudgeConfig
    config: AuditConfig
    thresholds: list[Threshold] = field(default_factory=list)

    @property
    def settings(self) -> JudgeSettings:
        return self.judge.settings
