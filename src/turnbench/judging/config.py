"""The judges of a command, from their flags to their roles.

A judge is given on the command line (or in the API) as a `JudgeOption` (its spec and
endpoints) and the judge flags every judge of the command shares (`JudgeChoices`).
`build_judges` turns them, once, into a `JudgeConfig` per judge: a role
(`backends.roles.RoleConfig`) named by its spec, whose settings identify its judgments
(`JudgeSettings`, recorded in the run's configuration). `run`, `judge` and `audit-judge`
all build their judges here; nothing re-joins them by position later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from turnbench.backends.options import BackendOptions
from turnbench.backends.providers import parse_model_spec
from turnbench.backends.retry import RetryPolicy
from turnbench.backends.roles import RoleConfig
from turnbench.errors import UserError
from turnbench.judging.judge import JudgeSettings
from turnbench.options import Concurrency, JudgeOption
from turnbench.types import SamplingConfig


@dataclass(frozen=True)
class JudgeChoices:
    """What a command's flags choose for every judge it runs."""

    max_tokens: int
    max_reasks: int
    policy: RetryPolicy
    temperature: float | None = None  # None: not sent
    reask_max_tokens: int | None = None
    extra: dict[str, Any] | None = None
    token_param: str = "auto"
    parser: Literal["strict", "compat"] = "strict"
    scoring: Literal["parsed", "weighted"] = "parsed"
    guard: bool = False
    concurrency: Concurrency = 8


@dataclass(frozen=True)
class JudgeConfig(RoleConfig):
    """One judge as a role: named by its spec, its `settings` what identifies its
    judgments (`JudgeSettings`, recorded in the run's configuration)."""

    settings: JudgeSettings = None  # type: ignore[assignment]

    @property
    def id(self) -> str:
        return self.settings.id


def build_judges(given: Sequence[JudgeOption], choices: JudgeChoices) -> list[JudgeConfig]:
    """Every judge of a command, each spec parsed once; the same judge twice is refused."""
    if not given:
        raise UserError("--judge is required")
    sampling = SamplingConfig(
        temperature=choices.temperature,
        max_tokens=choices.max_tokens,
        extra=dict(choices.extra or {}),
        token_param=choices.token_param,
        reask_max_tokens=choices.reask_max_tokens,
    )
    judges = []
    for judge in given:
        spec = parse_model_spec(judge.spec, "--judge")
        settings = JudgeSettings(
            spec=str(spec),
            sampling=sampling,
            parser=choices.parser,
            max_reasks=choices.max_reasks,
            scoring=choices.scoring,
            guard=choices.guard,
        )
        backend = BackendOptions(
            role="judge",
            base_urls=judge.base_urls,
            api_key_env=judge.api_key_env,
            concurrency=choices.concurrency,
            token_param=choices.token_param,
            policy=choices.policy,
        )
        judges.append(
            JudgeConfig(
                name=settings.id,
                model_spec=spec,
                backend=backend,
                sampling=sampling,
                settings=settings,
            )
        )
    specs = [judge.spec for judge in judges]
    if len(set(specs)) != len(specs):
        raise UserError(f"the same --judge is given twice ({', '.join(specs)})")
    return judges
