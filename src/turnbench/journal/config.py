"""The validated configuration of a run, and the rules for resuming a run directory.

What goes into `identity()` decides what must not change between invocations on the same
directory: anything that would make old answers or judgments invalid (model, judges'
sampling and parser, prompts, data). Concurrency, limits, endpoints and budgets may change
freely; a different judge spec is a new judge (`--allow-new-judge` keeps the old one's
judgments beside it).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from turnbench.backends.roles import UserSettings
from turnbench.errors import ConfigDriftError, RunDirectoryError, UserError
from turnbench.judging.judge import JudgeSettings
from turnbench.types import SamplingConfig

__all__ = ["RunConfig", "SamplingConfig", "check_resume", "describe_differences", "load_config"]

#: Layout of the log's records and keys; 1 = `|`-joined keys and no `judges` list.
LOG_SCHEMA_VERSION = 2


class RunConfig(BaseModel):
    benchmark: str  # the benchmark's name
    benchmark_ref: str | None = None  # what --benchmark named, when not a built-in name
    mode: Literal["run", "judge"]
    judging: Literal["single", "pairwise", "pairwise-all"] = "single"
    model: str | None = None  # spec of the model under test (run mode)
    models: list[str] = Field(default_factory=list)  # model names judged (judge mode)
    #: empty for a benchmark scored without a judge (`Benchmark.needs_judge`)
    judges: list[JudgeSettings] = Field(default_factory=list)
    answer_sampling: SamplingConfig | None = None
    user: UserSettings | None = None  # the simulated user, when a user model plays it
    #: the roles a driver names beside the model, the judges and the user (an attacker, a
    #: grader), each with the spec of the model that plays it
    roles: dict[str, str] = Field(default_factory=dict)
    strip_think: bool = True  # <think> blocks removed from answers before judging
    options: dict[str, Any] = Field(default_factory=dict)  # benchmark-specific settings
    prompt_versions: dict[str, str] = Field(default_factory=dict)
    data_sha256: dict[str, str] = Field(default_factory=dict)
    reference_sha256: str | None = None
    answers_sha256: dict[str, str] = Field(default_factory=dict)
    # free to change between invocations:
    limit: int | None = None
    demo: bool = False
    endpoints: dict[str, Any] = Field(default_factory=dict)
    concurrency: int | str = 8
    # how judgments combine into scores: results are rebuilt from the log with these, so
    # they may change too (raising --judge-repeats only adds the missing repeats)
    judge_repeats: int = Field(default=1, ge=1)
    repeat_aggregate: Literal["mean", "median"] = "mean"
    panel_aggregate: Literal["mean", "median", "majority"] = "mean"
    #: stress arms (`--perturb`): kind -> its settings. An arm may be added or left out on a
    #: resume (its records are its own); one kept must keep its settings (`check_resume`)
    perturb: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @property
    def judge(self) -> str:
        """The judge's spec; a panel's specs joined with " + "."""
        return " + ".join(judge.spec for judge in self.judges)

    @property
    def parser(self) -> str:
        return self.judges[0].parser if self.judges else "strict"

    def identity(self) -> dict[str, Any]:
        identity = self.model_dump(
            mode="json",
            exclude={
                "limit",
                "demo",
                "endpoints",
                "concurrency",
                "judges",
                "models",
                "answers_sha256",
                "judge_repeats",
                "repeat_aggregate",
                "panel_aggregate",
                "perturb",
            },
        )
        if self.user is None:  # (runs without a user model: identities as they always were)
            identity.pop("user", None)
        if not self.roles:  # (nor do runs without a driver's own roles change theirs)
            identity.pop("roles", None)
        settings = [judge.model_dump(mode="json", exclude={"spec"}) for judge in self.judges]
        if len(settings) == 1:  # named as the flags name them: parser, judge_sampling, ...
            identity.update(
                {("judge_sampling" if k == "sampling" else k): v for k, v in settings[0].items()}
            )
        else:
            identity["judges"] = settings
        return identity


def migrate(raw: dict[str, Any], schema_version: int) -> dict[str, Any]:
    """A configuration written by an older turnbench, in today's shape."""
    if schema_version >= 2 or "judges" in raw:
        return raw
    value = dict(raw)
    if "judge" in value:
        judge = {
            "spec": value.pop("judge"),
            "sampling": value.pop("judge_sampling", None),
            "parser": value.pop("parser", "strict"),
            "max_reasks": value.pop("max_reasks", 2),
        }
        value["judges"] = [{k: v for k, v in judge.items() if v is not None}]
    return value


def load_config(raw: dict[str, Any], schema_version: int, source: str = "") -> RunConfig:
    """The configuration a log records; a log too new or unreadable is refused clearly
    (`source` names the log in the message)."""
    if schema_version > LOG_SCHEMA_VERSION:
        raise UserError(
            f"{source or 'this run directory'}: written by a newer turnbench (log schema version "
            f"{schema_version}; this one reads up to {LOG_SCHEMA_VERSION}); upgrade turnbench"
        )
    try:
        return RunConfig.model_validate(migrate(raw, schema_version))
    except ValidationError as error:  # the run's identity is unknown: do not resume
        fields = ", ".join(
            "".join(c for c in ".".join(map(str, e["loc"])) if c.isprintable())[:60]
            for e in error.errors()[:5]
        )
        problem = f"invalid: {fields}"
    where = f"{source}: " if source else ""
    raise RunDirectoryError(
        f"{where}the run's config record cannot be read ({problem}; log schema version "
        f"{schema_version}); the settings this run was made with are unknown, so it is not "
        "resumed. Repair that record or start a new run in another directory."
    )


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat or {prefix: {}}
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        flat = {}
        for index, inner in enumerate(value):
            flat.update(_flatten(inner, f"{prefix}[{index}]"))
        return flat
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
    for kind in sorted(set(previous.perturb) & set(current.perturb)):
        changed = describe_differences(previous.perturb[kind], current.perturb[kind])
        lines += [f"  --perturb {kind}: {line.strip()}" for line in changed]
    new_judge = previous.judge != current.judge
    if new_judge and not allow_new_judge:
        lines.insert(0, f"  judge: {previous.judge} -> {current.judge}")
    if lines:
        hint = (
            "Add --allow-new-judge to judge the same answers again with the new judge, "
            "keeping the old judgments in the log."
            if new_judge and len(lines) == 1 and not allow_new_judge
            else "Use a new --out directory, or run again with the old settings."
        )
        raise ConfigDriftError(
            "this run directory was started with different settings, and resuming would mix "
            "incompatible records:\n" + "\n".join(lines) + "\n" + hint
        )
