"""What a benchmark is: rules and content, declared; the engine (`turnbench.engine`) runs it.

A benchmark declares
- its samples: dialogues of turns (the user's message, the dataset's own answer, whether the
  model is asked that turn and whether it is judged), read from its data files;
- how the model is asked: the history it sees (`golden`: the dataset's answers to earlier
  turns, every judged turn independent; `self`: its own earlier answers, turns in order), the
  messages of a turn, the sampling per sample;
- which judge requests a judged turn gets (prompt, messages, the kind of verdict and the
  parser that reads it), and for pairwise judging the request comparing two answers;
- how judged turns aggregate into its scores, its comparison rule, what its report shows
  and what its terminal table holds (as data: it never draws);
- how its answer files are read, for judge-only runs.

Everything else (resume, retries, logging, judge-only runs, pairwise games, estimates, the
shared parts of results) belongs to the engine. A benchmark written outside turnbench
subclasses `Benchmark` and is named `package.module:ClassName` on the command line.
"""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel

from turnbench.benchmarks.answers import load_turn_answers
from turnbench.benchmarks.datafiles import DataFile, DataLocator
from turnbench.benchmarks.options import BenchmarkOptions, validate_options
from turnbench.benchmarks.tables import GroupTables, ScoreTables
from turnbench.errors import UserError
from turnbench.judging.formats import ParserMode, ReplyFormat, VerdictKind, standard_format
from turnbench.samples import AnswerSet as AnswerSet
from turnbench.samples import History as History
from turnbench.samples import JudgeTask as JudgeTask
from turnbench.samples import Pair as Pair
from turnbench.samples import Sample as Sample
from turnbench.samples import Turn as Turn
from turnbench.samples import UserAsk as UserAsk
from turnbench.samples import UserTurn as UserTurn
from turnbench.stats.scoring import bootstrap_mean_ci, mean
from turnbench.types import Message, RequestParams, SamplingConfig

if TYPE_CHECKING:
    from turnbench.engine.drivers import Driver, WorkSpec

ParserTable = Mapping[VerdictKind, Mapping[ParserMode, str]]


@dataclass(frozen=True)
class ComparisonRule:
    """How `turnbench compare` pairs and aggregates this benchmark's samples."""

    combine: Literal["mean", "min"] = "mean"  # judged turns -> one sample score
    overall: Literal["mean", "mean_of_groups"] = "mean"  # samples -> overall
    need_complete: bool = False  # pair only samples with no failed or missing turn
    score_range: tuple[float, float] = (1.0, 10.0)


@dataclass(frozen=True)
class Chart:
    """One chart of the report, declared as data; `report/` renders it.

    kind: "radar" or "bars" over `field` (a {group: score} table), "turn_bars" over
    `field` ({group: {turn: score}}, one panel per model), "turn_lines" over `field`
    ({group: {turn: score}}, one panel per group), "ability_bars" over `field` with `order`,
    "strips" over `field` ({series: {sample: [scores]}}: each sample's repeated scores, one
    chart per model).
    """

    kind: Literal["radar", "bars", "turn_bars", "turn_lines", "strips"]
    field: str
    title: str
    alt: str
    order: tuple[str, ...] = ()
    horizontal: bool = False
    scale_max: float = 10.0  # the axis' top: 10 for 1-10 ratings, 1 for shares met


