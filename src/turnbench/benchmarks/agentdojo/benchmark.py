"""AgentDojo as a turnbench benchmark: its suites' conversations, with and without an attack,
scored by upstream's own checks into utility, utility under attack and targeted ASR.

A sample is one conversation: a suite's user task alone (`SUITE/USER_TASK/none`), or with
one injection task under the attack (`SUITE/USER_TASK/INJECTION_TASK`); a run with an
attack holds both, so one run gives all three numbers. The driver is the tool-using agent's
(`engine.drivers.tool_agent`, every call of a reply run in order, no simulated user), with
upstream's tool filter as a step of its own under that defense (`driver`). Everything the
conversation is made of and judged by comes from the `agentdojo` package through
`upstream` (pinned; the extra `turnbench[agentdojo]`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from turnbench.benchmarks.agentdojo.options import DEFAULT_MAX_STEPS, AgentDojoOptions, listed
from turnbench.benchmarks.agentdojo.outcome import (
    AgentDojoOutcome,
    AgentDojoTables,
    Differs,
    Recorded,
)
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
from turnbench.stats.scoring import bootstrap_mean_ci, mean
from turnbench.types import RequestParams

#: the step limit of an embedded model's conversation when -B max_steps does not set one
EMBEDDED_MAX_STEPS = 4
NONE = "none"
DEFAULT_ATTACK = "important_instructions"


class AgentDojoSettings(BaseModel):
    """The settings AgentDojo's results name first (`results_header`)."""

    version: str
    suites: list[str]
    attack: str
    defense: str
    model_name: str | None
    user_name: str | None
    max_steps: int
    agentdojo_version: str


def sample_id(suite: str, user_task: str, injection_task: str | None) -> str:
    return f"{suite}/{user_task}/{injection_task or NONE}"


