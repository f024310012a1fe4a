"""A judge builds its request parameters once per kind of reply: the same values as its
settings give, and a cache that does not grow with the reply formats a run makes (one per
request in some benchmarks, each holding its request's data)."""

from __future__ import annotations

from dataclasses import replace

from turnbench.judging.formats import standard_format
from turnbench.judging.judge import Judge, JudgeSettings
from turnbench.types import SamplingConfig


def test_parameters_match_the_settings_and_the_cache_stays_small():
    settings = JudgeSettings(
        spec="openai/judge",
        sampling=SamplingConfig(temperature=0.0, max_tokens=512, reask_max_tokens=32),
        scoring="weighted",
    )
    judge = Judge(settings, backend=None)  # type: ignore[arg-type]
    rating = standard_format("rating", "rating-strict")
    verdict = standard_format("verdict", "verdict-strict")
    for _ in range(500):  # a fresh format object per request, as a benchmark may make
        fresh = replace(rating, parse=lambda text: rating.parse(text))
        assert judge.request_params(fresh) == (settings.params(fresh), settings.reask_params(fresh))
    first, reask = judge.request_params(rating)
    assert first.top_logprobs == 20 and first.max_tokens == 512 and reask.max_tokens == 32
    other, _ = judge.request_params(verdict)
    assert other.constraint == verdict.constraint != first.constraint
    assert other.top_logprobs is None  # a verdict is not weighed
    assert len(judge._params) == 2
