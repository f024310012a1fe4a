"""Benchmark registry: name -> module path, imported only when chosen."""

from __future__ import annotations

import importlib

from turnbench.benchmarks.base import Benchmark, Settings
from turnbench.errors import UserError

REGISTRY: dict[str, str] = {
    "mt-bench": "turnbench.benchmarks.mt_bench:MTBench",
    "mt-bench-101": "turnbench.benchmarks.mt_bench_101:MTBench101",
}


def benchmark_class(name: str) -> type[Benchmark]:
    if name not in REGISTRY:
        raise UserError(
            f"unknown benchmark {name!r}; known benchmarks: {', '.join(sorted(REGISTRY))}"
        )
    module_name, _, class_name = REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


__all__ = ["REGISTRY", "Benchmark", "Settings", "benchmark_class"]
