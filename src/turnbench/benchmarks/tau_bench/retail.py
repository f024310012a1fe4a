"""tau-bench-retail: an agent with a retail store's tools and policy serves simulated
customers (115 test tasks; train 500 and dev 20 with `-B split=`)."""

from __future__ import annotations

from turnbench.benchmarks.tau_bench.benchmark import TauBench


class TauBenchRetail(TauBench):
    name = "tau-bench-retail"
    description = (
        "tau-bench retail (Yao et al. 2024): a tool-using agent serves simulated customers "
        "of an online store; reward from the final database and the facts told, pass^k"
    )
    domain_name = "retail"
    splits = ("test", "train", "dev")
