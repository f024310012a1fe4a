"""User-defined benchmarks: a YAML or JSON file of dialogues, rubrics, checklists and
deterministic checks (docs/custom-benchmarks.md describes the format).

The names are imported when first asked for (PEP 562), as in the built-in benchmarks'
packages: the command line reads every benchmark's `options.py` for its flags, and a run of
a built-in benchmark must not load the benchmark-file schema and checks for that.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "FORMAT_VERSIONS": "spec",
    "BenchmarkSpec": "spec",
    "load_spec": "spec",
    "CustomBenchmark": "benchmark",
    "benchmark_from_file": "benchmark",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
