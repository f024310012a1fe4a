"""The plan of one invocation, built once: the jobs to run, the log keys they finish, the items
results score.

Before the plan existed, the same work was derived four times (the planned keys, the jobs,
the estimate and the results), joined only by key strings. Now a driver builds the plan
(`Driver.plan`) and everything reads it: the session's progress and completeness check read
`keys`, `execute` runs `jobs`, `--dry-run` sizes `jobs`, and results score `items` (and
`games`, for pairwise judging).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from turnbench.judging.pairwise import Order
from turnbench.perturb.arms import Arm
from turnbench.samples import AnswerSet, Sample

Job = Callable[[], Awaitable[None]]

#: the criterion of a judged turn that gets no judge request (scored from its answer alone)
NO_REQUEST: Any = object()


@dataclass(frozen=True)
class Game:
    """One pairwise game: `order` says which model the judge sees as assistant A."""

    sample: Sample
    turn: int
    model_1: str
    model_2: str
    order: Order


@dataclass(frozen=True)
class PlannedJob:
    """What one job does: a sample's conversation (`turn` None), or one turn of it (golden
    history asks every judged turn on its own); with `arm`, that stress arm's; `answers`:
    the answer set a judge-only job records and judges; `games`: a pairwise job's games."""

    sample: Sample
    model: str | None = None
    turn: int | None = None
    arm: Arm | None = None
    answers: AnswerSet | None = None
    games: tuple[Game, ...] = ()
    trial: int = 0


@dataclass
class Plan:
    """Everything one invocation will ask for, in the order its jobs start."""

    jobs: list[PlannedJob] = field(default_factory=list)
    #: log keys of the planned work per stage ("answers", "judgments", ...): what the run
    #: counts as progress, and what must all be done for the run to be complete
    keys: dict[str, set[str]] = field(default_factory=lambda: {"judgments": set()})
    #: (sample, turn, criterion) of every planned judgment of one model, in plan order; a
    #: judged turn without judge requests once, with NO_REQUEST as its criterion
    items: list[tuple[Sample, int, Any]] = field(default_factory=list)
    #: the pairwise games (pairwise judging only)
    games: list[Game] = field(default_factory=list)
    #: samples a driver scores as a whole, (sample, trial): results read each one's
    #: `SampleRecord` (a conversation whose outcome is computed, not judged turn by turn)
    scored: list[tuple[Sample, int | None]] = field(default_factory=list)

    def key_count(self) -> dict[str, int]:
        return {stage: len(keys) for stage, keys in self.keys.items()}
