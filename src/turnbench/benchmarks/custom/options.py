"""A benchmark file's options (`-B key=value`): scenarios take `--simulations`."""

from __future__ import annotations

from turnbench.benchmarks.options import SimulationsOption


class ScenarioOptions(SimulationsOption):
    """A file of scenarios (`simulated_user`): how many conversations per scenario."""
