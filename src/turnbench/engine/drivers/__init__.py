"""One driver per kind of conversation (`drivers.base.Driver`).

golden history, self history, simulated users (a benchmark's conversations), judge-only
and pairwise (a command's), and the stress arms as a wrapper around a driver of fixed
history. A benchmark with another kind of conversation brings its own driver class
(`Benchmark.driver`); nothing here needs to change for it.
"""

from __future__ import annotations

from turnbench.engine.drivers.base import Driver, WorkSpec
from turnbench.engine.drivers.golden import GoldenHistory
from turnbench.engine.drivers.self_history import SelfHistory
from turnbench.engine.drivers.simulated import SimulatedUser

#: the driver of a benchmark's conversations by its `history`
BY_HISTORY: dict[str, type[Driver]] = {
    "golden": GoldenHistory,
    "self": SelfHistory,
    "simulated": SimulatedUser,
}

__all__ = ["BY_HISTORY", "Driver", "GoldenHistory", "SelfHistory", "SimulatedUser", "WorkSpec"]
