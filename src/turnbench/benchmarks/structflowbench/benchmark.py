"""StructFlowBench (Li et al. 2025): 155 golden dialogues, 643 turns, each judged against its
own checklist of constraints (intra-turn and structural: follow-up, refinement, expansion,
summary, recall).

Rules follow the reference implementation (github.com/MLGroupJLU/StructFlowBench; see
docs/BENCHMARKS.md in the shared folder): golden context, every turn answered and judged;
the official judge template in one user message; the JSON verdict list read by the
reference's rules with `--parser compat` (verdicts kept as written, a list of the wrong
length sent again up to 5 times, no judge temperature), and strictly by default (one Yes/No
per constraint, else a re-ask, then a recorded failure; temperature 0); the metrics of its
`score.py`. turnbench adds the golden history as chat messages (the default;
`--history-format flat` sends the reference's single flattened message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

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
    package_sources,
    select_first,
)
from turnbench.benchmarks.datafiles import DataFile
from turnbench.benchmarks.structflowbench.data import (
    DIALOGUES,
    JUDGE_PROMPT,
    Dialogue,
    load_dialogues,
    load_judge_prompt,
)
from turnbench.benchmarks.structflowbench.options import StructFlowBenchOptions
from turnbench.benchmarks.structflowbench.prompts import flat_generation_message, judge_message
from turnbench.benchmarks.structflowbench.scoring import (
    CONSTRAINT_TYPES,
    METRICS,
    TASKS,
    WEIGHTS,
    JudgedConstraints,
    score_tables,
    weights_of,
)
from turnbench.benchmarks.tables import ScoreTables
from turnbench.errors import UserError
from turnbench.types import Message

HISTORY_FORMATS = ("chat", "flat")
JUDGE_PROMPT_NAME = "structflowbench-judge"


class StructFlowMetrics(BaseModel):
    """The four headline metrics (0-1): CSR, the mean over turns of the share of their
    constraints met; ISR, the share of turns meeting every constraint; WCSR, the mean over
    turns of the weighted share (structural constraints weigh 2); DRFR, the share of all
    constraints met."""

    CSR: float | None
    ISR: float | None
    WCSR: float | None
    DRFR: float | None


class StructFlowBenchSettings(BaseModel):
    """The setting StructFlowBench's results name first (`results_header`): how the
    model was shown the earlier turns."""

    history_format: str


class StructFlowBenchTables(ScoreTables):
    """StructFlowBench's tables, keyed exactly as the columns of the published
    `overall_score.csv`: `overall` is WCSR; `by_constraint_type` the share met per
    constraint type; `by_task` the mean WCSR per task; `by_turn` the mean WCSR per turn
    position; `other_verdicts` every verdict other than Yes/No (scored as not met)."""

    metrics: StructFlowMetrics
    by_constraint_type: dict[str, float | None]
    by_task: dict[str, float | None]
    by_turn: dict[str, float | None]
    other_verdicts: list[dict[str, Any]]


class StructFlowBench(Benchmark):
    name = "structflowbench"
    description = (
        "StructFlowBench: 155 golden dialogues (643 turns), every turn judged against its "
        "checklist of intra-turn and structural constraints"
    )
    sample_noun = "dialogues"
    group_kind = "task"
    parsers: ClassVar[ParserTable] = {
        "checklist": {"strict": "checklist-strict", "compat": "checklist-compat"}
    }
    verdict_kind = "checklist"
    default_judge_temperature: ClassVar[Mapping[str, float | None]] = {
        "strict": 0.0,
        "compat": None,  # evaluate.py sends no temperature
    }
    default_max_new_tokens = 4096  # the reference sends no limit; long writing tasks need room
    comparison = ComparisonRule(combine="mean", overall="mean", score_range=(0.0, 1.0))
    options_model = StructFlowBenchOptions
    results_model = StructFlowBenchTables
    header_model = StructFlowBenchSettings
    importers: ClassVar[Mapping[str, str]] = {
        "structflowbench": "turnbench.benchmarks.structflowbench.importer:read_evaluations"
    }
    report = ReportSpec(
        charts=(
            Chart("bars", "by_constraint_type", "Share met per constraint type",
                  "bar chart of the share of constraints met per type",
                  order=CONSTRAINT_TYPES, horizontal=True, scale_max=1.0),
            Chart("radar", "by_task", "WCSR per task", "radar chart of the mean WCSR per task",
                  order=TASKS, scale_max=1.0),
        ),
        tables=(
            ScoreTable("Metrics", "metrics", row_title="metric", order=METRICS),
            ScoreTable("Constraint types (share met)", "by_constraint_type",
                       row_title="constraint type", order=CONSTRAINT_TYPES,
                       row_notes={k: f"(weight {w})" for k, w in WEIGHTS.items()}),
            ScoreTable("Tasks (WCSR)", "by_task", total_field="overall", row_title="task",
                       order=TASKS),
            ScoreTable("WCSR per turn", "by_turn", row_title="turn"),
        ),
        overall_note="StructFlowBench: WCSR, the mean over turns of the weighted share of "
        "constraints met (structural constraints weigh 2)",
        summary_fields=("history_format",),
    )  # fmt: skip

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        super().__init__(files, settings)
        value = settings.options.get("history_format") or "chat"
        if value not in HISTORY_FORMATS:
            raise UserError(
                f"--history-format {value!r} is not one of: {', '.join(HISTORY_FORMATS)}"
            )
        self.history_format = str(value)
        self.template, self.template_source = load_judge_prompt(files[JUDGE_PROMPT])
        self.dialogues = load_dialogues(files[DIALOGUES])
        self._all = [self._sample(d) for d in self.dialogues]
        self._planned = select_first(self._all, settings.limit)

    @staticmethod
    def _sample(dialogue: Dialogue) -> Sample:
        return Sample(
            id=dialogue.id,
            group=dialogue.task,
            turns=tuple(
                Turn(user=turn.user_prompt, golden=turn.assistant_answer)
                for turn in dialogue.whole_conv
            ),
            source=dialogue,
        )

    @classmethod
    def data_files(cls) -> list[DataFile]:
        return package_sources(__package__)

    @property
    def samples(self) -> list[Sample]:
        return self._planned

    def all_samples(self) -> list[Sample]:
        return self._all

    # -- identity --------------------------------------------------------------------------
    def prompt_versions(self) -> dict[str, str]:
        commit = str(self.template_source.get("commit", "unknown"))[:12]
        return {
            "judge_prompts": f"{JUDGE_PROMPT_NAME}@{commit}",
            "parser": self.parsers["checklist"][self.settings.parser],
        }

    def config_options(self) -> dict[str, Any]:
        return {"history_format": self.history_format}

    def results_header(self) -> dict[str, Any]:
        return {"history_format": self.history_format}

    # -- asking ----------------------------------------------------------------------------
    def answer_messages(self, sample: Sample, turn: int, earlier: Sequence[Pair]) -> list[Message]:
        if self.history_format == "chat":
            return super().answer_messages(sample, turn, earlier)
        sampling = self.settings.answer
        messages: list[Message] = []
        if sampling is not None and sampling.system_prompt is not None:
            messages.append({"role": "system", "content": sampling.system_prompt})
        user = sample.turns[turn - 1].user
        messages.append({"role": "user", "content": flat_generation_message(earlier, user)})
        return messages

    # -- judging ---------------------------------------------------------------------------
    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        dialogue: Dialogue = sample.source
        current = dialogue.whole_conv[turn - 1]
        content = judge_message(
            self.template, earlier, current.user_prompt, answer, current.constraints
        )
        return [
            JudgeTask(
                prompt_name=JUDGE_PROMPT_NAME,
                messages=[{"role": "user", "content": content}],
                kind="checklist",
                items=len(current.constraints),
                weights=weights_of(c.type for c in current.constraints),
            )
        ]

    # -- answer files ----------------------------------------------------------------------
    def load_answer_file(self, path: Path) -> AnswerSet:
        """JSONL rows `{"id", "turn", "answer"}`: id = the dialogue's 1-based position in
        StructFlowBench.json, turn = 1-based; one row per turn."""
        return load_turn_answers(
            path,
            {s.id: s for s in self._all},
            [(s.id, t) for s in self._planned for t in s.judged_turns()],
            unknown_id=lambda i: (
                f"id {i} is not a StructFlowBench dialogue (ids are 1-{len(self._all)}, the "
                "positions in StructFlowBench.json)"
            ),
            not_judged=lambda s, t: f"turn {t} of dialogue {s.id} is not judged",
        )

    # -- results ---------------------------------------------------------------------------
    def describe(self, sample: Sample) -> dict[str, Any]:
        return {"id": sample.id, "task": sample.group}

    def aggregate(self, judged: Sequence[JudgedTurn]) -> StructFlowBenchTables:
        turns = []
        for item in judged:
            dialogue: Dialogue = item.sample.source
            constraints = dialogue.whole_conv[item.turn - 1].constraints
            verdicts = item.checklist if item.status == "scored" else None
            turns.append(
                JudgedConstraints(
                    dialogue=dialogue.id,
                    task=dialogue.task,
                    turn=item.turn,
                    types=tuple(c.type for c in constraints),
                    questions=tuple(c.content for c in constraints),
                    verdicts=verdicts,
                )
            )
        return StructFlowBenchTables(**score_tables(turns))

    @classmethod
    def terminal_table(cls, results: Mapping[str, Any]) -> TextTable:
        metrics = results.get("metrics") or {}
        counts = results.get("counts") or {}
        notes = [
            TableNote(
                f"{counts.get('constraints_met', 0)}/{counts.get('constraints', 0)} constraints "
                "met; task = mean WCSR of its turns"
            )
        ]
        if counts.get("other_verdicts"):
            notes.append(
                TableNote(
                    f"{counts['other_verdicts']} verdict(s) other than Yes/No, scored as "
                    "not met (listed under other_verdicts)",
                    warning=True,
                )
            )
        by_type = results.get("by_constraint_type") or {}
        by_task = results.get("by_task") or {}
        return TextTable(
            title=f"StructFlowBench: {results['model']} ({results.get('history_format')} history)",
            headers=("", "score"),
            sections=(
                tuple(TableRow((name, metrics.get(name))) for name in METRICS),
                tuple(TableRow((f"{k} (w{WEIGHTS.get(k, 0)})", v)) for k, v in by_type.items()),
                tuple(TableRow((f"task: {task}", value)) for task, value in by_task.items()),
                (TableRow(("overall (WCSR)", results.get("overall")), bold=True),),
            ),
            notes=tuple(notes),
            names_whole=True,
        )
