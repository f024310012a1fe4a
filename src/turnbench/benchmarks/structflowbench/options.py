"""StructFlowBench's options (`-B key=value`; `--history-format` is its own flag too)."""

from __future__ import annotations

from typing import Literal

from turnbench.benchmarks.options import BenchmarkOptions, option


class StructFlowBenchOptions(BenchmarkOptions):
    history_format: Literal["chat", "flat"] | None = option(
        flag="--history-format",
        help="StructFlowBench: earlier turns as chat messages (chat, the default) or "
        "flattened into one user message as the reference sends them (flat).",
    )