class AgentDojoBench(Benchmark):
    name = "agentdojo"
    description = (
        "AgentDojo (Debenedetti et al. 2024): tool-using agents in four suites under prompt "
        "injections placed in tool results; utility, utility under attack and targeted ASR"
    )
    sample_noun = "conversations"
    group_kind = "suite"
    history = "simulated"  # (the conversation is made at run time: nothing to perturb)
    needs_judge = False
    user_model = "no"
    calls_per_reply = "all"  # (upstream's executor runs every call of a reply, in order)
    calls_at_step_limit = False  # (upstream's loop runs no tools after its last reply)
    trials = 1
    default_max_new_tokens = 2048
    embedded_max_new_tokens = 160
    options_model = AgentDojoOptions
    results_model = AgentDojoTables
    header_model = AgentDojoSettings
    outcome_model = AgentDojoOutcome
    outcome_template = "outcome.html"  # (beside this module: the payload, the calls, the diff)
    importers: ClassVar[Mapping[str, str]] = {
        "agentdojo": "turnbench.benchmarks.agentdojo.importer:read_runs"
    }
    report = ReportSpec(
        tables=(
            ScoreTable(
                "The three numbers per suite",
                "per_suite",
                row_title="suite",
                columns=(
                    ("utility", "utility"),
                    ("utility_under_attack", "utility under attack"),
                    ("targeted_asr", "targeted ASR"),
                ),
                total_columns=True,
            ),
        ),
        overall_note="AgentDojo: utility under attack when the run has an attack, else utility "
        "(upstream's checks on each conversation)",
        summary_fields=("utility", "targeted_asr", "version", "attack", "defense"),
    )

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        super().__init__(files, settings)
        from turnbench.benchmarks.agentdojo import upstream

        options = settings.options
        self.upstream = upstream.load(options.get("version"))
        self.version = self.upstream.version
        self.suites = self.upstream.suites(listed(options.get("suites")))
        self.attack_name = str(options.get("attack") or DEFAULT_ATTACK)
        defense = options.get("defense")
        self.defense = None if defense in (None, NONE) else str(defense)
        self.model_name = options.get("model_name")
        self.user_name = options.get("user_name")
        self.user_tasks = listed(options.get("user_tasks"))
        self.injection_tasks = listed(options.get("injection_tasks"))
        self.pipeline = upstream.Pipeline(self.pipeline_name(settings), self.defense)
        rounds = options.get("max_steps")
        if rounds is None:
            embedded = (settings.model or "").startswith("local/")
            rounds = EMBEDDED_MAX_STEPS if embedded else self.pipeline.max_steps
        self.rounds = int(rounds or DEFAULT_MAX_STEPS)
        self.max_steps = self.rounds + 1  # (the first reply, then a reply per round)
        self.attacked = self.attack_name != NONE
        self.dos = self.attacked and upstream.attack_is_dos(self.attack_name)
        for suite in self.suites:  # (unknown ids refused now, before anything runs)
            suite.user_task_ids(self.user_tasks)
            if self.attacked:
                suite.injection_task_ids(self.injection_tasks)
        if settings.model is not None and self.attacked:
            self.attacks  # noqa: B018  (built now: a model name it cannot derive is refused)

    @cached_property
    def attacks(self) -> dict[str, Any]:
        """Upstream's attack per suite (built when first needed: reading a finished run's
        samples needs none, so its model's name need not be derivable then)."""
        if not self.attacked:
            return {}
        return {
            suite.name: suite.attack(
                self.attack_name, self.pipeline, model_name=self.model_name,
                user_name=self.user_name,
            )
            for suite in self.suites
        }  # fmt: skip

    def injection_task_ids(self, suite: Any) -> list[str]:
        """The injection tasks each user task of `suite` runs with, as upstream's runner
        picks them: the subset given or all; a denial-of-service attack only the first."""
        if not self.attacked:
            return []
        if self.dos:
            return suite.injection_task_ids()[:1]
        return suite.injection_task_ids(self.injection_tasks)

    def pipeline_name(self, settings: BenchmarkSettings) -> str:
        """The name upstream's attacks derive the model's name from, as upstream derives it
        from a pipeline's name: the model spec (a re-scored import's recorded pipeline)."""
        return str(settings.model or "")

    # -- content ---------------------------------------------------------------------------
    def all_samples(self) -> list[Sample]:
        samples = []
        for suite in self.suites:
            for user_task in suite.user_task_ids(self.user_tasks):
                units: list[str | None] = [None, *self.injection_task_ids(suite)]
                for injection_task in units:
                    samples.append(
                        Sample(
                            id=sample_id(suite.name, user_task, injection_task),
                            group=suite.name,
                            turns=(Turn(user=suite.prompt(user_task), judged=False),),
                            source=(suite.name, user_task, injection_task),
                        )
                    )
        return samples

    @cached_property
    def _suites(self) -> dict[str, Any]:
        return {suite.name: suite for suite in self.suites}

    def agent_task(self, sample: Sample, tools: Sequence[str] | None = None) -> Any:
        from turnbench.benchmarks.agentdojo.task import DojoTask

        suite_name, user_task, injection_task = sample.source
        suite = self._suites[suite_name]
        injections: dict[str, str] = {}
        if injection_task is not None:
            injections = self.attacks[suite_name].injections(user_task, injection_task)
        return DojoTask(
            suite, self.pipeline, user_task, injection_task,
            self.attack_name if injection_task is not None else NONE, injections,
            dos=self.dos, tools=tools,
        )  # fmt: skip

    def agent_params(self, sample: Sample, tools: tuple[dict[str, Any], ...]) -> RequestParams:
        """Upstream's agent: the suite's tools, `tool_choice` "auto"; no temperature sent
        unless --temperature gives one (upstream sends none at its default 0.0)."""
        sampling = self.settings.answer
        assert sampling is not None
        return RequestParams(
            temperature=sampling.temperature,
            max_tokens=sampling.max_tokens,
            n=1,
            extra=sampling.extra,
            tools=tools,
            tool_choice="auto",
        )

    def driver(self, work: Any) -> Any:
        from turnbench.benchmarks.agentdojo.driver import AgentDojoDriver

        return AgentDojoDriver(work)

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        return []  # (upstream's checks decide; nothing is judged)

    def prompt_versions(self) -> dict[str, str]:
        from turnbench.benchmarks.agentdojo import upstream

        return {"agentdojo": f"{upstream.PINNED}/{self.version}"}

    def config_options(self) -> dict[str, Any]:
        return self.results_header()

    def describe(self, sample: Sample) -> dict[str, Any]:
        suite, user_task, injection_task = sample.source
        return {"suite": suite, "user_task_id": user_task, "injection_task_id": injection_task}

    # -- results ---------------------------------------------------------------------------
    def results_header(self) -> dict[str, Any]:
        from turnbench.benchmarks.agentdojo import upstream

        attack = next(iter(self.attacks.values()), None) if self.attacked else None
        return AgentDojoSettings(
            version=self.version,
            suites=[suite.name for suite in self.suites],
            attack=self.attack_name,
            defense=self.defense or NONE,
            model_name=attack.model_name if attack is not None else self.model_name,
            user_name=attack.user_name if attack is not None else self.user_name,
            max_steps=self.rounds,
            agentdojo_version=upstream.PINNED,
        ).model_dump()

    def aggregate_samples(self, scored: Sequence[ScoredSample]) -> AgentDojoTables:
        done = [item for item in scored if item.status == "scored" and item.detail]
        outcomes = [AgentDojoOutcome.model_validate(item.detail) for item in done]
        attacked = self.attacked
        tables = AgentDojoTables(
            overall=None, overall_ci95=None, conversations=len(outcomes),
            counts={"conversations": len(outcomes)},
        )  # fmt: skip
        fields = numbers(outcomes, attacked)
        for name, value in fields.items():
            setattr(tables, name, value)
        tables.overall = fields.get("utility_under_attack" if attacked else "utility")
        tables.overall_ci95 = fields.get(
            "utility_under_attack_ci95" if attacked else "utility_ci95"
        )
        tables.per_suite = {
            suite.name: numbers([o for o in outcomes if o.suite == suite.name], attacked)
            for suite in self.suites
        }
        recorded = [o for o in outcomes if o.recorded_utility is not None]
        if recorded:
            tables.recorded = Recorded(**recorded_numbers(recorded, attacked))
            tables.replay_differs = [
                Differs(
                    suite=o.suite, user_task_id=o.user_task_id,
                    injection_task_id=o.injection_task_id, utility=o.utility,
                    recorded_utility=o.recorded_utility, security=o.security,
                    recorded_security=o.recorded_security,
                )
                for o in recorded
                if o.utility != o.recorded_utility
                or (o.injection_task_id is not None and o.security != o.recorded_security)
            ]  # fmt: skip
        return tables

    @classmethod
    def terminal_table(cls, results: Mapping[str, Any]) -> TextTable:
        """The three numbers overall and per suite."""
        keys = ("utility", "utility_under_attack", "targeted_asr")
        rows = [TableRow(("overall", *(results.get(key) for key in keys)), bold=True)]
        for suite, found in (results.get("per_suite") or {}).items():
            rows.append(TableRow((suite, *(found.get(key) for key in keys))))
        return TextTable(
            title=f"{results.get('benchmark')}: {results.get('model')}",
            headers=("", "utility", "utility under attack", "targeted ASR"),
            sections=(tuple(rows),),
        )