@dataclass(frozen=True)
class ScoreTable:
    """A table of the report: one row per key of `field`, one column per model.

    `turn_field` adds per-turn columns (turns `turns`); `total_field`/`total_turn_field`
    give the closing "overall" row; `notes` label rows (e.g. "(tier 1)"). With `columns`
    ((key, heading) pairs) each row of `field` is an object of several numbers, one column
    each (three rates per suite, say), and `total_columns` the overall row's own
    keys of the results.
    """

    title: str | None
    field: str
    turn_field: str | None = None
    turns: tuple[str, ...] = ()
    total_field: str | None = None
    total_turn_field: str | None = None
    row_title: str = "group"
    row_notes: Mapping[str, str] = field(default_factory=dict)
    order: tuple[str, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()
    total_columns: bool = False


@dataclass(frozen=True)
class ReportSpec:
    """What the HTML report shows for this benchmark."""

    charts: tuple[Chart, ...] = ()
    tables: tuple[ScoreTable, ...] = ()
    overall_note: str = "mean judge score over all scored turns"
    summary_fields: tuple[str, ...] = ()  # extra results keys shown beside the overall


Cell = str | float | None  # a string as written, a number with two decimals, None as "-"


@dataclass(frozen=True)
class TableRow:
    cells: tuple[Cell, ...]
    bold: bool = False


@dataclass(frozen=True)
class TableNote:
    text: str
    warning: bool = False  # shown in the warning colour


@dataclass(frozen=True)
class TextTable:
    """One model's results as the terminal shows them, declared as data: `turnbench.cli`
    draws it and escapes every cell (names come from data files). Sections are separated by
    a rule; `names_whole` keeps the first column unwrapped (a narrow terminal shortens the
    names, never the numbers)."""

    title: str
    headers: tuple[str, ...]
    sections: tuple[tuple[TableRow, ...], ...]
    notes: tuple[TableNote, ...] = ()
    names_whole: bool = False


def generic_table(results: Mapping[str, Any]) -> TextTable:
    """Any benchmark's results: every {group: score} table it reports, then the overall."""
    rows = tuple(
        TableRow((f"{name[3:]}: {group}", score))
        for name, value in results.items()
        if name.startswith("by_") and isinstance(value, dict)
        for group, score in value.items()
        if score is None or isinstance(score, int | float)
    )
    overall = results.get("overall")
    return TextTable(
        title=f"{results.get('benchmark')}: {results.get('model')}",
        headers=("group", "score"),
        sections=(rows, (TableRow(("overall", overall), bold=True),)),
    )


@dataclass(frozen=True)
class FolderFile:
    """One data file of a benchmark's folder layout (a user's translated or domain version
    of it, run with `--benchmark FOLDER`).

    `key` is the data path the benchmark reads it as (a `files` key, e.g.
    "mt_bench/question.jsonl"); `names` are the paths looked for in the folder, in order (a
    `*` pattern must match exactly one file). A file the folder lacks is an error when
    `required`; otherwise the published file is used instead when `published_fallback`
    (judge prompts, say), and the benchmark does without it when not (reference answers of
    other questions would be wrong).
    """

    key: str
    names: tuple[str, ...]
    required: bool = True
    published_fallback: bool = False


@dataclass
class BenchmarkSettings:
    """Choices that shape a benchmark's requests, resolved before the run starts."""

    parser: ParserMode = "strict"
    limit: int | None = None
    answer: SamplingConfig | None = None  # None in judge-only runs
    options: dict[str, Any] = field(default_factory=dict)
    user_model: str | None = None  # the simulated user's spec, when a user model plays it
    model: str | None = None  # the model under test's spec (a `run`)


def package_sources(package: str) -> list[DataFile]:
    """The data files a benchmark package declares in its `sources.json`."""
    text = resources.files(package).joinpath("sources.json").read_text("utf-8")
    return [DataFile(**entry) for entry in json.loads(text)["files"]]


def select_first(samples: Sequence[Sample], limit: int | None) -> list[Sample]:
    """The first `limit` samples of every group (in the given order), or all of them."""
    if limit is None:
        return list(samples)
    taken: dict[str | None, int] = {}
    chosen = []
    for sample in samples:
        if taken.get(sample.group, 0) < limit:
            taken[sample.group] = taken.get(sample.group, 0) + 1
            chosen.append(sample)
    return chosen


class Benchmark(ABC):
    """Rules and content of one benchmark. Subclasses set the class attributes and
    implement the abstract methods; the defaults cover the common case."""

    name: ClassVar[str]
    description: ClassVar[str]
    sample_noun: ClassVar[str] = "samples"  # "questions", "dialogues"
    group_kind: ClassVar[str] = "group"  # "category", "task"
    #: parser registry names per verdict kind and --parser mode
    parsers: ClassVar[ParserTable] = {
        "rating": {"strict": "rating-strict", "compat": "rating-strict"},
        "verdict": {"strict": "verdict-strict", "compat": "verdict-fastchat"},
        "checklist": {"strict": "checklist-strict", "compat": "checklist-compat"},
    }
    verdict_kind: ClassVar[VerdictKind] = "rating"  # what single grading asks the judge for
    #: judge temperature per --parser mode when --judge-temperature is not given (None: the
    #: field is not sent, as a reference implementation that sends none)
    default_judge_temperature: ClassVar[Mapping[ParserMode, float | None]] = {
        "strict": 0.0,
        "compat": 0.0,
    }
    default_answer_temperature: ClassVar[float] = 0.0
    default_max_new_tokens: ClassVar[int] = 1024
    supports_pairwise: ClassVar[bool] = False
    comparison: ClassVar[ComparisonRule] = ComparisonRule()
    report: ClassVar[ReportSpec] = ReportSpec()
    #: its own options (`-B key=value`, `benchmark_options=`), a pydantic model
    options_model: ClassVar[type[BenchmarkOptions]] = BenchmarkOptions
    #: extra export formats its runs support (`turnbench export --format`): "fastchat" for
    #: benchmarks whose samples are FastChat questions of `turns_per_sample` turns
    exports: ClassVar[tuple[str, ...]] = ()
    turns_per_sample: ClassVar[int] = 0
    #: the data files a FastChat export copies, so `turnbench import` reads it back: file key
    #: -> its place in FastChat's data folder
    fastchat_files: ClassVar[Mapping[str, str]] = {}
    #: the `ScoreTables` subclass `aggregate` returns (documented in the results schema, and
    #: checked against it for this benchmark's runs); None: the default `GroupTables`
    results_model: ClassVar[type[ScoreTables] | None] = None
    #: the keys `results_header` gives (its settings), documented beside `results_model`
    header_model: ClassVar[type[BaseModel] | None] = None
    #: the typed outcome of a conversation its driver scores whole (`Scored.outcome`,
    #: logged as the sample record's `detail`): readers get it back as this model
    #: (`turnbench.conversation.Conversation.outcome`); it may say why a conversation
    #: failed in a line (a `why()` method). None: the outcome is read as logged
    outcome_model: ClassVar[type[BaseModel] | None] = None
    #: the template (a file beside the benchmark's module) that draws an `outcome` in the
    #: report and the viewer; None: its fields are listed as they are
    outcome_template: ClassVar[str | None] = None
    #: `aggregate` reads `JudgedTurn.answer` (deterministic checks): results then read the
    #: answer texts back from the log, which they otherwise never hold
    needs_answer_text: ClassVar[bool] = False
    #: what `--benchmark` must name to find this class again (a benchmark file's or data
    #: folder's absolute path); recorded as the run's `benchmark_ref`
    source_ref: ClassVar[str | None] = None
    #: whether its turns get judge requests at all: False for a benchmark scored from the
    #: answers alone (BLEU), whose runs need no --judge
    needs_judge: ClassVar[bool] = True
    #: whether its conversations take a user model (`--user-model`): "no", "optional"
    #: (templates otherwise) or "required" (scenarios with a persona and a goal)
    user_model: ClassVar[Literal["no", "optional", "required"]] = "no"
    #: the simulated user's slips results.json counts (`simulator.conversations_with`), each
    #: listed even at 0: codes its user turns' checks give (`engine.user_quality`)
    simulator_problems: ClassVar[tuple[str, ...]] = (
        "several_shards", "invented", "answered_itself", "role_switch", "ended_before_start",
        "recited_instructions",
    )  # fmt: skip
    #: token limits for an embedded model (`local/...`) when no flag sets them: the answer's,
    #: and the simulated user's (None: the usual defaults). A smoke run of a long
    #: conversation with the 135M model would otherwise take hours for a meaningless score.
    embedded_max_new_tokens: ClassVar[int | None] = None
    embedded_user_max_tokens: ClassVar[int | None] = None
    #: the files of this benchmark's data in a folder of the user's own (its first entry's
    #: first name marks the layout): `--benchmark FOLDER` runs such a folder by these rules
    folder_layout: ClassVar[tuple[FolderFile, ...]] = ()
    #: `turnbench import --format NAME` formats of other tools' finished evaluations of this
    #: benchmark: NAME -> "module:function", a `turnbench.interop.importing.Reader`
    importers: ClassVar[Mapping[str, str]] = {}

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        self.files = files
        self.settings = settings
        settings.options = validate_options(self.name, self.options_model, settings.options)
        if settings.parser not in ("strict", "compat"):
            raise UserError(f"unknown parser {settings.parser!r} (use strict or compat)")

    @classmethod
    def outcome_template_path(cls) -> Path | None:
        """Where `outcome_template` is: beside the module that defines the benchmark."""
        if cls.outcome_template is None:
            return None
        for klass in cls.__mro__:
            if "outcome_template" in vars(klass):
                return Path(inspect.getfile(klass)).parent / cls.outcome_template
        return None

    @classmethod
    def conversation_score(cls, turns: Mapping[int, float]) -> float | None:
        """A conversation judged turn by turn, as one number (`turnbench export --format
        conversations`): the mean of its judged turns' scores by default."""
        return sum(turns.values()) / len(turns) if turns else None

    # -- content ---------------------------------------------------------------------------
    @classmethod
    def data_files(cls) -> list[DataFile]:
        """The pinned data files this benchmark reads (looked up, verified, downloaded)."""
        return []

    @classmethod
    def locate_files(cls, locator: DataLocator) -> dict[str, Path]:
        """The files to read: the pinned `data_files`, verified (downloaded when missing). A
        benchmark that brings its own files (a user's benchmark file or data folder) returns
        them through `locator.record_unpinned`, which records their checksums instead."""
        entries = cls.data_files()
        return locator.require_files(cls.name, entries) if entries else {}

    def all_samples(self) -> list[Sample]:
        """Every sample of the data, in order (the planned ones are a subset; reports show
        them all). A benchmark defines this, or `samples` itself."""
        raise NotImplementedError(f"{type(self).__name__} defines neither all_samples nor samples")

    @cached_property
    def samples(self) -> list[Sample]:
        """The planned samples: the first --limit of each group of `all_samples`."""
        return select_first(self.all_samples(), self.settings.limit)

    def limit_to(self, limit: int | None) -> None:
        """Plan the first `limit` samples of each group from now on (an import's plan
        follows the samples its files hold)."""
        self.settings.limit = limit
        self.__dict__.pop("samples", None)

    #: the history a later turn is asked with: "golden" (the dataset's answers to earlier
    #: turns) or "self" (the model's own); a benchmark whose option chooses overrides it
    history: History = "golden"

    def driver(self, work: WorkSpec) -> Driver:
        """The driver of this benchmark's conversations (`turnbench.engine.drivers`): by
        default the one of its `history`. A benchmark with another kind of conversation
        (an agent with tools, say) returns its own."""
        from turnbench.engine.drivers import BY_HISTORY  # (readers of finished runs never run one)

        return BY_HISTORY[self.history](work)

    # -- asking the model ------------------------------------------------------------------
    def answer_params(self, sample: Sample) -> RequestParams:
        sampling = self.settings.answer
        assert sampling is not None
        temperature = sampling.temperature
        if temperature is None:
            temperature = self.default_answer_temperature
        return RequestParams(
            temperature=temperature, max_tokens=sampling.max_tokens, n=1, extra=sampling.extra
        )

    def answer_messages(self, sample: Sample, turn: int, earlier: Sequence[Pair]) -> list[Message]:
        """[system?, user1, assistant1, ..., user_turn]: chat messages for one answer."""
        sampling = self.settings.answer
        messages: list[Message] = []
        if sampling is not None and sampling.system_prompt is not None:
            messages.append({"role": "system", "content": sampling.system_prompt})
        for question, answer in earlier:
            messages.append({"role": "user", "content": question})
            messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": sample.turns[turn - 1].user})
        return messages

    def user_turn(
        self, sample: Sample, turn: int, earlier: Sequence[Pair]
    ) -> UserTurn | UserAsk | None:
        """With `history = "simulated"`: the user's message of `turn`, made now from the
        conversation so far (`earlier`: each earlier user turn with the model's answer):
        a `UserTurn` (a template's), a `UserAsk` (the user model writes it), or None when
        the conversation has ended. The engine logs it before the model is asked,
        and asks this only for a turn the log does not hold yet."""
        raise NotImplementedError(f"{type(self).__name__} has no simulated user turns")

    # -- judging ---------------------------------------------------------------------------
    @abstractmethod
    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        """The judge requests for the answer to `turn`, given the conversation before it.

        Which requests a turn gets (their criteria) must not depend on the answer's text.
        An empty list is allowed: the turn is scored by `aggregate` from its answer alone.
        """

    def pair_task(
        self,
        sample: Sample,
        turn: int,
        conversation_a: tuple[Sequence[Pair], str],
        conversation_b: tuple[Sequence[Pair], str],
    ) -> JudgeTask:
        """The request comparing two models' answers to `turn` (A first)."""
        raise UserError(f"pairwise judging is not available for --benchmark {self.name}")

    def check_pairwise(self) -> None:
        """Refuse a pairwise run before anything is written, if it cannot be judged."""
        if not self.supports_pairwise:
            raise UserError(f"pairwise judging is not available for --benchmark {self.name}")

    def reply_format(self, task: JudgeTask) -> ReplyFormat:
        parser = self.parsers[task.kind][self.settings.parser]
        return standard_format(task.kind, parser, items=task.items, weights=task.weights)

    def prompt_versions(self) -> dict[str, str]:
        """Names and versions of the judge prompts and parser (part of the run identity:
        a resumed run refuses other ones). By default, the prompt names the first sample's
        judge requests carry (change the name when the text changes) and the parsers."""
        sample = self.samples[0] if self.samples else None
        names: list[str] = []
        if sample is not None:
            for turn in sample.judged_turns():
                earlier = [(t.user, t.golden or "") for t in sample.turns[: turn - 1]]
                names += [task.prompt_name for task in self.judge_tasks(sample, turn, earlier, "")]
        parsers = self.parsers[self.verdict_kind]
        return {
            "judge_prompts": ",".join(dict.fromkeys(names)),
            "parser": parsers[self.settings.parser],
        }

    def pairwise_prompt_versions(self) -> dict[str, str]:
        return self.prompt_versions()

    def config_options(self) -> dict[str, Any]:
        """Benchmark settings that must not change when a run is resumed."""
        return {}

    def reference_sha256(self) -> str | None:
        return None

    # -- answer files ----------------------------------------------------------------------
    def load_answer_file(self, path: Path) -> AnswerSet:
        """One answer file (one model, named after the file), validated; by default the
        generic `{"id", "turn", "answer"}` lines, one per judged turn."""
        return load_turn_answers(
            path,
            {sample.id: sample for sample in self.all_samples()},
            [(sample.id, turn) for sample in self.samples for turn in sample.judged_turns()],
            unknown_id=lambda sample_id: f"id {sample_id!r} is not a {self.name} sample",
            not_judged=lambda sample, turn: f"turn {turn} of {sample.id} is not judged",
            answered=Sample.asked_turns if self.history == "self" else Sample.judged_turns,
        )

    def reference_answer(self, sample: Sample, turn: int) -> str | None:
        """The reference answer the judge is shown for this turn, if the benchmark has one
        (MT-Bench's math, reasoning and coding questions); shown to human annotators too."""
        return None

    # -- results ---------------------------------------------------------------------------
    def describe(self, sample: Sample) -> dict[str, Any]:
        """How results name a sample (e.g. in `parse_failures`)."""
        return {"sample_id": sample.id}

    def aggregate(self, judged: Sequence[JudgedTurn]) -> ScoreTables:
        """This benchmark's score tables for one model (unrounded), as its `results_model`:
        at least `overall` and `overall_ci95`, with any `counts` of its own. By default the
        mean score of the scored turns with a bootstrap interval over samples, and the mean
        of each group as `by_<group_kind>`."""
        scored = [(j.sample, j.score) for j in judged if j.score is not None]
        groups = list(dict.fromkeys(sample.group for sample in self.samples))
        clusters: dict[object, list[float]] = {}
        for sample, score in scored:
            clusters.setdefault(sample.id, []).append(score)
        interval = bootstrap_mean_ci(list(clusters.values()))
        return GroupTables(
            overall=mean(score for _, score in scored),
            overall_ci95=list(interval) if interval is not None else None,
            group_kind=self.group_kind,
            by_group={
                group: mean(score for sample, score in scored if sample.group == group)
                for group in groups
            },
        )

    def aggregate_samples(self, scored: Sequence[ScoredSample]) -> ScoreTables:
        """The score tables of a benchmark whose driver scores whole samples (a
        conversation's outcome: `SampleRecord`), for one model: by default the mean score of
        the scored samples with a bootstrap interval over samples (the trials of a sample
        together), and the mean of each group as `by_<group_kind>`."""
        done = [(item.sample, item.score) for item in scored if item.score is not None]
        groups = list(dict.fromkeys(sample.group for sample in self.samples))
        clusters: dict[object, list[float]] = {}
        for sample, score in done:
            clusters.setdefault(sample.id, []).append(score)
        interval = bootstrap_mean_ci(list(clusters.values()))
        return GroupTables(
            overall=mean(score for _, score in done),
            overall_ci95=list(interval) if interval is not None else None,
            group_kind=self.group_kind,
            by_group={
                group: mean(score for sample, score in done if sample.group == group)
                for group in groups
            },
        )

    def results_header(self) -> dict[str, Any]:
        """Keys shown right after `benchmark`/`model`/`judge`/`complete` (e.g. options;
        `header_model` documents them), before the `aggregate` tables."""
        return {}

    @classmethod
    def terminal_table(cls, results: Mapping[str, Any]) -> TextTable:
        """One model's results for the terminal (a class method: a finished run's results
        are shown without loading the benchmark's data)."""
        return generic_table(results)


@dataclass(frozen=True)
class JudgedTurn:
    """One planned judged turn of one model (one per judge request of the turn), as the log
    has it, with the model's (cleaned) answer when it has one.

    A turn that gets no judge request (a benchmark whose checks of that turn need no judge)
    is one item with criterion None: "scored" once the turn is answered, else "pending";
    the benchmark scores it from `answer`. An answer cut off inside <think> makes every item
    of its turn "failed" (`unclosed_think`, with the reason), judged or not.
    """

    sample: Sample
    turn: int
    status: Literal["scored", "failed", "pending"]
    score: float | None = None
    checklist: tuple[str, ...] | None = None
    reasks: int = 0
    reason: str | None = None  # why it failed
    criterion: str | None = None
    scoring: str | None = None  # with --judge-scoring weighted: "weighted" or "parsed-fallback"
    answer: str | None = None
    #: the answer ended inside an unclosed <think> block: "failed", not judged, no score
    unclosed_think: bool = False


@dataclass(frozen=True)
class ScoredSample:
    """One planned sample a driver scores as a whole (`trial` of several), as the log has
    it: "scored" once its `SampleRecord` is logged (its score, how it ended, and the
    benchmark's typed explanation `detail`), else "pending"."""

    sample: Sample
    trial: int | None
    status: Literal["scored", "pending"]
    score: float | None = None
    ended: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
