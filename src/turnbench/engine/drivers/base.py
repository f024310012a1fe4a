"""What a driver is: one kind of conversation, planned, run one job at a time, estimated.

A driver is given the invocation's `Work` (the benchmark, the models, the judges, the
repeats) when it is made. From it the driver builds the `Plan` once (`plan`); `run` does one
planned job against a `RunContext` (every request through the context, so a resume repays
nothing); `estimate` sizes the plan's jobs for `--dry-run` without sending anything. A
benchmark declares the driver of its conversations (`Benchmark.driver`); the command chooses
the judge-only and pairwise drivers, and `--perturb` wraps the benchmark's driver in the
stress arms'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from turnbench.engine.context import RunContext
from turnbench.engine.estimate import Sizing
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.engine.rules import BenchmarkRules
from turnbench.engine.turn_judging import TurnJudging
from turnbench.judging.judge import JudgeSettings
from turnbench.perturb.arms import Arm
from turnbench.samples import AnswerSet


class WorkSpec(Protocol):
    """What a driver reads of the invocation (`engine.work.Work` has it all)."""

    benchmark: BenchmarkRules
    judges: list[JudgeSettings]
    mode: Literal["run", "judge"]
    model: str | None
    answer_sets: list[AnswerSet]
    repeats: int
    arms: Sequence[Arm]
    shuffle_seed: int

    @property
    def models(self) -> list[str]: ...

    @property
    def turn_judging(self) -> TurnJudging: ...

    def pairs(self) -> list[tuple[str, str]]: ...


class Driver(Protocol):
    """One kind of conversation (see the module docstring).

    A driver may ask roles of its own beside the model, the judges and the simulated user
    (an attacker, a grader, a second speaker): `DRIVER_ROLES` names each with the role whose
    model plays it ("model" or "user"); the session gives each its own name everywhere
    (backend, budget, usage, cost, failures, the dry run's estimate) and the driver asks it
    with `RunContext.reply`."""

    def __init__(self, work: WorkSpec) -> None: ...

    def plan(self) -> Plan:
        """Every job of the invocation, the log keys they finish and the judged items."""
        ...

    async def run(self, job: PlannedJob, ctx: RunContext) -> None:
        """Do one planned job: ask, log, judge (the run's judges are `ctx.judges`); what the
        log holds already is not asked."""
        ...

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        """Add the requests of the plan's jobs to `sizing`, nothing sent."""
        ...

    def notes(self) -> list[str]:
        """What `--dry-run` says of this kind of conversation beside its counts."""
        ...


#: the name of a driver's attribute naming its own roles: role -> the role that plays it
DRIVER_ROLES = "roles"


def driver_roles(driver: object) -> dict[str, str]:
    """The roles a driver asks besides the model, the judges and the user (`Driver`)."""
    roles = getattr(driver, DRIVER_ROLES, None)
    return {str(k): str(v) for k, v in roles.items()} if isinstance(roles, Mapping) else {}
