"""MT-Bench (Zheng et al. 2023): 80 two-turn questions, graded 1-10 (or compared) by a judge.

Rules follow FastChat's llm_judge exactly (see docs/BENCHMARKS.md in the shared folder):
per-category answer temperatures, self-generated history, the official judge prompts chosen
by name, reference answers for math/reasoning/coding, and FastChat's rating regexes as the
`compat` parser. turnbench's defaults differ only where FastChat is known to be wrong: no
name-matched system prompt, strict parsing with bounded re-asks, failures counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

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
    TableRow,
    TextTable,
    Turn,
    package_sources,
    select_first,
)
from turnbench.benchmarks.datafiles import DataFile, sha256_file
from turnbench.benchmarks.mt_bench.data import (
    JUDGE_PROMPTS,
    QUESTIONS,
    REFERENCES,
    Question,
    load_answer_set,
    load_judge_prompts,
    load_questions,
    load_references,
)
from turnbench.benchmarks.mt_bench.options import MTBenchOptions
from turnbench.benchmarks.mt_bench.prompts import (
    REFERENCE_CATEGORIES,
    judge_prompt_name,
    pair_prompt_name,
    prompt_names,
    render_pairwise_judgment,
    render_single_judgment,
    unversioned,
)
from turnbench.benchmarks.tables import ScoreTables
from turnbench.errors import UserError
from turnbench.stats.scoring import bootstrap_group_cis, bootstrap_mean_ci, mean
from turnbench.types import RequestParams

CATEGORY_TEMPERATURE = {
    "writing": 0.7,
    "roleplay": 0.7,
    "reasoning": 0.0,
    "math": 0.0,
    "coding": 0.0,
    "extraction": 0.0,
    "stem": 0.1,
    "humanities": 0.1,
}
DEFAULT_TEMPERATURE = 0.7  # FastChat's value for a category it does not know
TURNS = ("1", "2")


class MTBenchTables(ScoreTables):
    """MT-Bench's score tables: means per turn ("1", "2"), per category, per category and
    turn, with bootstrap intervals (resampling questions); null where nothing was scored."""

    by_turn: dict[str, float | None]
    by_turn_ci95: dict[str, list[float] | None]
    by_category: dict[str, float | None]
    by_category_ci95: dict[str, list[float] | None]
    by_category_turn: dict[str, dict[str, float | None]]


def answer_temperature(category: str) -> float:
    return CATEGORY_TEMPERATURE.get(category, DEFAULT_TEMPERATURE)


def _as_list(interval: tuple[float, float] | None) -> list[float] | None:
    return list(interval) if interval else None


class MTBench(Benchmark):
    name = "mt-bench"
    description = "MT-Bench: 80 two-turn questions in 8 categories, graded 1-10 by a judge"
    sample_noun = "questions"
    group_kind = "category"
    parsers: ClassVar[ParserTable] = {
        "rating": {"strict": "rating-strict", "compat": "rating-fastchat"},
        "verdict": {"strict": "verdict-strict", "compat": "verdict-fastchat"},
    }
    supports_pairwise = True
    comparison = ComparisonRule(combine="mean", overall="mean", need_complete=False)
    options_model = MTBenchOptions
    exports = ("fastchat",)
    results_model = MTBenchTables
    turns_per_sample = 2
    #: FastChat's `data/mt_bench/` layout (its judge prompts live one level up, in `data/`),
    #: and its forks': reference answers in a folder per judge (`reference_answer/gpt-4/`),
    #: judge prompts named after the language (`judge_prompts_jp.jsonl`)
    folder_layout = (
        FolderFile(QUESTIONS, ("question.jsonl",)),
        FolderFile(
            REFERENCES,
            (
                "reference_answer/gpt-4.jsonl",
                "reference_answer/*.jsonl",
                "reference_answer/gpt-4/*.jsonl",
                "reference_answer/*/*.jsonl",
            ),
            required=False,
        ),
        FolderFile(
            JUDGE_PROMPTS,
            (
                "judge_prompts.jsonl",
                "../judge_prompts.jsonl",
                "judge_prompts*.jsonl",
                "../judge_prompts*.jsonl",
            ),
            required=False,
            published_fallback=True,
        ),
    )
    fastchat_files: ClassVar[Mapping[str, str]] = {
        QUESTIONS: "question.jsonl",
        REFERENCES: "reference_answer/gpt-4.jsonl",
        JUDGE_PROMPTS: "judge_prompts.jsonl",
    }
    importers: ClassVar[Mapping[str, str]] = {
        "fastchat": "turnbench.benchmarks.mt_bench.importer:read_fastchat"
    }
    report = ReportSpec(
        charts=(
            Chart("radar", "by_category", "MT-Bench score per category", "radar chart of "
                  "MT-Bench category scores"),
            Chart("turn_bars", "by_category_turn", "Turn 1 vs turn 2 per category",
                  "bar charts of turn 1 and turn 2 scores per category", order=TURNS),
        ),
        tables=(
            ScoreTable(
                None,
                "by_category",
                turn_field="by_category_turn",
                turns=TURNS,
                total_field="overall",
                total_turn_field="by_turn",
                row_title="category",
            ),
        ),
        overall_note="MT-Bench: mean over all scored turns",
    )  # fmt: skip

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        super().__init__(files, settings)
        self.questions = load_questions(files[QUESTIONS])
        self.by_id = {q.question_id: q for q in self.questions}
        self.prompts = load_judge_prompts(files[JUDGE_PROMPTS])
        # FastChat's names (`single-v1`), or its forks' unversioned ones (`single`)
        self.prompt_names = prompt_names(self.prompts)
        # a user's own set may have no reference answers (then it needs no reference category)
        self.references = (
            load_references(files[REFERENCES], self.by_id) if REFERENCES in files else {}
        )
        self._reference_sha: str | None = None
        reference_file = settings.options.get("reference_file")
        if reference_file is not None:
            path = Path(reference_file)
            self.references.update(load_references(path, self.by_id))
            self._reference_sha = sha256_file(path)
        self._all = [self._sample(q) for q in self.questions]
        self._planned = select_first(self._all, settings.limit)
        for sample in self._planned:
            question: Question = sample.source
            for turn in range(1, len(question.turns) + 1):
                name = judge_prompt_name(question.category, turn)
                if name not in self.prompt_names:
                    raise UserError(
                        f"{files[JUDGE_PROMPTS]}: judge prompt {name!r} missing (nor its "
                        f"unversioned name {unversioned(name)!r}); the file has "
                        f"{', '.join(sorted(self.prompts)) or 'no prompts'}"
                    )
            if question.category in REFERENCE_CATEGORIES and question.question_id not in (
                self.references
            ):
                where = (
                    f"{files[REFERENCES]} has none for it"
                    if REFERENCES in files
                    else "no reference answer file was found (looked for "
                    + ", ".join(self.folder_layout[1].names)
                    + ")"
                )
                raise UserError(
                    f"no reference answer for question {question.question_id} "
                    f"({question.category}): {where}"
                )

    @staticmethod
    def _sample(question: Question) -> Sample:
        return Sample(
            id=question.question_id,
            group=question.category,
            turns=tuple(Turn(user=text) for text in question.turns),
            source=question,
        )

    @classmethod
    def data_files(cls) -> list[DataFile]:
        return package_sources(__package__)

    @property
    def samples(self) -> list[Sample]:
        return self._planned

    def all_samples(self) -> list[Sample]:
        return self._all

    @property
    def history(self) -> str:
        return "self"

    # -- identity --------------------------------------------------------------------------
    def _versions(self, names: set[str], kind: str) -> dict[str, str]:
        parser = self.parsers[kind][self.settings.parser]  # type: ignore[index]
        shown = sorted(self.prompt_names.get(name, name) for name in names)
        versions = {"judge_prompts": "fastchat:" + ",".join(shown), "parser": parser}
        return versions

    def _turns(self, sample: Sample) -> range:
        return range(1, len(sample.turns) + 1)

    def prompt_versions(self) -> dict[str, str]:
        names = {judge_prompt_name(s.group or "", t) for s in self._planned for t in self._turns(s)}
        return self._versions(names, "rating")

    def pairwise_prompt_versions(self) -> dict[str, str]:
        names = {
            pair_prompt_name(s.group in REFERENCE_CATEGORIES, t)
            for s in self._planned
            for t in self._turns(s)
        }
        return self._versions(names, "verdict")

    def reference_sha256(self) -> str | None:
        return self._reference_sha

    def check_pairwise(self) -> None:
        for sample in self._planned:
            for turn in range(1, len(sample.turns) + 1):
                name = pair_prompt_name(sample.group in REFERENCE_CATEGORIES, turn)
                if name not in self.prompt_names:
                    raise UserError(
                        f"the MT-Bench judge prompts file has no prompt {name!r} (nor "
                        f"{unversioned(name)!r}); it has {', '.join(sorted(self.prompts))}"
                    )

    # -- asking ----------------------------------------------------------------------------
    def answer_params(self, sample: Sample) -> RequestParams:
        sampling = self.settings.answer
        assert sampling is not None
        temperature = sampling.temperature
        if temperature is None:
            temperature = answer_temperature(sample.group or "")
        return RequestParams(
            temperature=temperature, max_tokens=sampling.max_tokens, n=1, extra=sampling.extra
        )

    def _references(self, sample: Sample) -> list[str] | None:
        if sample.group in REFERENCE_CATEGORIES:
            return self.references[int(sample.id)]
        return None

    def reference_answer(self, sample: Sample, turn: int) -> str | None:
        if sample.group not in REFERENCE_CATEGORIES:
            return None
        references = self.references.get(int(sample.id))
        if references is None or not 1 <= turn <= len(references):
            return None
        return references[turn - 1]

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        name = self.prompt_names[judge_prompt_name(sample.group or "", turn)]
        questions = [t.user for t in sample.turns]
        answers = [a for _, a in earlier] + [answer]
        messages = render_single_judgment(
            self.prompts[name], questions, answers, self._references(sample), turn
        )
        return [JudgeTask(prompt_name=name, messages=messages, kind="rating")]

    def pair_task(
        self,
        sample: Sample,
        turn: int,
        conversation_a: tuple[Sequence[Pair], str],
        conversation_b: tuple[Sequence[Pair], str],
    ) -> JudgeTask:
        name = self.prompt_names[pair_prompt_name(sample.group in REFERENCE_CATEGORIES, turn)]
        questions = [t.user for t in sample.turns]
        answers_a = [a for _, a in conversation_a[0]] + [conversation_a[1]]
        answers_b = [a for _, a in conversation_b[0]] + [conversation_b[1]]
        messages = render_pairwise_judgment(
            self.prompts[name], questions, answers_a, answers_b, self._references(sample), turn
        )
        return JudgeTask(prompt_name=name, messages=messages, kind="verdict")

    # -- answer files ----------------------------------------------------------------------
    def load_answer_file(self, path: Path) -> AnswerSet:
        """A FastChat `model_answer` file."""
        return load_answer_set(path, self.by_id, [int(s.id) for s in self._planned])

    # -- results ---------------------------------------------------------------------------
    def describe(self, sample: Sample) -> dict[str, Any]:
        return {"question_id": sample.id}

    def aggregate(self, judged: Sequence[JudgedTurn]) -> MTBenchTables:
        scored = [
            (item.sample, item.turn, item.score)
            for item in judged
            if item.status == "scored" and item.score is not None
        ]
        by_turn = {t: mean(s for _, turn, s in scored if str(turn) == t) for t in TURNS}
        categories = list(dict.fromkeys(s.group or "" for s in self._planned))
        by_category = {c: mean(s for q, _, s in scored if q.group == c) for c in categories}
        by_category_turn = {
            c: {
                t: mean(s for q, turn, s in scored if q.group == c and str(turn) == t)
                for t in TURNS
            }
            for c in categories
        }
        per_question: dict[Any, list[float]] = defaultdict(list)
        for sample, _, score in scored:
            per_question[sample.id].append(score)
        interval = bootstrap_mean_ci(list(per_question.values()))
        turn_cis = bootstrap_group_cis((str(t), q.id, s) for q, t, s in scored)
        category_cis = bootstrap_group_cis((q.group, q.id, s) for q, _, s in scored)
        return MTBenchTables(
            overall=mean(s for _, _, s in scored),
            overall_ci95=_as_list(interval),
            by_turn=by_turn,
            by_turn_ci95={t: _as_list(turn_cis.get(t)) for t in by_turn},
            by_category=by_category,
            by_category_ci95={c: _as_list(category_cis.get(c)) for c in categories},
            by_category_turn=by_category_turn,
        )

    @classmethod
    def terminal_table(cls, results: Mapping[str, Any]) -> TextTable:
        rows = tuple(
            TableRow(
                (
                    category,
                    results["by_category_turn"][category]["1"],
                    results["by_category_turn"][category]["2"],
                    value,
                )
            )
            for category, value in results["by_category"].items()
        )
        totals = ("overall", results["by_turn"]["1"], results["by_turn"]["2"], results["overall"])
        return TextTable(
            title=f"MT-Bench: {results['model']}",
            headers=("category", "turn 1", "turn 2", "mean"),
            sections=(rows, (TableRow(totals, bold=True),)),
        )
