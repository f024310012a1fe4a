"""The validated configuration of a run, and the rules for resuming a run directory.

What goes into `identity()` decides what must not change between invocations on the same
directory: anything that would make old answers or judgments invalid (model, judge, prompts,
parser, sampling, data). Concurrency, limits, endpoints and budgets may change freely.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from turnbench.errors import ConfigDriftError


class SamplingConfig(BaseModel):
    """Requested sampling; `temperature=None` on answers means the benchmark's own table."""

    temperature: float | None = None
    max_tokens: int
    system_prompt: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    token_param: str = "auto"
    reask_max_tokens: int | None = None  # judge re-asks only; None = max_tokens


class RunConfig(BaseModel):
    benchmark: str
    mode: Literal["run", "judge"]
    judging: Literal["single", "pairwise", "pairwise-all"] = "single"
    model: str | None = None  # spec of the model under test (run mode)
    models: list[str] = Field(default_factory=list)  # model names judged (judge mode)
    judge: str
    parser: Literal["strict", "compat"] = "strict"
    max_reasks: int = 2
    answer_sampling: SamplingConfig | None = None
    judge_sampling: SamplingConfig
    options: dict[str, Any] = Field(default_factory=dict)  # benchmark-specific settings
    prompt_versions: dict[str, str] = Field(default_factory=dict)
    data_sha256: dict[str, str] = Field(default_factory=dict)
    reference_sha256: str | None = None
    answers_sha256: dict[str, str] = Field(default_factory=dict)
    # free to change between invocations:
    limit: int | None = None
    demo: bool = False
    endpoints: dict[str, str | None] = Field(default_factory=dict)
    concurrency: int | str = 8  # or "auto"

    def identity(self) -> dict[str, Any]:
        return self.model_dump(
            exclude={
                "limit",
                "demo",
                "endpoints",
                "concurrency",
                "judge",
                "models",
                "answers_sha256",
            }
        )


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat or {prefix: {}}
    return {prefix: value}


def describe_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    flat_old, flat_new = _flatten(old), _flatten(new)
    lines = []
    for key in sorted(set(flat_old) | set(flat_new)):
        before, after = flat_old.get(key, "(unset)"), flat_new.get(key, "(unset)")
        if before != after:
            lines.append(f"  {key}: {json.dumps(before)[:120]} -> {json.dumps(after)[:120]}")
    return lines


def check_resume(previous: RunConfig, current: RunConfig, *, allow_new_judge: bool) -> None:
    """Refuse to resume with settings that would mix incompatible records."""
    lines = describe_differences(previous.identity(), current.identity())
    for name in sorted(set(previous.answers_sha256) & set(current.answers_sha256)):
        if previous.answers_sha256[name] != current.answers_sha256[name]:
            lines.append(f"  answers of {name}: the answer file changed since the last run")
    if previous.judge != current.judge and not allow_new_judge:
        lines.insert(0, f"  judge: {previous.judge} -> {current.judge}")
    if lines:
        hint = (
            "Use a new --out directory, or run again with the old settings."
            if not (previous.judge != current.judge and len(lines) == 1)
            else "Add --allow-new-judge to judge the same answers again with the new judge, "
            "keeping the old judgments in the log."
        )
        raise ConfigDriftError(
            "this run directory was started with different settings, and resuming would mix "
            "incompatible records:\n" + "\n".join(lines) + "\n" + hint
        )
