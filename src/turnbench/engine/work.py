"""What one invocation does: the benchmark, the models, the judges, and the driver that runs it.

`Work` is checked when it is made (nothing is written before), chooses its driver once (the
pairwise or judge-only driver for `turnbench judge`, else the benchmark's own, wrapped in
the stress arms' with `--perturb`) and builds the plan once; the planned keys, the jobs,
the `--dry-run` estimate and the results all read that plan (`engine.plan`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import Driver
from turnbench.engine.drivers.judge_only import JudgeOnly
from turnbench.engine.drivers.pairwise import PairwiseJudging
from turnbench.engine.drivers.stress import StressArms
from turnbench.engine.estimate import Estimate, Sizing
from turnbench.engine.plan import Game, Job, Plan
from turnbench.engine.rules import BenchmarkRules
from turnbench.engine.turn_judging import TurnJudging
from turnbench.errors import UserError
from turnbench.judging.judge import JudgeSettings
from turnbench.perturb.arms import Arm
from turnbench.samples import AnswerSet

Mode = Literal["run", "judge"]
Judging = Literal["single", "pairwise", "pairwise-all"]
PAIRWISE_MODES = ("pairwise", "pairwise-all")


@dataclass
class Work:
    """What one invocation does: the benchmark, the judges, and the models' answers."""

    benchmark: BenchmarkRules
    judges: list[JudgeSettings]
    mode: Mode
    judging: Judging = "single"
    model: str | None = None
    answer_sets: list[AnswerSet] = field(default_factory=list)
    baseline: str | None = None
    #: --judge-repeats: every item is judged this many times by every judge (keys carry the
    #: repeat index, so raising it on a resume only adds the missing repeats)
    repeats: int = 1
    #: --perturb: stress arms (`turnbench.perturb`), each answering and judging the turns
    #: with history again, that history perturbed; their keys carry the arm's kind
    arms: Sequence[Arm] = ()
    #: the seed of the job order when there are arms (the judge's queue mixes the arms)
    shuffle_seed: int = 0

    def __post_init__(self) -> None:
        if self.repeats < 1:
            raise UserError("--judge-repeats must be at least 1")
        if self.arms and (self.mode != "run" or self.judging != "single"):
            raise UserError("--perturb is only available for turnbench run")
        if self.mode == "run" and not self.model:
            raise UserError("--model is required")
        if self.judging in PAIRWISE_MODES:
            self._check_pairwise()
        _ = self.driver  # (chosen now: a driver that cannot run this work refuses it here)

    # -- shape -----------------------------------------------------------------------------
    @property
    def models(self) -> list[str]:
        if self.mode == "run":
            assert self.model is not None
            return [self.model]
        return [answer_set.model for answer_set in self.answer_sets]

    @property
    def pairwise(self) -> bool:
        return self.judging in PAIRWISE_MODES

    def _check_pairwise(self) -> None:
        mode = self.judging
        if self.mode != "judge":
            raise UserError(f"--mode {mode} is only available for turnbench judge")
        self.benchmark.check_pairwise()
        names = self.models
        if len(names) < 2:
            shown = ", ".join(names) or "none"
            raise UserError(
                f"--mode {mode} compares models, so --answers must hold answers of at least 2 "
                f"models (found {len(names)}: {shown})"
            )
        if mode == "pairwise":
            if self.baseline is None:
                raise UserError("--mode pairwise needs --baseline NAME (a model of --answers)")
            if self.baseline not in names:
                raise UserError(
                    f"--baseline {self.baseline} is not one of the models in --answers "
                    f"({', '.join(names)})"
                )
        elif self.baseline is not None:
            raise UserError("--baseline is only used with --mode pairwise")

    def pairs(self) -> list[tuple[str, str]]:
        """(model_1, model_2) compared: every model against the baseline, or every pair."""
        if self.judging == "pairwise":
            baseline = self.baseline or ""
            return [(model, baseline) for model in self.models if model != baseline]
        models = self.models
        return [(a, b) for index, a in enumerate(models) for b in models[index + 1 :]]

    def games(self) -> list[Game]:
        return self.plan.games

    # -- the driver and its plan -----------------------------------------------------------
    @cached_property
    def turn_judging(self) -> TurnJudging:
        return TurnJudging(self.benchmark, self.repeats)

    @cached_property
    def driver(self) -> Driver:
        driver: Driver
        if self.pairwise:
            driver = PairwiseJudging(self)
        elif self.mode == "judge":
            driver = JudgeOnly(self)
        else:
            driver = self.benchmark.driver(self)
        if self.arms:
            driver = StressArms(self, driver)
        return driver

    @cached_property
    def plan(self) -> Plan:
        return self.driver.plan()

    def planned_keys(self) -> dict[str, set[str]]:
        """Log keys of the planned work per stage ("answers", "judgments", ...)."""
        return self.plan.keys

    def jobs(self, ctx: RunContext) -> list[Job]:
        run = self.driver.run
        return [lambda job=job: run(job, ctx) for job in self.plan.jobs]

    # -- identity --------------------------------------------------------------------------
    def prompt_versions(self) -> dict[str, str]:
        if self.pairwise:
            return self.benchmark.pairwise_prompt_versions()
        return self.benchmark.prompt_versions()

    def config_options(self) -> dict[str, object]:
        options = dict(self.benchmark.config_options())
        if self.judging == "pairwise":
            options["baseline"] = self.baseline
        return options

    # -- estimate --------------------------------------------------------------------------
    def estimate(self, limits: Mapping[str, int | None] | None = None) -> Estimate:
        """Request counts and token estimates per role; nothing is sent. Prompt sizes use
        the real answers in judge-only runs and assume every answer uses its whole token
        limit in a `run`; re-asks are not counted. `limits`: each role's completion token
        limit beside the model's and the judges' (the user model's, a driver's roles')."""
        benchmark = self.benchmark
        sampling = benchmark.settings.answer
        roles: dict[str, int | None] = {"model": sampling.max_tokens if sampling else 0}
        roles.update({judge.id: judge.sampling.max_tokens for judge in self.judges})
        roles.update(limits or {})
        sizing = Sizing(roles, [judge.id for judge in self.judges], self.repeats)
        self.driver.estimate(self.plan, sizing)
        estimate = sizing.finish()
        samples = benchmark.samples
        turns = sum(len(s.judged_turns()) for s in samples)
        what = (
            f"{len(self.pairs())} pair(s) x 2 orders ({self.judging})"
            if self.pairwise
            else f"{len(self.models)} model(s)"
        )
        if self.repeats > 1:
            what += f" x {self.repeats} repeats"
        if self.arms:
            what += f", with the stress arms {', '.join(arm.kind for arm in self.arms)}"
        if estimate.user_turns:
            what += f", {estimate.user_turns} user turns written by the user model"
        estimate.notes.append(
            f"{len(samples)} {benchmark.sample_noun}, {turns} judged turns x {what}; "
            + (
                "prompt sizes assume every answer uses its whole token limit; "
                if self.mode == "run"
                else "prompt sizes from the answers given; "
            )
            + "re-asks (at most "
            + f"{max((j.max_reasks for j in self.judges), default=0)} per judgment) are not "
            "counted."
        )
        estimate.notes += self.driver.notes()
        return estimate
