"""tau-bench-airline: an agent with an airline's tools and policy serves simulated
travellers (50 test tasks)."""

from __future__ import annotations

from turnbench.benchmarks.tau_bench.benchmark import TauBench


class TauBenchAirline(TauBench):
    name = "tau-bench-airline"
    description = (
        "tau-bench airline (Yao et al. 2024): a tool-using agent serves simulated travellers "
        "of an airline; reward from the final database and the facts told, pass^k"
    )
    domain_name = "airline"
    splits = ("test",)
