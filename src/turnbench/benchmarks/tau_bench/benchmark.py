"""tau-bench's rules as a turnbench benchmark: tasks, the agent's tools and policy, the
simulated user, the reward, pass^k, and why each failed conversation failed.

A task is one sample (its id is its index in its split, as in upstream's result files); the
driver is `engine.drivers.tool_agent.ToolAgent`, which runs each task `--simulations K`
times (the trials of pass^k). The reward is computed, never judged: 1 when the final
database equals the one the task's gold actions produce and every required output was told
to the user, 0 otherwise (`reward.reward`). Beyond upstream, a failed conversation says why
(the database diff against the gold state, the outputs never told, how it ended), and the
simulator's own mistakes are counted (`user`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from turnbench.benchmarks.base import (
    Benchmark,
    BenchmarkSettings,
    JudgeTask,
    Pair,
    ReportSpec,
    Sample,
    ScoredSample,
    ScoreTable,
    TableRow,
    TextTable,
    Turn,
)
from turnbench.benchmarks.tables import ScoreTables
from turnbench.benchmarks.tau_bench.database import DatabaseState
from turnbench.benchmarks.tau_bench.domain import TauDomain
from turnbench.benchmarks.tau_bench.options import DEFAULT_MAX_STEPS, TauOptions
from turnbench.benchmarks.tau_bench.reward import (
    RewardResult,
    pass_hat_k,
    pass_hat_k_intervals,
    reward,
)
from turnbench.benchmarks.tau_bench.sources import data_files
from turnbench.benchmarks.tau_bench.tasks import Task
from turnbench.benchmarks.tau_bench.user import USER_PROMPT_VERSION, user_ask
from turnbench.engine.drivers.tool_agent import Call, Scored, ToolAgent, ToolOutcome
from turnbench.errors import UserError
from turnbench.samples import UserAsk
from turnbench.stats.scoring import bootstrap_mean_ci, mean
from turnbench.types import RequestParams

#: the step limit of an embedded model's conversation when -B max_steps does not set one
EMBEDDED_MAX_STEPS = 6
#: failed conversations listed in results, with their diffs (the rest are counted)
MAX_LISTED_FAILURES = 200


class TauFailure(BaseModel):
    """One failed conversation and why: how it ended, whether the database matched the
    gold state (and where it did not: `diff`, table / record / field, expected vs found),
    and the required outputs never told to the user."""

    task_id: int
    trial: int
    ended: str | None
    db_match: bool
    missing_outputs: list[str]
    diff: list[dict[str, Any]]


class TauSettings(BaseModel):
    """The settings tau-bench's results name first (`results_header`)."""

    domain: str
    split: str
    max_steps: int
    trials: int


class TauTables(ScoreTables):
    """tau-bench's tables: `overall` is the mean reward (pass^1) with a bootstrap interval
    over tasks; `pass_hat_k` the probability that k independent trials of a task all
    succeed, C(c, k) / C(n, k) averaged over tasks, for k = 1..trials, with
    `pass_hat_k_ci95`; `ended` how conversations ended; `db_match_rate` and
    `outputs_rate` the two halves of the reward; `failures` each failed conversation."""

    pass_hat_k: dict[str, float | None]
    pass_hat_k_ci95: dict[str, list[float] | None]
    tasks: int
    conversations: int
    ended: dict[str, int]
    db_match_rate: float | None
    outputs_rate: float | None
    failures: list[TauFailure]


class TauTask:
    """One task as the tool-using driver runs it (`tool_agent.AgentTask`)."""

    def __init__(self, domain: TauDomain, task_id: int, task: Task, needs_change: bool) -> None:
        self.domain = domain
        self.task_id = task_id
        self.task = task
        self.needs_change = needs_change

    @property
    def system(self) -> str:
        return self.domain.policy

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        return tuple(self.domain.tools.schemas)

    def opening(self) -> None:
        return None  # (the simulated user opens)

    def fresh(self) -> DatabaseState:
        return DatabaseState.fresh(self.domain.base)

    def call(self, state: Any, name: str, arguments: str) -> ToolOutcome:
        result = self.domain.tools.call(state, name, arguments)
        return ToolOutcome(result.output, result.terminal, result.changed)

    def after_tools(self) -> list[str]:
        return []

    def user_ask(self, heard: Sequence[str], said: Sequence[str], acted: bool) -> UserAsk:
        return user_ask(
            self.task.instruction, heard, said, acted=acted, needs_change=self.needs_change
        )

    def score(
        self, state: Any, said_to_user: Sequence[str], ended: str, calls: Sequence[Call]
    ) -> Scored:
        gold = self.domain.gold(self.task)
        result = reward(state, gold, list(self.task.outputs), list(said_to_user), ended)
        return Scored(
            score=result.reward,
            outcome=result,
            fields={"task_id": self.task_id, "reward": result.reward},
        )


