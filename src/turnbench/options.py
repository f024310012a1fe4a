"""Every choice of an evaluation, in one validated model: what the API takes and the CLI fills.

The names are the CLI flags' names (`model_base_url` is `--model-base-url`), so a notebook
call and a command line read the same way. Defaults that depend on the benchmark (answer
temperatures, the answer token limit) are `None` here and resolved by the benchmark.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.dataclasses import dataclass

from turnbench.errors import UserError
from turnbench.types import MAX_TOKEN_LIMIT

Concurrency = int | Literal["auto"]
#: the stress arms `--perturb` names (turnbench.perturb)
PERTURB_KINDS = ("planted-error", "distractor", "injection")


class JudgeOption(BaseModel):
    """One `--judge` and the endpoint settings that follow it on the command line."""

    model_config = ConfigDict(frozen=True)

    spec: str
    base_urls: tuple[str, ...] = ()
    api_key_env: str | None = None


#: the token limit of a simulated user's turn when --user-max-tokens is not given
DEFAULT_USER_MAX_TOKENS = 512


@dataclasses.dataclass(frozen=True)
class RoleFields:
    """Where one role's flag family lands in `EvalOptions` (`cli.flags.role_flags` declares
    the flags, the session reads the values: one definition for both)."""

    role: str
    spec: str
    base_url: str
    api_key_env: str
    temperature: str
    max_tokens: str
    concurrency: str

    @classmethod
    def of(cls, role: str) -> RoleFields:
        return cls(
            role,
            f"{role}_model",
            f"{role}_base_url",
            f"{role}_api_key_env",
            f"{role}_temperature",
            f"{role}_max_tokens",
            f"{role}_concurrency",
        )


@dataclass(config=ConfigDict(extra="forbid"))
class EvalOptions:
    """The options of `turnbench run` / `turnbench judge` (and `evaluate` / `judge_answers`).

    (A pydantic dataclass: fields such as `model_extra` would clash with BaseModel's own
    attributes.)
    """

    benchmark: str = "mt-bench"
    # the model under test (run) or the answers to judge (judge)
    model: str | None = None
    model_base_url: list[str] = Field(default_factory=list)
    model_api_key_env: str | None = None
    answers: list[Path] | None = None  # one source per model, or folders of them
    mode: Literal["single", "pairwise", "pairwise-all"] = "single"
    baseline: str | None = None
    # judges
    judge: list[JudgeOption] = Field(default_factory=list)
    # the simulated user (a third role: a model that writes the user's turns)
    user_model: str | None = None
    user_base_url: list[str] = Field(default_factory=list)
    user_api_key_env: str | None = None
    user_temperature: float | None = Field(default=None, ge=0)  # None: the benchmark's (1)
    user_max_tokens: int = Field(default=DEFAULT_USER_MAX_TOKENS, ge=1, le=MAX_TOKEN_LIMIT)
    user_concurrency: Concurrency | None = None  # None: --concurrency
    strict_user: bool = False  # re-ask the user model when its turn breaks a rule
    # where
    out: Path | None = None
    data_dir: Path | None = None
    download: bool = True
    # what
    limit: int | None = Field(default=None, ge=1)
    #: the benchmark's own options (`-B key=value`), checked by the benchmark's options model
    benchmark_options: dict[str, Any] = Field(default_factory=dict)
    # answer requests
    system_prompt: str | None = None
    max_new_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKEN_LIMIT)
    temperature: float | None = Field(default=None, ge=0)
    model_extra: dict[str, Any] = Field(default_factory=dict)
    model_token_param: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    strip_think: bool = True  # remove <think> blocks from answers before judging
    # judge requests
    parser: Literal["strict", "compat"] = "strict"
    max_reasks: int | None = Field(default=None, ge=0)
    judge_max_tokens: int = Field(default=2048, ge=1, le=MAX_TOKEN_LIMIT)
    reask_max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKEN_LIMIT)
    judge_temperature: float | None = Field(default=None, ge=0)  # None: the benchmark's (0)
    judge_extra: dict[str, Any] = Field(default_factory=dict)
    judge_token_param: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    judge_scoring: Literal["parsed", "weighted"] = "parsed"
    # judge trust: repeats, panels, hardened prompts
    judge_repeats: int = Field(default=1, ge=1, le=100)
    repeat_aggregate: Literal["mean", "median"] = "mean"
    panel_aggregate: Literal["mean", "median", "majority"] = "mean"
    judge_guard: bool = False
    # execution
    concurrency: Concurrency = 8
    judge_concurrency: Concurrency | None = None
    request_timeout: float = Field(default=600.0, gt=0)
    max_attempts: int = Field(default=10, ge=1)
    retry_max_time: float = Field(default=900.0, ge=0)
    retry_initial_wait: float = Field(default=1.0, ge=0)
    max_requests: int | None = Field(default=None, ge=1)
    max_tokens_total: int | None = Field(default=None, ge=1)
    max_cost: float | None = Field(default=None, gt=0)
    prices: Path | None = None  # a price file extending / overriding the shipped table
    # provider batches (OpenAI Batch API, Anthropic Message Batches)
    judge_batch: bool = False
    model_batch: bool = False
    batch_poll_interval: float = Field(default=30.0, gt=0)
    allow_new_judge: bool = False
    demo: bool = False
    # stress arms (turnbench run, docs/stress.md): each kind once, beside the unperturbed run
    perturb: list[str] = Field(default_factory=list)
    planted_answers: Path | None = None
    perturb_seed: int = Field(default=0, ge=0)

    @field_validator("perturb")
    @classmethod
    def _perturbations(cls, value: list[str]) -> list[str]:
        unknown = [kind for kind in value if kind not in PERTURB_KINDS]
        if unknown:
            raise ValueError(f"unknown kind {unknown[0]!r} (use {', '.join(PERTURB_KINDS)})")
        return list(dict.fromkeys(value))

    @field_validator("concurrency", "judge_concurrency", "user_concurrency")
    @classmethod
    def _positive(cls, value: Concurrency | None) -> Concurrency | None:
        if isinstance(value, int) and value < 1:
            raise ValueError("must be at least 1 (or 'auto')")
        return value

    @field_validator("answers", mode="before")
    @classmethod
    def _answer_sources(cls, value: Any) -> Any:
        """`answers=` may name one source or several (`--answers` given more than once)."""
        if isinstance(value, str | Path):
            return [value]
        return value or None

    @field_validator("judge", mode="before")
    @classmethod
    def _judges(cls, value: Any) -> Any:
        """A judge may be given as a spec string, or a list of specs / JudgeOption."""
        if value is None:
            return []
        if isinstance(value, str | JudgeOption | dict):
            value = [value]
        return [{"spec": item} if isinstance(item, str) else item for item in value]

    def max_reasks_or_default(self) -> int:
        if self.max_reasks is not None:
            return self.max_reasks
        return 2 if self.parser == "strict" else 0


def build_options(**values: Any) -> EvalOptions:
    """EvalOptions from keyword arguments, with one clear message for a bad value."""
    from pydantic import ValidationError

    from turnbench.textio import describe_validation_error

    try:
        return EvalOptions(**values)
    except ValidationError as error:
        raise UserError(f"invalid options: {describe_validation_error(error)}") from None
    except TypeError as error:  # an unknown keyword
        raise UserError(f"invalid options: {error}") from None
