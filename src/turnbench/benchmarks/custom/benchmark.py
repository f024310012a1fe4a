"""A user-defined benchmark file as a `Benchmark`: `--benchmark path/to/bench.yaml`.

`benchmark_from_file` validates the file (every mistake with its line, before anything is
sent) and returns a class bound to it. Its content is the file, recorded by checksum in
provenance and in the run identity (editing the file between invocations of one run
directory is refused like any other change of settings).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from turnbench.benchmarks.answers import load_turn_answers
from turnbench.benchmarks.base import (
    AnswerSet,
    Benchmark,
    BenchmarkSettings,
    Chart,
    ComparisonRule,
    JudgedTurn,
    JudgeTask,
    Pair,
    ParserTable,
    ReportSpec,
    Sample,
    ScoreTable,
    TableNote,
    TableRow,
    TextTable,
    Turn,
    UserAsk,
    UserTurn,
    select_first,
)
from turnbench.benchmarks.custom.bounded import BoundedChecks
from turnbench.benchmarks.custom.options import ScenarioOptions
from turnbench.benchmarks.custom.prompts import (
    CHECKLIST_PROMPT,
    RUBRIC_PROMPT,
    checklist_messages,
    rubric_messages,
)
from turnbench.benchmarks.custom.scoring import CHECKLIST_CRITERION, score_tables
from turnbench.benchmarks.custom.spec import BenchmarkSpec, DialogueSpec, load_spec
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.benchmarks.tables import ScoreTables
from turnbench.errors import UserError
from turnbench.judging.formats import followup
from turnbench.types import Message, RequestParams


class CustomTables(ScoreTables):
    """A user-defined benchmark's tables (scores from 0 to 1): `by_tag` the mean dialogue
    score per tag, `by_check` the share of checks and checklist questions met per name,
    `by_turn` the mean turn score per position, `by_dialogue` every dialogue's score,
    `rubric_mean` the mean 1-10 rubric rating, `turns` every judged turn in detail."""

    history: str
    dialogue_score: str
    by_tag: dict[str, float | None]
    by_check: dict[str, float | None]
    by_turn: dict[str, float | None]
    by_dialogue: dict[str, float | None]
    rubric_mean: float | None
    turns: list[dict[str, Any]]
    incomplete_dialogue_ids: list[int | str]


class CustomBenchmark(Benchmark):
    """Rules shared by every benchmark file; `benchmark_from_file` binds one file."""

    spec: ClassVar[BenchmarkSpec]
    path: ClassVar[Path]
    name = "custom"
    description = "a user-defined benchmark"
    sample_noun = "dialogues"
    group_kind = "tag"
    parsers: ClassVar[ParserTable] = {
        "rating": {"strict": "rating-strict", "compat": "rating-fastchat"},
        "checklist": {"strict": "checklist-strict", "compat": "checklist-compat"},
    }
    results_model = CustomTables
    needs_answer_text = True  # deterministic checks score the answer text
    report = ReportSpec(
        charts=(
            Chart("bars", "by_tag", "Score per tag", "bar chart of the mean score per tag",
                  horizontal=True),
            Chart("bars", "by_check", "Share met per check", "bar chart of the share of "
                  "checks met per check name", horizontal=True, scale_max=1.0),
        ),
        tables=(
            ScoreTable("Tags", "by_tag", total_field="overall", row_title="tag"),
            ScoreTable("Checks (share met)", "by_check", row_title="check"),
            ScoreTable("Mean score per turn", "by_turn", row_title="turn"),
        ),
        overall_note="user-defined benchmark: mean dialogue score (0-1; each turn the "
        "weighted share of its requirements met)",
        summary_fields=("history", "dialogue_score"),
    )  # fmt: skip

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        super().__init__(files, settings)
        self._all = [self._sample(d) for d in self.spec.dialogues]
        self._planned = select_first(self._all, settings.limit)
        planned = {s.id for s in self._planned}
        self.planned_dialogues = [d for d in self.spec.dialogues if d.id in planned]
        self._checks = BoundedChecks()  # outcomes kept for the score tables built again

    @staticmethod
    def _sample(dialogue: DialogueSpec) -> Sample:
        return Sample(
            id=dialogue.id,
            group=dialogue.tags[0] if dialogue.tags else None,
            turns=tuple(
                Turn(user=t.user, golden=t.golden, judged=t.judged) for t in dialogue.turns
            ),
            source=dialogue,
        )

    @classmethod
    def locate_files(cls, locator: DataLocator) -> dict[str, Path]:
        return locator.record_unpinned({f"custom/{cls.path.name}": cls.path})

    @property
    def samples(self) -> list[Sample]:
        return self._planned

    def all_samples(self) -> list[Sample]:
        return self._all

    @property
    def history(self) -> str:
        return self.spec.history

    # -- asking ----------------------------------------------------------------------------
    def answer_messages(self, sample: Sample, turn: int, earlier: Sequence[Pair]) -> list[Message]:
        messages = super().answer_messages(sample, turn, earlier)
        given = self.settings.answer.system_prompt if self.settings.answer else None
        if given is None and self.spec.system is not None:
            messages.insert(0, {"role": "system", "content": self.spec.system})
        return messages

    # -- judging ---------------------------------------------------------------------------
    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        spec = sample.source.turns[turn - 1]
        tasks = []
        if spec.rubric is not None:
            messages = rubric_messages(spec.rubric, earlier, spec.user, answer, spec.reference)
            tasks.append(JudgeTask(RUBRIC_PROMPT, messages, kind="rating"))
        if spec.checklist:
            messages = checklist_messages(
                spec.checklist, earlier, spec.user, answer, spec.reference
            )
            tasks.append(
                JudgeTask(
                    CHECKLIST_PROMPT,
                    messages,
                    kind="checklist",
                    criterion=CHECKLIST_CRITERION,
                    items=len(spec.checklist),
                    weights=tuple(item.weight for item in spec.checklist),
                )
            )
        return tasks

    def prompt_versions(self) -> dict[str, str]:
        mode = self.settings.parser
        versions = {
            "judge_prompts": f"{RUBRIC_PROMPT},{CHECKLIST_PROMPT}",
            "parser": f"{self.parsers['rating'][mode]},{self.parsers['checklist'][mode]}",
            "format": f"turnbench-custom-v{self.spec.version}",
        }
        if mode == "strict":
            versions["reask_checklist"] = followup("checklist").label
        return versions

    def config_options(self) -> dict[str, Any]:
        return {"history": self.spec.history, "dialogue_score": self.spec.dialogue_score}

    # -- answer files ----------------------------------------------------------------------
    def load_answer_file(self, path: Path) -> AnswerSet:
        """JSONL rows `{"id", "turn", "answer"}`, one per judged turn (with self history,
        one per turn: later turns are judged after the model's own earlier answers)."""
        samples = {s.id: s for s in self._all}
        turns_of = Sample.asked_turns if self.spec.history == "self" else Sample.judged_turns
        return load_turn_answers(
            path,
            samples,
            [(s.id, t) for s in self._planned for t in turns_of(s)],
            unknown_id=lambda i: f"id {i!r} is not a dialogue of {self.name}",
            not_judged=lambda s, t: f"turn {t} of dialogue {s.id!r} is not judged",
            answered=turns_of,
        )

    # -- results ---------------------------------------------------------------------------
    def describe(self, sample: Sample) -> dict[str, Any]:
        return {"id": sample.id}

    def aggregate(self, judged: Sequence[JudgedTurn]) -> CustomTables:
        return CustomTables(**score_tables(self.spec, self.planned_dialogues, judged, self._checks))

    def results_header(self) -> dict[str, Any]:
        return {"benchmark_file": str(self.path)}

    @classmethod
    def terminal_table(cls, results: Mapping[str, Any]) -> TextTable:
        rows: list[TableRow] = []
        rows += [TableRow((f"tag: {t}", v)) for t, v in results.get("by_tag", {}).items()]
        rows += [TableRow((f"check: {n}", v)) for n, v in results.get("by_check", {}).items()]
        rows += [TableRow((f"turn {t}", v)) for t, v in results.get("by_turn", {}).items()]
        if results.get("rubric_mean") is not None:
            rows.append(TableRow(("rubric (mean rating, 1-10)", results["rubric_mean"])))
        counts = results.get("counts", {})
        note = (
            f"scores 0-1: share of requirements met; dialogue = {results.get('dialogue_score')} "
            f"of its turns; {counts.get('dialogues_scored', 0)}/{counts.get('dialogues', 0)} "
            f"dialogues scored; checks passed {counts.get('checks_passed', 0)}/"
            f"{counts.get('checks_run', 0)}"
        )
        return TextTable(
            title=f"{results['benchmark']}: {results['model']}",
            headers=("", "score"),
            sections=(tuple(rows), (TableRow(("overall", results.get("overall")), bold=True),)),
            notes=(TableNote(note),),
        )


@cache
def scenario_prompts() -> dict[str, Any]:
    """prompts/scenario_user.json: what the user model playing a scenario is told."""
    text = resources.files("turnbench").joinpath("prompts/scenario_user.json").read_text("utf-8")
    return dict(json.loads(text))


class ScenarioTables(CustomTables):
    """A file of scenarios adds: `success_rate` (the share of conversations whose score
    reaches the file's `success_threshold`), `pass_hat_k` (the chance that k tries of a
    scenario all succeed, k = 1..N, the unbiased estimator over its N conversations) and
    `pass_at_k` (that at least one does), and `by_scenario` (each scenario's conversation
    scores)."""

    simulations: int
    success_threshold: float
    success_rate: float | None
    pass_hat_k: dict[str, float]
    pass_at_k: dict[str, float]
    by_scenario: dict[str, list[float | None]]
    scores_by_scenario: dict[str, dict[str, list[float]]]  # (the report's strip plot)


class ScenarioBenchmark(CustomBenchmark):
    """A benchmark file of scenarios: a user model plays each `simulated_user` (persona,
    goal, facts) for at most `max_turns` assistant replies, ending sooner with an end
    marker; the model under test sees only the user's messages. The dialogue's rubric,
    checklist and checks are judged once, when the conversation ends, on the whole
    conversation or its final turn (`judge`). Each scenario is held `--simulations` times."""

    history = "simulated"
    user_model = "required"
    options_model = ScenarioOptions
    results_model = ScenarioTables
    report = ReportSpec(
        charts=(
            *CustomBenchmark.report.charts,
            Chart("strips", "scores_by_scenario", "Each scenario's conversations",
                  "strip plot of every conversation's score, a row per scenario", scale_max=1.0),
        ),
        tables=CustomBenchmark.report.tables,
        overall_note="scenarios: the mean conversation score (0-1; the weighted share of the "
        "scenario's requirements met)",
        summary_fields=("success_rate", "simulations", "success_threshold"),
    )  # fmt: skip

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        Benchmark.__init__(self, files, settings)
        self.simulations = int(settings.options.get("simulations") or 1)
        chosen = select_first(
            [CustomBenchmark._sample(d) for d in self.spec.dialogues], settings.limit
        )
        keep = {sample.id for sample in chosen}
        self.scenarios = [d for d in self.spec.dialogues if d.id in keep]
        self._all = [
            self._conversation(d, n) for d in self.spec.dialogues for n in range(self.simulations)
        ]
        self._planned = [s for s in self._all if self._scenario_of[str(s.id)][0].id in keep]
        self.planned_dialogues = [s.source for s in self._planned]
        self._checks = BoundedChecks()
        self._prompts = scenario_prompts()

    @staticmethod
    def conversation_id(dialogue: DialogueSpec, simulation: int) -> str:
        return f"{dialogue.id}-sim{simulation}"

    def _conversation(self, dialogue: DialogueSpec, simulation: int) -> Sample:
        """One conversation of a scenario: its own id (the scorer reads it as a dialogue)
        and seed; the scenario is `scenario_of`."""
        ident = self.conversation_id(dialogue, simulation)
        conversation = replace(dialogue, id=ident)
        self._scenario_of[ident] = (dialogue, simulation)
        return Sample(
            id=ident,
            group=dialogue.tags[0] if dialogue.tags else None,
            turns=tuple(Turn(user=t.user, judged=t.judged) for t in dialogue.turns),
            source=conversation,
        )

    @cached_property
    def _scenario_of(self) -> dict[str, tuple[DialogueSpec, int]]:
        return {}

    def seed(self, sample: Sample) -> int:
        dialogue, simulation = self._scenario_of[str(sample.id)]
        digest = hashlib.sha256(f"{dialogue.id!r}\n{simulation}".encode()).digest()
        return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF

    def _meta(self, sample: Sample) -> dict[str, Any]:
        dialogue, simulation = self._scenario_of[str(sample.id)]
        return {"scenario": dialogue.id, "simulation": simulation, "seed": self.seed(sample)}

    # -- the simulated user ----------------------------------------------------------------
    def user_turn(
        self, sample: Sample, turn: int, earlier: Sequence[Pair]
    ) -> UserTurn | UserAsk | None:
        user = sample.source.simulated_user
        assert user is not None
        if turn > user.max_turns:
            return None
        if turn == 1 and user.opening is not None:
            return UserTurn(text=user.opening, meta=self._meta(sample))
        prompts = self._prompts
        facts = "\n".join(f"- {fact}" for fact in user.facts) or prompts["no_facts"]
        system = prompts["system"].format(persona=user.persona, goal=user.goal, facts=facts)
        messages: list[Message] = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompts["start"]},
        ]
        for said, reply in earlier:  # (the user model writes the user's side: roles flip)
            messages.append({"role": "assistant", "content": said})
            messages.append({"role": "user", "content": reply})
        allowed = "\n".join([system, user.opening or ""])
        meta = self._meta(sample)

        def read(reply: str) -> UserTurn:
            from turnbench.engine.user_quality import (
                ENDED_BEFORE_START,
                RECITED,
                check_user_turn,
                find_recital,
                parse_end_marker,
            )

            # a recital of the system message never reaches the model, and an end marker
            # inside it ends nothing (the facts are the user's to give: never a recital)
            recital = find_recital(reply, system, user.facts)
            text, ended = parse_end_marker(recital.text)
            check = check_user_turn(text, list(user.facts), set(), allowed_text=allowed)
            problems = tuple(code for code in check.problems if code != "several_shards")
            if recital.recited:
                problems += (RECITED,)
            if ended and not earlier and not text.strip():
                problems += (ENDED_BEFORE_START,)
            return UserTurn(
                text=text.strip(),
                revealed=tuple(index + 1 for index in check.revealed),
                origin="user-model",
                meta=meta,
                problems=problems,
                ended=ended,
            )

        return UserAsk(messages=messages, read=read, seed=meta["seed"])

    def answer_params(self, sample: Sample) -> RequestParams:
        params = super().answer_params(sample)
        return params.model_copy(update={"extra": {**params.extra, "seed": self.seed(sample)}})

    # -- judging ---------------------------------------------------------------------------
    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        """The scenario's requirements, judged when its conversation ends: on the whole
        conversation (the judge sees every turn) or on its final turn alone."""
        spec = sample.source.turns[turn - 1]
        shown = list(earlier) if sample.source.judge == "conversation" else []
        user = sample.turns[turn - 1].user
        tasks = []
        if spec.rubric is not None:
            messages = rubric_messages(spec.rubric, shown, user, answer, None)
            tasks.append(JudgeTask(RUBRIC_PROMPT, messages, kind="rating"))
        if spec.checklist:
            messages = checklist_messages(spec.checklist, shown, user, answer, None)
            tasks.append(
                JudgeTask(
                    CHECKLIST_PROMPT,
                    messages,
                    kind="checklist",
                    criterion=CHECKLIST_CRITERION,
                    items=len(spec.checklist),
                    weights=tuple(item.weight for item in spec.checklist),
                )
            )
        return tasks

    def prompt_versions(self) -> dict[str, str]:
        prompts = self._prompts
        return {**super().prompt_versions(), "user": f"{prompts['name']}-v{prompts['version']}"}

    def config_options(self) -> dict[str, Any]:
        return {"dialogue_score": self.spec.dialogue_score}

    def load_answer_file(self, path: Path) -> AnswerSet:
        raise UserError(f"{self.name} is a file of scenarios: its answers are made in a run")

    # -- results ---------------------------------------------------------------------------
    def aggregate(self, judged: Sequence[JudgedTurn]) -> ScenarioTables:
        from turnbench.stats.reliability import pass_at_k, pass_hat_k

        tables = score_tables(self.spec, self.planned_dialogues, judged, self._checks)
        threshold = self.spec.success_threshold
        scores: dict[str, list[float | None]] = {}
        successes: dict[str, list[bool]] = {}
        for sample in self._planned:
            dialogue, _ = self._scenario_of[str(sample.id)]
            score = tables["by_dialogue"].get(str(sample.id))
            scores.setdefault(str(dialogue.id), []).append(score)
            if score is not None:
                successes.setdefault(str(dialogue.id), []).append(score >= threshold)
        tried = [s for values in successes.values() for s in values]
        complete = {k: v for k, v in successes.items() if len(v) == self.simulations}
        tables.update(
            {
                "by_turn": {},  # (a scenario's one judged turn is a slot, not a position)
                "history": "simulated",
                "simulations": self.simulations,
                "success_threshold": threshold,
                "success_rate": sum(tried) / len(tried) if tried else None,
                "pass_hat_k": pass_hat_k(complete) if complete else {},
                "pass_at_k": pass_at_k(complete) if complete else {},
                "by_scenario": scores,
                "scores_by_scenario": {
                    "score": {k: [v for v in vs if v is not None] for k, vs in scores.items()}
                },
            }
        )
        return ScenarioTables(**tables)

    @classmethod
    def terminal_table(cls, results: Mapping[str, Any]) -> TextTable:
        table = super().terminal_table(results)
        rows = [TableRow(("success rate", results.get("success_rate")))]
        rows += [
            TableRow((f"pass^{k}", value)) for k, value in (results.get("pass_hat_k") or {}).items()
        ]
        return replace(table, sections=(*table.sections, tuple(rows)))


