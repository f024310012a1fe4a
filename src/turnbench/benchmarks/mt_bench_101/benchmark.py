"""MT-Bench-101 (Bai et al. 2024): 1388 golden dialogues in 13 tasks, every turn judged 1-10.

Rules follow OpenCompass's port (see docs/BENCHMARKS.md in the shared folder): golden
context (the model answers turn k after the dataset's turns 1..k-1, so every judged turn is
an independent request), the first turn of six tasks neither answered nor judged, the
official judge texts, OpenCompass's `[digits]` rating regex as the `compat` parser, and
dialogue score = minimum over its turns. turnbench adds `--context self` (the model sees its
own earlier answers), a `golden-answer` reference mode for MR/GR, strict parsing with
bounded re-asks, and dialogues with an unscored turn reported instead of silently scored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, cast

from pydantic import BaseModel

from turnbench.benchmarks.answers import load_turn_answers
from turnbench.benchmarks.base import (
    AnswerSet,
    Benchmark,
    BenchmarkSettings,
    Chart,
    ComparisonRule,
    FolderFile,
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
    package_sources,
)
from turnbench.benchmarks.datafiles import DataFile
from turnbench.benchmarks.mt_bench_101.data import (
    DIALOGUES,
    JUDGE_PROMPTS,
    Dialogue,
    judged_turns,
    load_dialogues,
    load_judge_texts,
)
from turnbench.benchmarks.mt_bench_101.options import MTBench101Options
from turnbench.benchmarks.mt_bench_101.prompts import ReferenceMode, judge_messages, reference_text
from turnbench.benchmarks.mt_bench_101.scoring import (
    TASK_CODES,
    TASK_INFO,
    TIER_1,
    TIER_2,
    TurnOutcome,
    score_tables,
    stratified_bootstrap_ci,
)
from turnbench.benchmarks.tables import ScoreTables
from turnbench.errors import UserError

CONTEXTS = ("golden", "self")
REFERENCE_MODES = ("compat", "golden-answer")
Context = Literal["golden", "self"]


class MTBench101Settings(BaseModel):
    """The settings MT-Bench-101's results name first (`results_header`): the history the
    judged turns saw and how reference answers reached the judge."""

    context: str
    reference_mode: str


class MTBench101Tables(ScoreTables):
    """MT-Bench-101's score tables. A dialogue scores its weakest judged turn; a task is the
    mean of its dialogues; `overall` the unweighted mean of the tasks; abilities the mean of
    their tasks. The `mean_over_turns` variants average turns instead; `by_task_turn` and
    `by_turn` show scores by turn position."""

    by_task: dict[str, float | None]
    by_ability: dict[str, float | None]
    overall_mean_over_turns: float | None
    by_task_mean_over_turns: dict[str, float | None]
    by_task_turn: dict[str, dict[str, float | None]]
    by_turn: dict[str, float | None]
    incomplete_dialogue_ids: list[int]

    trailing = ("overall_ci95", "incomplete_dialogue_ids")


def select_dialogues(dialogues: list[Dialogue], limit: int | None) -> list[Dialogue]:
    """The `limit` lowest-id dialogues of every task (all of them without a limit)."""
    ordered = sorted(dialogues, key=lambda d: d.id)
    if limit is None:
        return ordered
    taken: dict[str, int] = {}
    chosen = []
    for dialogue in ordered:
        if taken.get(dialogue.task, 0) < limit:
            taken[dialogue.task] = taken.get(dialogue.task, 0) + 1
            chosen.append(dialogue)
    return chosen


def _option(options: Mapping[str, Any], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = options.get(name) or default
    if value not in allowed:
        flag = "--" + name.replace("_", "-")
        raise UserError(f"{flag} {value!r} is not one of: {', '.join(allowed)}")
    return str(value)


class MTBench101(Benchmark):
    name = "mt-bench-101"
    description = (
        "MT-Bench-101: 1388 golden dialogues in 13 multi-turn tasks, every turn graded 1-10"
    )
    sample_noun = "dialogues"
    group_kind = "task"
    parsers: ClassVar[ParserTable] = {
        "rating": {"strict": "rating-strict", "compat": "rating-opencompass"}
    }
    default_max_new_tokens = 4096  # the reference example's max_out_len; 1024 cuts answers
    comparison = ComparisonRule(combine="min", overall="mean_of_groups", need_complete=True)
    options_model = MTBench101Options
    results_model = MTBench101Tables
    header_model = MTBench101Settings
    folder_layout = (
        FolderFile(DIALOGUES, ("mtbench101.jsonl",)),
        FolderFile(JUDGE_PROMPTS, ("judge_prompts.json",), False, published_fallback=True),
    )
    report = ReportSpec(
        charts=(
            Chart("radar", "by_task", "MT-Bench-101 score per task",
                  "radar chart of the 13 MT-Bench-101 task scores", order=TASK_CODES),
            Chart("bars", "by_ability", "Abilities: 3 tier-1 (top), 7 tier-2",
                  "bar chart of the ability scores", order=TIER_1 + TIER_2, horizontal=True),
            Chart("turn_lines", "by_task_turn", "Mean score per turn, per task",
                  "turn-wise score curves per task", order=TASK_CODES),
        ),
        tables=(
            ScoreTable("Tasks", "by_task", total_field="overall", row_title="task",
                       row_notes={t.code: t.name for t in TASK_INFO.values()}, order=TASK_CODES),
            ScoreTable("Abilities", "by_ability", row_title="ability",
                       row_notes={name: "(tier 1)" for name in TIER_1}, order=TIER_1 + TIER_2),
            ScoreTable("Mean score per turn (all tasks)", "by_turn", row_title="turn"),
        ),
        overall_note="MT-Bench-101: mean of the 13 task scores, each the mean of its dialogues' "
        "minimum turn score",
        summary_fields=("context", "reference_mode"),
    )  # fmt: skip

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        super().__init__(files, settings)
        self.context = cast(Context, _option(settings.options, "context", "golden", CONTEXTS))
        self.reference_mode = cast(
            ReferenceMode,
            _option(settings.options, "reference_mode", "compat", REFERENCE_MODES),
        )
        self.texts = load_judge_texts(files[JUDGE_PROMPTS])
        self.dialogues = load_dialogues(files[DIALOGUES])
        self.by_id = {d.id: d for d in self.dialogues}
        self.skip_first = frozenset(self.texts.skip_first_turn_tasks)
        self.reference_tasks = frozenset(self.texts.reference_tasks)
        for dialogue in self.dialogues:
            if dialogue.task not in TASK_INFO:
                raise UserError(
                    f"{files[DIALOGUES]}: dialogue {dialogue.id} has unknown task {dialogue.task!r}"
                )
            if dialogue.task not in self.texts.task_rubrics:
                raise UserError(f"{files[JUDGE_PROMPTS]}: no rubric for task {dialogue.task!r}")
        self.planned = select_dialogues(self.dialogues, settings.limit)
        self.turns: list[tuple[Dialogue, int]] = [
            (d, t) for d in self.planned for t in judged_turns(d, self.skip_first)
        ]
        self.tasks = [code for code in TASK_CODES if any(d.task == code for d in self.planned)]
        self._samples = [self._sample(d) for d in self.planned]
        self._by_sample_id = {s.id: s for s in self._samples}

    def _sample(self, dialogue: Dialogue) -> Sample:
        first_judged = 2 if dialogue.task in self.skip_first else 1
        return Sample(
            id=dialogue.id,
            group=dialogue.task,
            turns=tuple(
                Turn(user=t.user, golden=t.bot, asked=number >= first_judged)
                for number, t in enumerate(dialogue.history, 1)
            ),
            source=dialogue,
        )

    @classmethod
    def data_files(cls) -> list[DataFile]:
        return package_sources(__package__)

    @property
    def samples(self) -> list[Sample]:
        return self._samples

    def all_samples(self) -> list[Sample]:
        return [self._sample(d) for d in self.dialogues]

    @property
    def history(self) -> str:
        return self.context

    # -- identity --------------------------------------------------------------------------
    def prompt_versions(self) -> dict[str, str]:
        commit = str(self.texts.source.get("commit", "unknown"))[:12]
        return {
            "judge_prompts": f"opencompass-mtbench101@{commit}",
            "parser": self.parsers["rating"][self.settings.parser],
        }

    def config_options(self) -> dict[str, Any]:
        return {"context": self.context, "reference_mode": self.reference_mode}

    def results_header(self) -> dict[str, Any]:
        return {"context": self.context, "reference_mode": self.reference_mode}

    # -- judging ---------------------------------------------------------------------------
    def _reference(self, dialogue: Dialogue, turn: int) -> str | None:
        if dialogue.task not in self.reference_tasks:
            return None
        return reference_text(dialogue, turn, self.reference_mode)

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        dialogue: Dialogue = sample.source
        reference = self._reference(dialogue, turn)
        messages = judge_messages(
            self.texts,
            dialogue.task,
            earlier,
            dialogue.history[turn - 1].user,
            answer,
            reference,
        )
        name = f"mtbench101-{dialogue.task}"
        if reference is not None:
            name += f"+ref-{self.reference_mode}"
        return [JudgeTask(prompt_name=name, messages=messages, kind="rating")]

    # -- answer files ----------------------------------------------------------------------
    def load_answer_file(self, path: Path) -> AnswerSet:
        """JSONL rows `{"id", "turn", "answer"}`, one per judged turn."""
        ids = f"ids are {min(self.by_id)}-{max(self.by_id)}" if self.by_id else "no dialogues"
        planned = self._by_sample_id  # (the samples made already; others made here)
        samples = {d.id: planned.get(d.id) or self._sample(d) for d in self.dialogues}
        return load_turn_answers(
            path,
            samples,
            [(d.id, t) for d, t in self.turns],
            unknown_id=lambda i: f"id {i} is not an MT-Bench-101 dialogue ({ids})",
            not_judged=lambda s, t: (
                f"turn {t} of dialogue {s.id} is not judged (the first turn of {s.group} "
                "dialogues is part of the golden context)"
            ),
        )

    # -- results ---------------------------------------------------------------------------
    def describe(self, sample: Sample) -> dict[str, Any]:
        return {"id": sample.id, "task": sample.group}

    @classmethod
    def conversation_score(cls, turns: Mapping[int, float]) -> float | None:
        """A dialogue is scored by its weakest turn (the paper's rule)."""
        return min(turns.values()) if turns else None

    def aggregate(self, judged: Sequence[JudgedTurn]) -> MTBench101Tables:
        outcomes = [
            TurnOutcome(
                item.sample.group or "",
                int(item.sample.id),
                item.turn,
                item.status,
                item.score if item.status == "scored" else None,
            )
            for item in judged
        ]
        mode = cast(Literal["strict", "compat"], self.settings.parser)
        tables, dialogue_scores = score_tables(outcomes, self.tasks, mode)
        interval = None
        if tables["overall"] is not None:
            interval = stratified_bootstrap_ci(
                [list(dialogue_scores.scores[task].values()) for task in self.tasks]
            )
        return MTBench101Tables(
            **tables,
            overall_ci95=list(interval) if interval else None,
            counts={
                "dialogues": len(self.planned),
                "dialogues_scored": sum(len(s) for s in dialogue_scores.scores.values()),
                "incomplete_dialogues": len(dialogue_scores.incomplete),
                "dialogues_with_dropped_turns": len(dialogue_scores.dropped),
            },
            incomplete_dialogue_ids=sorted(dialogue_scores.incomplete),
        )

    @classmethod
    def terminal_table(cls, results: Mapping[str, Any]) -> TextTable:
        turn_numbers = [int(t) for t in results["by_turn"]]
        blanks = ("",) * len(turn_numbers)
        tasks = tuple(
            TableRow(
                (
                    f"{task} {TASK_INFO[task].name}",
                    value,
                    results["by_task_mean_over_turns"].get(task),
                    *(results["by_task_turn"].get(task, {}).get(str(t), "") for t in turn_numbers),
                )
            )
            for task, value in results["by_task"].items()
        )
        tier1 = {info.tier1 for info in TASK_INFO.values()}
        abilities = tuple(
            TableRow((f"{name} (tier {1 if name in tier1 else 2})", value, "", *blanks))
            for name, value in results["by_ability"].items()
        )
        overall = TableRow(
            (
                "overall",
                results["overall"],
                results["overall_mean_over_turns"],
                *(results["by_turn"][str(t)] for t in turn_numbers),
            ),
            bold=True,
        )
        counts = results["counts"]
        notes = [
            TableNote(
                "score = mean of dialogue scores (min over judged turns); avg = mean over "
                f"turns; tN = mean at turn N; {counts['dialogues_scored']}/"
                f"{counts['dialogues']} dialogues scored"
            )
        ]
        if counts["incomplete_dialogues"]:
            notes.append(
                TableNote(
                    f"{counts['incomplete_dialogues']} incomplete dialogue(s) not scored",
                    warning=True,
                )
            )
        if counts["dialogues_with_dropped_turns"]:
            notes.append(
                TableNote(
                    f"{counts['dialogues_with_dropped_turns']} dialogue(s) scored without "
                    "their unparseable turns (compat)",
                    warning=True,
                )
            )
        return TextTable(
            title=f"MT-Bench-101: {results['model']} ({results['context']} context)",
            headers=("task", "score", "avg", *(f"t{t}" for t in turn_numbers)),
            sections=(tasks, abilities, (overall,)),
            notes=tuple(notes),
            names_whole=True,
        )
