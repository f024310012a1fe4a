"""MT-Bench's options (`-B key=value`; `--reference-file` is its own flag too)."""

from __future__ import annotations

from pathlib import Path

from turnbench.benchmarks.options import BenchmarkOptions, option


class MTBenchOptions(BenchmarkOptions):
    reference_file: Path | None = option(
        flag="--reference-file",
        help="MT-Bench: answer file whose entries replace the official reference answers.",
    )
