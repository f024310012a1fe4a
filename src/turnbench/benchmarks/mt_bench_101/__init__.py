"""MT-Bench-101, a built-in benchmark: its class is `BENCHMARK`.

The class is imported when first asked for (PEP 562), so reading the package's options
(`options.py`, which the command line's flags come from) does not load its rules and data.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BENCHMARK", "MTBench101"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from turnbench.benchmarks.mt_bench_101.benchmark import MTBench101

        return MTBench101
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