def benchmark_from_file(path: Path, reserved: Iterable[str] = ()) -> type[CustomBenchmark]:
    """The benchmark a file defines, validated, as a class bound to the file; `reserved`:
    the names it may not take (the built-in benchmarks')."""
    path = path.expanduser().resolve()
    spec = load_spec(path, reserved=reserved)
    attributes = {
        "spec": spec,
        "path": path,
        "name": spec.name,
        "description": spec.description or f"user-defined benchmark {spec.name} ({path.name})",
        "source_ref": str(path),
        "default_answer_temperature": spec.temperature,
        "default_max_new_tokens": spec.max_new_tokens,
        "comparison": ComparisonRule(
            combine=spec.dialogue_score,
            overall="mean",
            need_complete=spec.dialogue_score == "min",
            score_range=(1.0, 10.0),
        ),
        "__doc__": f"The user-defined benchmark {spec.name} in {path}.",
    }
    base = ScenarioBenchmark if spec.simulated else CustomBenchmark
    if spec.simulated:  # scenarios scored by checks alone need no judge
        attributes["needs_judge"] = any(
            turn.rubric is not None or turn.checklist
            for dialogue in spec.dialogues
            for turn in dialogue.turns
        )
    return type("CustomBenchmark_" + spec.name.replace("-", "_").replace(".", "_"),
                (base,), attributes)  # fmt: skip
