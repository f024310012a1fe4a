"""MT-Bench-101's options (`-B key=value`; each is its own flag too)."""

from __future__ import annotations

from typing import Literal

from turnbench.benchmarks.options import BenchmarkOptions, option


class MTBench101Options(BenchmarkOptions):
    context: Literal["golden", "self"] | None = option(
        flag="--context", help="MT-Bench-101: history the model sees (default golden)."
    )
    reference_mode: Literal["compat", "golden-answer"] | None = option(
        flag="--reference-mode", help="MT-Bench-101 MR/GR reference (default compat)."
    )
