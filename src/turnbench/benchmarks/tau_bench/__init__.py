"""tau-bench's two domains (retail, airline) as a library the benchmarks `tau-bench-retail`
and `tau-bench-airline` share: the database with copy-on-write states and upstream's hash
(`database`), the tools written in turnbench (`tools`, `retail_tools`, `airline_tools`,
`calculator`), tasks and their gold states (`tasks`), the reward and pass^k (`reward`), and
where the data comes from (`sources`, `sources.json`), the driver's typed outcome and its
template (`reward.RewardResult`, `outcome.html`), re-scoring upstream's trajectories
(`importer`) and scripted players for tests (`fakes`). The two benchmarks are `airline` and
`retail`, exported as `BENCHMARKS`, each class imported when first asked for (PEP 562), so
reading the packages' options loads neither their rules nor their data.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BENCHMARKS", "TauBenchAirline", "TauBenchRetail"]


def __getattr__(name: str) -> Any:
    if name == "TauBenchAirline":
        from turnbench.benchmarks.tau_bench.airline import TauBenchAirline

        return TauBenchAirline
    if name == "TauBenchRetail":
        from turnbench.benchmarks.tau_bench.retail import TauBenchRetail

        return TauBenchRetail
    if name == "BENCHMARKS":
        return (__getattr__("TauBenchAirline"), __getattr__("TauBenchRetail"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
