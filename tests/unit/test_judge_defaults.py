"""Judge sampling defaults a benchmark declares, and benchmark options it does not have."""

from __future__ import annotations

from typing import ClassVar

import pytest

from tests.toy_bench import ToyBench
from turnbench.errors import UserError
from turnbench.options import build_options
from turnbench.session import Session


class NoTemperatureInCompat(ToyBench):
    """As a reference implementation that sends no judge temperature."""

    default_judge_temperature: ClassVar = {"strict": 0.0, "compat": None}


def judge_temperature(cls: type, **options) -> float | None:
    values = {"benchmark": f"{cls.__module__}:{cls.__qualname__}", "model": "openai/m"}
    session = Session(build_options(judge="openai/j", **values, **options), "run")
    (judge,) = session.prepare().judges
    return judge.settings.sampling.temperature


@pytest.mark.parametrize(
    ("cls", "options", "expected"),
    [
        (ToyBench, {}, 0.0),
        (ToyBench, {"parser": "compat"}, 0.0),
        (NoTemperatureInCompat, {}, 0.0),
        (NoTemperatureInCompat, {"parser": "compat"}, None),
        (NoTemperatureInCompat, {"parser": "compat", "judge_temperature": 0.3}, 0.3),
        (ToyBench, {"judge_temperature": 0.5}, 0.5),
    ],
)
def test_judge_temperature_defaults_to_the_benchmarks(cls, options, expected):
    assert judge_temperature(cls, **options) == expected


def test_an_option_the_benchmark_does_not_have_is_refused():
    with pytest.raises(UserError, match="toy-bench has no option --history-format"):
        judge_temperature(ToyBench, benchmark_options={"history_format": "flat"})
