"""User-defined benchmarks: a YAML or JSON file of dialogues, rubrics, checklists and
deterministic checks (docs/custom-benchmarks.md describes the format)."""

from turnbench.benchmarks.custom.benchmark import CustomBenchmark, benchmark_from_file
from turnbench.benchmarks.custom.spec import FORMAT_VERSIONS, BenchmarkSpec, load_spec

__all__ = [
    "FORMAT_VERSIONS",
    "BenchmarkSpec",
    "CustomBenchmark",
    "benchmark_from_file",
    "load_spec",
]
