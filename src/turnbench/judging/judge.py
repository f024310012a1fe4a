"""A judge is an object: who judges (spec and backend), how (sampling, parser, re-asks), and
the identity its judgments carry in keys and records.

A run holds a list of judges. Everything that would make a judge's old judgments invalid if
it changed (sampling, parser mode, re-asks) is in `JudgeSettings`, which the run's
configuration records; the backend (endpoints, concurrency, keys) may change between
invocations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from turnbench.backends.base import Backend
from turnbench.judging.formats import ReplyFormat
from turnbench.types import RequestParams, SamplingConfig

DEFAULT_JUDGE_TEMPERATURE = 0.0
DEFAULT_JUDGE_MAX_TOKENS = 2048
TOP_LOGPROBS = 20  # alternatives asked per token with weighted scoring (OpenAI's maximum)


def default_judge_sampling() -> SamplingConfig:
    return SamplingConfig(
        temperature=DEFAULT_JUDGE_TEMPERATURE, max_tokens=DEFAULT_JUDGE_MAX_TOKENS
    )


class JudgeSettings(BaseModel):
    """What identifies one judge's judgments."""

    model_config = ConfigDict(frozen=True)

    spec: str
    sampling: SamplingConfig = Field(default_factory=default_judge_sampling)
    parser: Literal["strict", "compat"] = "strict"
    max_reasks: int = 2
    scoring: Literal["parsed", "weighted"] = "parsed"
    #: --judge-guard: answers wrapped in random boundary markers, verdicts read outside them
    guard: bool = False

    @property
    def id(self) -> str:
        """The judge's name in keys and records: its spec."""
        return self.spec

    def params(self, reply: ReplyFormat | None = None) -> RequestParams:
        sampling = self.sampling
        weighted = self.scoring == "weighted" and reply is not None and reply.weighted
        return RequestParams(
            temperature=sampling.temperature,
            max_tokens=sampling.max_tokens,
            n=1,
            extra=sampling.extra,
            constraint=reply.constraint if reply is not None else None,
            top_logprobs=TOP_LOGPROBS if weighted else None,
        )

    def reask_params(self, reply: ReplyFormat | None = None) -> RequestParams:
        """A re-ask only needs the rating or verdict; its token limit can be lower."""
        params = self.params(reply)
        limit = self.sampling.reask_max_tokens
        return params if limit is None else params.model_copy(update={"max_tokens": limit})


@dataclass
class Judge:
    settings: JudgeSettings
    backend: Backend
    #: request parameters, built once per kind of reply: both models are frozen, and
    #: building them for every judgment was a measurable share of a judgment's CPU. Keyed by
    #: what they depend on, not by the reply format: formats can be made per request (and
    #: hold that request's data), and a cache of those would keep every prompt of a run alive
    _params: dict[tuple[object, bool], tuple[RequestParams, RequestParams]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def id(self) -> str:
        return self.settings.id

    def request_params(self, reply: ReplyFormat) -> tuple[RequestParams, RequestParams]:
        """(first request, re-ask) parameters for `reply` (`JudgeSettings.params` reads only
        its constraint and whether it is weighted)."""
        key = (reply.constraint, reply.weighted)
        known = self._params.get(key)
        if known is None:
            known = self._params[key] = (
                self.settings.params(reply),
                self.settings.reask_params(reply),
            )
        return known
