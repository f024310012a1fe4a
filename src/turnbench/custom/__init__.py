"""User-defined benchmarks: a YAML or JSON file of dialogues, rubrics, checklists and
deterministic checks (docs/custom-benchmarks.md describes the format).

The names below are imported when first used, so the process that runs the checks with a
time limit (`check_worker`) starts without the benchmark machinery (a third of a second)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnbench.custom.benchmark import CustomBenchmark, benchmark_from_file
    from turnbench.custom.spec import FORMAT_VERSIONS, BenchmarkSpec, load_spec

__all__ = [
    "FORMAT_VERSIONS",
    "BenchmarkSpec",
    "CustomBenchmark",
    "benchmark_from_file",
    "load_spec",
]
_HOME = {
    "CustomBenchmark": "turnbench.custom.benchmark",
    "benchmark_from_file": "turnbench.custom.benchmark",
    "FORMAT_VERSIONS": "turnbench.custom.spec",
    "BenchmarkSpec": "turnbench.custom.spec",
    "load_spec": "turnbench.custom.spec",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'turnbench.custom' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
