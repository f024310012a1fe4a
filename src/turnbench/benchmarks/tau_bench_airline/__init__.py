"""tau-bench-airline, a built-in benchmark: its class is `BENCHMARK`.

The class is imported when first asked for (PEP 562), so reading the packages' options does
not load its rules and data.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BENCHMARK", "TauBenchAirline"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from turnbench.benchmarks.tau_bench_airline.benchmark import TauBenchAirline

        return TauBenchAirline
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