def numbers(outcomes: Sequence[AgentDojoOutcome], attacked: bool) -> dict[str, Any]:
    """The three numbers of some conversations, each with a bootstrap 95% interval over
    user tasks (a user task's pairs resampled together)."""
    alone = [o for o in outcomes if o.injection_task_id is None]
    pairs = [o for o in outcomes if o.injection_task_id is not None]
    found: dict[str, Any] = {}
    found.update(_rate("utility", alone, lambda o: o.utility))
    if attacked:
        found.update(_rate("utility_under_attack", pairs, lambda o: o.utility))
        found.update(_rate("targeted_asr", pairs, lambda o: bool(o.security)))
    return found


def _rate(name: str, outcomes: Sequence[AgentDojoOutcome], value: Any) -> dict[str, Any]:
    clusters: dict[tuple[str, str], list[float]] = {}
    for outcome in outcomes:
        key = (outcome.suite, outcome.user_task_id)
        clusters.setdefault(key, []).append(1.0 if value(outcome) else 0.0)
    interval = bootstrap_mean_ci(list(clusters.values()))
    return {
        name: mean(1.0 if value(o) else 0.0 for o in outcomes),
        f"{name}_ci95": list(interval) if interval is not None else None,
    }


def recorded_numbers(outcomes: Sequence[AgentDojoOutcome], attacked: bool) -> dict[str, Any]:
    """The three numbers from the imported files' own verdicts."""
    alone = [o for o in outcomes if o.injection_task_id is None]
    pairs = [o for o in outcomes if o.injection_task_id is not None]
    found = {"utility": mean(1.0 if o.recorded_utility else 0.0 for o in alone)}
    if attacked:
        found["utility_under_attack"] = mean(1.0 if o.recorded_utility else 0.0 for o in pairs)
        found["targeted_asr"] = mean(1.0 if o.recorded_security else 0.0 for o in pairs)
    return found