class TauBench(Benchmark):
    """tau-bench (Yao et al. 2024) in one domain; the domain packages set `domain`."""

    domain_name: ClassVar[str]
    splits: ClassVar[tuple[str, ...]] = ("test",)
    sample_noun = "tasks"
    group_kind = "split"
    history = "simulated"  # (the user's turns are made at run time: nothing to perturb)
    calls_per_reply = "first"  # (upstream's agent runs only the first call of a reply)
    calls_at_step_limit = True  # (upstream acts on its last step too)
    needs_judge = False
    user_model = "required"
    default_answer_temperature = 0.0  # upstream's agent temperature
    default_max_new_tokens = 2048
    #: an embedded model (a smoke run) answers briefly, and its conversation is cut short
    embedded_max_new_tokens = 160
    embedded_user_max_tokens = 64
    report = ReportSpec(
        tables=(ScoreTable("pass^k: the chance that k trials of a task all succeed",
                           "pass_hat_k", row_title="k"),),
        overall_note="tau-bench: the mean reward of whole conversations (pass^1), computed "
        "from the final database and what the agent told the user",
        summary_fields=("split", "trials"),
    )  # fmt: skip
    simulator_problems = (
        "leaked_instruction", "answered_itself", "role_switch", "stopped_before_change",
    )  # fmt: skip
    options_model = TauOptions
    importers: ClassVar[Mapping[str, str]] = {
        "tau-bench": "turnbench.benchmarks.tau_bench.importer:read_trajectories"
    }
    results_model = TauTables
    header_model = TauSettings
    outcome_model = RewardResult
    outcome_template = "outcome.html"  # (beside this module: the diff and the outputs missing)

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        super().__init__(files, settings)
        options = settings.options
        self.split = str(options.get("split") or "test")
        if self.split not in self.splits:
            raise UserError(
                f"{self.name} has no {self.split} split (-B split=): it has "
                f"{', '.join(self.splits)}"
            )
        default_steps = DEFAULT_MAX_STEPS
        if (settings.model or "").startswith("local/"):
            default_steps = EMBEDDED_MAX_STEPS  # (a smoke run: the warning says so)
        self.max_steps = int(options.get("max_steps") or default_steps)
        self.trials = int(options.get("simulations") or 1)
        self.tau = TauDomain.load(self.domain_name, files, self.split)

    @classmethod
    def data_files(cls) -> list[Any]:
        return data_files(cls.domain_name)

    # -- content ---------------------------------------------------------------------------
    def all_samples(self) -> list[Sample]:
        return [
            Sample(
                id=index,
                group=self.split,
                turns=(Turn(user=task.instruction, judged=False),),
                source=task,
            )
            for index, task in enumerate(self.tau.tasks)
        ]

    def agent_task(self, sample: Sample) -> TauTask:
        task: Task = sample.source
        return TauTask(self.tau, int(sample.id), task, needs_change=self.tau.gold(task).changed)

    def agent_params(self, sample: Sample, tools: tuple[dict[str, Any], ...]) -> RequestParams:
        return self.answer_params(sample).model_copy(update={"tools": tools})

    def driver(self, work: Any) -> ToolAgent:
        return ToolAgent(work)

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        return []  # (the reward is computed, never judged)

    def prompt_versions(self) -> dict[str, str]:
        return {"user_prompt": USER_PROMPT_VERSION}

    def config_options(self) -> dict[str, Any]:
        return {"split": self.split, "max_steps": self.max_steps}

    def describe(self, sample: Sample) -> dict[str, Any]:
        return {"task_id": sample.id}

    # -- results ---------------------------------------------------------------------------
    def results_header(self) -> dict[str, Any]:
        return TauSettings(
            domain=self.domain_name, split=self.split, max_steps=self.max_steps, trials=self.trials
        ).model_dump()

    def aggregate_samples(self, scored: Sequence[ScoredSample]) -> TauTables:
        done = [item for item in scored if item.status == "scored" and item.score is not None]
        by_task: dict[int, list[float]] = {}
        for item in done:
            by_task.setdefault(int(item.sample.id), []).append(float(item.score or 0.0))
        complete = {
            task: [1 if score == 1.0 else 0 for score in scores]
            for task, scores in by_task.items()
            if len(scores) == self.trials
        }
        successes = {task: sum(flags) for task, flags in complete.items()}
        hat = pass_hat_k(successes, self.trials) if complete else {}
        intervals = pass_hat_k_intervals(successes, self.trials) if complete else {}
        interval = bootstrap_mean_ci(list(by_task.values()))
        ended: dict[str, int] = {}
        failures: list[TauFailure] = []
        for item in done:
            ended[item.ended or "unknown"] = ended.get(item.ended or "unknown", 0) + 1
            if item.score != 1.0 and len(failures) < MAX_LISTED_FAILURES:
                detail = item.detail
                failures.append(
                    TauFailure(
                        task_id=int(item.sample.id),
                        trial=int(item.trial or 0),
                        ended=item.ended,
                        db_match=bool(detail.get("db_match")),
                        missing_outputs=list(detail.get("missing_outputs") or []),
                        diff=list(detail.get("diff") or []),
                    )
                )
        return TauTables(
            overall=mean(float(item.score or 0.0) for item in done),
            overall_ci95=list(interval) if interval is not None else None,
            pass_hat_k={str(k): hat.get(k) for k in range(1, self.trials + 1)},
            pass_hat_k_ci95={
                str(k): (list(intervals[k]) if intervals.get(k) is not None else None)
                for k in range(1, self.trials + 1)
            },
            tasks=len(by_task),
            conversations=len(done),
            ended=ended,
            db_match_rate=mean(1.0 if item.detail.get("db_match") else 0.0 for item in done),
            outputs_rate=mean(0.0 if item.detail.get("missing_outputs") else 1.0 for item in done),
            failures=failures,
            counts={"conversations": len(done)},
        )

    @classmethod
    def terminal_table(cls, results: Mapping[str, Any]) -> TextTable:
        """The mean reward and pass^k per k, then how the conversations ended."""
        hat = results.get("pass_hat_k") or {}
        scores = tuple(TableRow((f"pass^{k}", value)) for k, value in hat.items())
        ended = tuple(
            TableRow((f"ended: {how}", str(count)))
            for how, count in (results.get("ended") or {}).items()
        )
        overall = (TableRow(("overall (mean reward)", results.get("overall")), bold=True),)
        return TextTable(
            title=f"{results.get('benchmark')}: {results.get('model')}",
            headers=("", "value"),
            sections=tuple(part for part in (scores, ended, overall) if part),
        )
