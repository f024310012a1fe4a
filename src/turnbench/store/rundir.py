"""Reading finished run directories: what reports, comparisons, exports and the API use.

A run directory holds `results.json` (the summary rebuilt from the log) and `log.jsonl` (the
truth). Readers here never lock or modify the directory, so a report can be made while a run
is still going: `read_records` ignores a torn last line. Records are read by their fields,
never by splitting their keys. Sample ids are compared as strings everywhere in this module,
because the log keeps them as JSON numbers or strings depending on the benchmark.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from turnbench.benchmarks.base import Benchmark
from turnbench.benchmarks.recorded import (
    NamedBenchmark,
    plugin_matches,
    plugin_mismatch,
    plugin_named_by,
    plugin_not_named,
    recorded_benchmark,
)
from turnbench.conversation import Conversation
from turnbench.errors import UserError
from turnbench.journal.conversations import (
    ConversationId,
    Parts,
    conversation_parts,
    read_conversation,
)
from turnbench.journal.logindex import (
    GROUP_META_KEYS,
    AnswerDone,
    JudgmentDone,
    LogIndex,
    SampleDone,
    record_group,
)
from turnbench.journal.runlog import (
    LOG_NAME,
    line_start_near,
    parse_record_bytes,
    read_records,
    record_problem,
    scan_records,
)
from turnbench.store.parallel import can_fork, forked
from turnbench.store.resultsfile import RESULTS_NAME
from turnbench.textio import describe_validation_error, read_json
from turnbench.types import AnswerRecord, FailureRecord, JudgmentRecord, LogRecord

if TYPE_CHECKING:
    from turnbench.results.shapes import ModelResults, ResultsModel

PAIRWISE_MODES = frozenset({"pairwise", "pairwise-all"})
__all__ = ["GROUP_META_KEYS", "record_group"]  # (their home is logindex; imported from here)

Warn = Callable[[str], None]
TurnKey = tuple[str, int]  # (sample id as text, turn)
#: one model's latest answers and (first judge's) single-grading judgments per turn
EntryWork = tuple[dict[TurnKey, AnswerDone], dict[TurnKey, JudgmentDone]]
EMPTY_WORK: EntryWork = ({}, {})


class ResultsHeader(BaseModel):
    """The keys of results.json every reader relies on; everything else is optional."""

    model_config = ConfigDict(extra="allow")

    benchmark: str
    judge: str
    complete: bool | None = None
    model: str | None = None
    models: dict[str, dict[str, Any]] | None = None
    provenance: dict[str, Any] = {}


def sample_sort_key(sample_id: str) -> tuple[int, int | str]:
    """Numeric ids in numeric order, then other ids alphabetically."""
    return (0, int(sample_id)) if sample_id.lstrip("-").isdigit() else (1, sample_id)


class _AnswerText(BaseModel):
    text: str


class _Replies(BaseModel):
    outputs: list[str]


_ANSWER_TEXT = TypeAdapter(_AnswerText)
_REPLIES = TypeAdapter(_Replies)


class _CollectorPause:
    """Python's cyclic garbage collector off while logs are read: reading builds and drops
    a record per line, none in a cycle, while the index it keeps grows, so the collector
    would walk that growing index again and again (a tenth of the read of a 180 MB log)
    and free nothing. It is on again when the last reader is done, if it was on before."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readers = 0
        self._was_enabled = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._readers == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._readers += 1
        try:
            yield
        finally:
            with self._lock:
                self._readers -= 1
                if self._readers == 0 and self._was_enabled:
                    gc.enable()


_collector_paused = _CollectorPause()

SPLIT_BYTES = 32 << 20  # a log this large or larger is read in two parts at once


def _split_point(path: Path, parallel: bool | None) -> int | None:
    """Where the part of the log read by a second process starts (the first line after
    its middle byte); None: read in one pass (`parallel` False, or None and a log smaller
    than SPLIT_BYTES; no second core; no line starts after the middle)."""
    if parallel is False or not can_fork():
        return None
    try:
        size = path.lstat().st_size
    except OSError:
        return None
    if size < 2 or (parallel is None and size < SPLIT_BYTES):
        return None
    return line_start_near(path, size // 2)


class RunRecords:
    """What readers of a finished run use from its log, from one pass that keeps no record:
    the log's index (the latest trusted finished work per key, as compact entries that know
    where their line is, and the failures still open) and the questions the generated
    answers were asked (the dialogue browser's text). Whole records (judge replies, answer
    texts) are read again one at a time with `load`."""

    def __init__(
        self,
        path: Path | None,
        records: list[LogRecord] | None = None,
        *,
        parallel: bool | None = None,
    ) -> None:
        self.path = path
        self.index = LogIndex()
        self.questions: dict[str, dict[int, str]] = {}  # sample id -> turn -> question
        self.warnings: list[str] = []  # what reading the log reported
        self._held: list[LogRecord] | None = None  # records given in memory (tests, API)
        self._fd: int | None = None  # the log, open for `load` once a record is read again
        if records is not None:
            self._held = list(records)
            for number, record in enumerate(self._held):
                self._add(record, number, -1)
        elif path is not None:
            with _collector_paused():
                self._read(path, parallel)

    def _read(self, path: Path, parallel: bool | None) -> None:
        """One pass over the log; a large one (`parallel` None: SPLIT_BYTES or more) in two
        parts at once where a second core can take one: a forked child folds the second
        half into an index of its own while this process folds the first, and the child's
        is merged in after (`LogIndex.merge`: what one pass would have left). If the child
        fails or the parts cannot be merged (a batch run), this process reads on itself."""
        warn = self.warnings.append
        split = _split_point(path, parallel)
        if split is None:
            scan_records(path, self._add, warn)
            return
        later = forked(functools.partial(RunRecords.later_part, path, split))
        started = time.monotonic()
        try:
            scan_records(path, self._add, warn, end=split)
        except BaseException:  # (the log is refused, or the reader interrupted)
            later.cancel()
            raise
        # (the child has as much to do: a child that takes far longer is stuck, not busy)
        part = later(timeout=10 + 4 * (time.monotonic() - started))
        if not self.index.can_merge(part.index):
            scan_records(path, self._add, warn, start=split)
            return
        self.index.merge(part.index)
        for sample, asked in part.questions.items():
            self._remember(sample, asked.items())
        self.warnings.extend(part.warnings)

    def _add(self, record: LogRecord, offset: int, length: int) -> None:
        self.index.add(record, offset, length)
        if isinstance(record, AnswerRecord) and record.messages and record.arm is None:
            # the question of a turn is the last user message of the request that answered
            # it (what a threaded record keeps too: what its turn appended); the turns it
            # did not answer are the benchmark's data
            users = [m["content"] for m in record.messages if m.get("role") == "user"]
            if users:
                self._remember(str(record.sample_id), [(record.turn, users[-1])])

    def _remember(self, sample: str, asked: Iterable[tuple[int, str]]) -> None:
        """Keep the questions of `sample`'s turns; a turn's first question seen stays."""
        known = self.questions.setdefault(sample, {})
        for turn, question in asked:
            known.setdefault(turn, question)

    @classmethod
    def later_part(cls, path: Path, start: int) -> RunRecords:
        """What the log holds from byte `start` (where a line starts) on, read as the rest
        of a log whose earlier part is read elsewhere, to be merged into that part's."""
        part = cls(None)
        part.path = path
        part.index = LogIndex.later_part()
        scan_records(path, part._add, part.warnings.append, start=start)
        return part

    def load(self, done: Any) -> Any:
        """The whole record an index entry stands for (read at its offset: a reader of
        many records, a conversation's chain or an export, opens the log once)."""
        if self._held is not None:
            return self._held[done.offset]
        assert self.path is not None
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        return parse_record_bytes(os.pread(self._fd, done.length, done.offset))

    def __del__(self) -> None:
        if getattr(self, "_fd", None) is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # type: ignore[arg-type]

    def shown(self, entries: list[AnswerDone | JudgmentDone]) -> list[str | list[str]]:
        """What a reader shows of each entry besides its outcome: an answer's text, a
        judgment's replies; read in file order, parsing only those fields."""
        if self._held is not None or not entries:
            records = [self.load(done) for done in entries]
            return [r.text if isinstance(r, AnswerRecord) else r.outputs for r in records]
        assert self.path is not None
        found: dict[int, str | list[str]] = {}
        with self.path.open("rb") as handle:
            for done in sorted(entries, key=lambda d: d.offset):
                handle.seek(done.offset)
                raw = handle.read(done.length)
                try:
                    if isinstance(done, AnswerDone):
                        found[done.offset] = _ANSWER_TEXT.validate_json(raw).text
                    else:
                        found[done.offset] = _REPLIES.validate_json(raw).outputs
                except ValidationError:
                    # a line only the standard library reads (a lone surrogate's escape)
                    record = parse_record_bytes(raw)
                    assert isinstance(record, AnswerRecord | JudgmentRecord)
                    found[done.offset] = (
                        record.text if isinstance(record, AnswerRecord) else record.outputs
                    )
        return [found[done.offset] for done in entries]

    def records(self) -> list[LogRecord]:
        """Every record (exports of one run; a report never needs them all at once)."""
        if self._held is not None:
            return list(self._held)
        assert self.path is not None
        return read_records(self.path)[0]


@dataclass
class SampleScore:
    """One sample's scored parts in one entry, as comparisons pair them (read-only): its
    judged turns, or the trials of a conversation scored whole, by number."""

    group: str | None
    parts: dict[int, float] = field(default_factory=dict)  # scored parts only
    failed: bool = False  # a turn ended unparseable, or its request still fails


@dataclass
class Entry:
    """One model of one run: what a summary row, a chart series or a browser column shows."""

    run: Run
    model: str
    results: dict[str, Any]
    #: a stress arm (`--perturb KIND`): its answers and judgments instead of the
    #: unperturbed run's (`turnbench compare --arm KIND`)
    arm: str | None = None

    @property
    def label(self) -> str:
        return f"{self.run.label}: {self.model}"

    @cached_property
    def typed(self) -> ModelResults | None:
        """This model's results as their typed model: the run's own (`turnbench run`), or
        its entry under `models` (judge-only); None for a model of a pairwise run, whose
        row is in `run.typed.models`."""
        from turnbench.results.shapes import JudgeOnlyResults, SingleRunResults

        results = self.run.typed
        if isinstance(results, SingleRunResults):
            return results
        if isinstance(results, JudgeOnlyResults):
            return results.models.get(self.model)
        return None

    @cached_property
    def answers(self) -> dict[TurnKey, AnswerDone]:
        """The latest answer per turn (compact: `run.load` gives the whole record)."""
        return dict(self.run.work_by_entry().get((self.model, self.arm), EMPTY_WORK)[0])

    @cached_property
    def judgments(self) -> dict[TurnKey, JudgmentDone]:
        """Latest trusted single-grading judgment per turn by the run's (first) judge
        (compact: its outcome; `run.load` gives the whole record, replies included)."""
        return dict(self.run.work_by_entry().get((self.model, self.arm), EMPTY_WORK)[1])

    @cached_property
    def open_failures(self) -> dict[TurnKey, FailureRecord]:
        """Requests of this model that still failed after their retries (not final).

        Failures of schema-1 logs name their work only in their key and are left out here
        (results.json still lists them under `request_failures`)."""
        found: dict[TurnKey, FailureRecord] = {}
        judges = {*self.run.judge_ids, self.run.judge}
        for failure in self.run.open_failures.values():
            if failure.model != self.model or failure.sample_id is None or failure.turn is None:
                continue
            if failure.arm != self.arm:
                continue
            if failure.stage == "judgment" and (failure.judge not in judges or failure.pair):
                continue
            found[(str(failure.sample_id), failure.turn)] = failure
        return found

    @cached_property
    def sample_scores(self) -> dict[str, SampleScore]:
        """Scored turns per sample. An unparseable judgment marks its sample failed, except
        with the `compat` parser, whose reference implementations drop such turns silently
        (the results of such a run do the same, so the comparison follows them). Made once:
        a report compares one base entry with up to seven others and shows it in the
        browser too."""
        groups = self.groups()
        drop_unparseable = self.run.provenance.get("parser") == "compat"
        scores: dict[str, SampleScore] = {}
        for (sample, turn), record in self.judgments.items():
            score = scores.setdefault(sample, SampleScore(groups.get(sample)))
            if record.status == "scored" and record.score is not None:
                score.parts[turn] = record.score
            elif not drop_unparseable:
                score.failed = True
        for sample, _ in self.open_failures:
            scores.setdefault(sample, SampleScore(groups.get(sample))).failed = True
        for done in self.conversations:  # a sample scored whole: each trial is a part
            if done.score is None:
                continue
            score = scores.setdefault(str(done.sample_id), SampleScore(done.group))
            score.parts[done.trial or 0] = done.score
        return scores

    @cached_property
    def conversations(self) -> list[SampleDone]:
        """This model's samples scored as a whole (one per trial of a conversation: an
        agent's with its tools), in sample and trial order; [] for turn-by-turn judging."""
        if self.arm is not None:
            return []
        found = list(self.run.scored_whole.get(self.model, ()))
        found.sort(key=lambda d: (sample_sort_key(str(d.sample_id)), d.trial or 0))
        return found

    def groups(self) -> dict[str, str]:
        """sample id -> category or task, from the records."""
        return self._groups

    @cached_property
    def _groups(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for (sample, _), done in [*self.answers.items(), *self.judgments.items()]:
            if done.group is not None:
                found.setdefault(sample, done.group)
        for (sample, _), failure in self.open_failures.items():
            group = record_group(failure)
            if group is not None:
                found.setdefault(sample, group)
        return found


@dataclass
class Run:
    path: Path
    label: str
    results: dict[str, Any]
    records: list[LogRecord] | None = None  # given in memory; None: read from the log
    has_log: bool = True
    warnings: list[str] = field(default_factory=list)
    #: the benchmark the user named for reading (never one the run directory names)
    named: NamedBenchmark | None = None
    #: how the user names a plug-in, for the message when it is missing
    naming: str = "--benchmark {reference}"
    _work_by_entry: dict[tuple[str, str | None], EntryWork] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @cached_property
    def log(self) -> RunRecords:
        """The log as readers use it (one pass; see RunRecords)."""
        if self.records is not None:
            return RunRecords(None, self.records)
        if not self.has_log:
            return RunRecords(None, [])
        return RunRecords(self.path / LOG_NAME)

    @property
    def index(self) -> LogIndex:
        return self.log.index

    def load(self, done: AnswerDone | JudgmentDone) -> AnswerRecord | JudgmentRecord:
        return self.log.load(done)

    def work_by_entry(self) -> dict[tuple[str, str | None], EntryWork]:
        """(model, stress arm) -> its latest answer per turn and the latest trusted
        single-grading judgment per turn by the run's (first) judge: `Entry.answers` and
        `Entry.judgments` of every model, from one pass over the index (a run of eight
        models would otherwise be walked sixteen times). Index order is kept, so the latest
        entry per turn is the one a walk per model would keep."""
        if self._work_by_entry is None:
            judge = self.judge_ids[0] if self.judge_ids else self.judge
            found: dict[tuple[str, str | None], EntryWork] = {}

            def work(done: AnswerDone | JudgmentDone) -> EntryWork:
                found_work = found.get((done.model, done.arm))
                if found_work is None:
                    found_work = found[(done.model, done.arm)] = ({}, {})
                return found_work

            for done in self.index.done.values():
                if isinstance(done, AnswerDone):
                    work(done)[0][(str(done.sample_id), done.turn)] = done
                elif (
                    isinstance(done, JudgmentDone)  # (not a simulated user's turn)
                    and done.judge == judge
                    and done.pair is None
                    and done.criterion is None
                    and done.repeat == 0
                ):
                    work(done)[1][(str(done.sample_id), done.turn)] = done
            self._work_by_entry = found
        return self._work_by_entry

    def all_records(self) -> list[LogRecord]:
        """Every record of the log, held at once (exports; not the report)."""
        return self.log.records()

    @property
    def benchmark(self) -> str:
        return str(self.results["benchmark"])

    @property
    def judge(self) -> str:
        return str(self.results["judge"])

    @property
    def judge_ids(self) -> list[str]:
        judges = self.results.get("judges")
        if isinstance(judges, list) and all(isinstance(j, str) for j in judges):
            return judges
        return [self.judge]

    @property
    def benchmark_ref(self) -> str | None:
        reference = self.provenance.get("benchmark_ref")
        return reference if isinstance(reference, str) and reference else None

    @property
    def recorded_plugin(self) -> str | None:
        """The plug-in (`module:Class`) the run recorded, if it used one (not a built-in)."""
        return plugin_named_by(self.benchmark_ref)

    def named_fits(self) -> bool:
        """The benchmark the user named (if any) is this run's: the plug-in it recorded, or,
        for a run without one, a benchmark of its name."""
        named = self.named
        if named is None:
            return True
        plugin = self.recorded_plugin
        if plugin is not None:
            return plugin_matches(named, self.benchmark, plugin)
        return not named.is_plugin and named.cls.name == self.benchmark

    @cached_property
    def benchmark_class(self) -> type[Benchmark] | None:
        """The benchmark's class (its comparison rule, report and labels). Nothing the run
        directory names is imported (`benchmarks.recorded`): a built-in by name, the
        benchmark file or data folder it recorded (data), or the class the user named. A
        plug-in run without its plug-in named is an error; None: an unknown benchmark,
        read by generic rules."""
        named, plugin = self.named, self.recorded_plugin
        if plugin is not None:
            if named is None:
                raise plugin_not_named(self.path, plugin, self.naming)
            if not self.named_fits():
                raise plugin_mismatch(self.path, named, self.benchmark, plugin)
            return named.cls
        if named is not None and self.named_fits():
            return named.cls  # e.g. the run's benchmark file, since moved
        return recorded_benchmark(self.benchmark, self.benchmark_ref)

    @property
    def provenance(self) -> dict[str, Any]:
        value = self.results.get("provenance")
        return value if isinstance(value, dict) else {}

    @cached_property
    def typed(self) -> ResultsModel:
        """results.json as its typed model (`results_model`); its type tells a pairwise run
        (PairwiseResults) from a judge-only (JudgeOnlyResults) and a single one."""
        return results_model(self.results, self.path / RESULTS_NAME, self.benchmark_class_or_none())

    @property
    def judge_only(self) -> bool:
        return isinstance(self.results.get("models"), dict)

    @property
    def judging(self) -> str:
        mode = self.provenance.get("judging")
        if isinstance(mode, str):
            return mode
        models = self.results.get("models") or {}
        if any("win_rate" in m for m in models.values() if isinstance(m, dict)):
            return "pairwise"
        return "single"

    @property
    def pairwise(self) -> bool:
        return self.judging in PAIRWISE_MODES

    @property
    def model_names(self) -> list[str]:
        """Models with results; a pairwise run's baseline (which has no row) comes last."""
        if self.judge_only:
            names = list(self.results["models"])
            baseline = self.results.get("baseline")
            if self.pairwise and isinstance(baseline, str) and baseline not in names:
                names.append(baseline)
            return names
        model = self.results.get("model")
        return [str(model)] if model else []

    def model_results(self, name: str) -> dict[str, Any]:
        if self.judge_only:
            value = self.results["models"].get(name)
            return value if isinstance(value, dict) else {"model": name}
        return self.results

    def entries(self) -> list[Entry]:
        return [Entry(self, name, self.model_results(name)) for name in self.model_names]

    @property
    def open_failures(self) -> dict[str, FailureRecord]:
        return self.index.failures

    def games(self) -> list[JudgmentDone]:
        """Every pairwise game in the log (latest trusted per key)."""
        return [d for d in self.index.done.values() if isinstance(d, JudgmentDone) and d.is_game]

    @cached_property
    def scored_whole(self) -> dict[str, list[SampleDone]]:
        """Each model's conversations scored whole (their `sample` records), by model: what
        the scores of an entry need, without the index entries of every conversation
        (`conversation_parts`), which a run judged turn by turn would hold by the
        thousand for nothing."""
        found: dict[str, list[SampleDone]] = {}
        for done in self.index.done.values():
            if isinstance(done, SampleDone):
                found.setdefault(done.model, []).append(done)
        return found

    @cached_property
    def conversation_parts(self) -> dict[ConversationId, Parts]:
        """The index entries of every conversation of the run (one pass over the index)."""
        judge = self.judge_ids[0] if self.judge_ids else None
        return conversation_parts(self.index, judge)

    def conversations(
        self,
        *,
        model: str | None = None,
        sample: str | None = None,
        trial: int | Literal["any"] | None = "any",
        arm: str | Literal["any"] | None = None,
        messages: bool = True,
    ) -> list[Conversation]:
        """The run's conversations (those of `model`, `sample` (its id as text), `trial`
        and stress `arm` when given; the unperturbed ones by default), each read whole by
        the one reader of conversations (`journal.conversations`), in sample, model and
        trial order, its outcome typed by the run's benchmark; without `messages`, only
        how each came out (nothing read from the log)."""
        cls = self.benchmark_class_or_none()
        parts = self.conversation_parts
        chosen = [
            ident
            for ident in parts
            if (model is None or ident[0] == model)
            and (sample is None or ident[1] == sample)
            and (trial == "any" or ident[2] == trial)
            and (arm == "any" or ident[3] == arm)
        ]
        chosen.sort(key=lambda i: (sample_sort_key(i[1]), i[0], i[2] or 0, i[3] or ""))
        return [
            read_conversation(
                ident,
                parts[ident],
                self.load_record,
                self.benchmark,
                cls.outcome_model if cls is not None else None,
                cls.conversation_score if cls is not None else None,
                messages=messages,
            )
            for ident in chosen
        ]

    def benchmark_class_or_none(self) -> type[Benchmark] | None:
        """The benchmark's class when it can be had without the user naming a plug-in."""
        try:
            return self.benchmark_class
        except UserError:
            return None

    def load_record(self, done: Any) -> LogRecord:
        """The whole record any index entry stands for."""
        return self.log.load(done)


def read_results(directory: Path) -> dict[str, Any]:
    path = directory / RESULTS_NAME
    if not path.is_file():
        raise UserError(
            f"{directory}: no {RESULTS_NAME} here; is this a turnbench run directory? "
            "(results.json is written at the end of every `turnbench run` or `turnbench judge`; "
            "re-run the same command to rebuild it)"
        )
    value = read_json(path)
    if not isinstance(value, dict):
        raise UserError(f"{path}: expected a JSON object")
    try:
        ResultsHeader.model_validate(value)
    except ValidationError as error:
        raise UserError(
            f"{path}: not a turnbench results file ({describe_validation_error(error)})"
        ) from None
    return value


def results_model(
    results: dict[str, Any], where: Path, benchmark: type[Benchmark] | None = None
) -> ResultsModel:
    """The content of results.json (`where`) as the typed model of its shape and its
    benchmark (`results.shapes.typed_shapes`: its tables typed when `benchmark` is known):
    SingleRunResults, JudgeOnlyResults or PairwiseResults. The one way a reader turns
    results into their model; a file of another shape (hand-made, or from a turnbench that
    wrote other keys) is one clear error, which re-running the command that made the run
    mends (results.json is rebuilt from the log)."""
    from turnbench.results.shapes import typed_shapes

    try:
        return typed_shapes(benchmark).adapter.validate_python(results)
    except ValidationError as error:
        raise UserError(
            f"{where}: not the results this turnbench writes ({describe_validation_error(error)});"
            " re-run the command that made the run to rebuild it from the log"
        ) from None


def load_run(
    directory: Path,
    *,
    label: str | None = None,
    require_log: bool = True,
    warn: Warn | None = None,
    benchmark: NamedBenchmark | None = None,
    need_benchmark: bool = False,
    naming: str = "--benchmark {reference}",
) -> Run:
    """A run directory, validated; a missing log is an error unless `require_log` is off.

    `benchmark` is the one the user named for it (it must be the run's own); with
    `need_benchmark` a plug-in run without its plug-in named is refused now rather than
    when its class is first needed."""
    run = _read_run(directory, label, require_log, warn, benchmark, naming)
    if benchmark is not None and not run.named_fits():
        raise plugin_mismatch(run.path, benchmark, run.benchmark, run.benchmark_ref)
    if need_benchmark:
        run.benchmark_class  # noqa: B018  (refused now, before any output)
    return run


def _read_run(
    directory: Path,
    label: str | None,
    require_log: bool,
    warn: Warn | None,
    benchmark: NamedBenchmark | None,
    naming: str,
) -> Run:
    if not directory.exists():
        raise UserError(f"{directory}: no such run directory")
    if not directory.is_dir():
        raise UserError(f"{directory}: not a directory (expected a run directory)")
    results = read_results(directory)
    log_path = directory / LOG_NAME
    run = Run(
        directory,
        label or directory.name or str(directory),
        results,
        has_log=False,
        named=benchmark,
        naming=naming,
    )
    if log_path.is_file():
        run.has_log = True
        run.log.warnings  # noqa: B018  (read it now: problems are reported as it loads)
        if warn is not None:
            for message in run.log.warnings:
                warn(message)
    elif require_log:
        raise UserError(f"{directory}: no {LOG_NAME} here (the run log is needed for this)")
    else:
        run.warnings.append(f"{directory}: no {LOG_NAME}; answers and judgments cannot be shown")
    return run


def unique_labels(paths: Iterable[Path]) -> list[str]:
    """Short labels for runs: the folder name, disambiguated by position when repeated."""
    items = list(paths)
    names = [p.resolve().name or str(p) for p in items]
    labels = []
    for index, name in enumerate(names):
        labels.append(name if names.count(name) == 1 else f"{name} #{index + 1}")
    return labels


def load_runs(
    directories: list[Path],
    *,
    require_log: bool = True,
    warn: Warn | None = None,
    benchmark: NamedBenchmark | None = None,
    need_benchmark: bool = False,
) -> list[Run]:
    """Several runs; a benchmark the user named reads the runs of that plug-in (each one that
    recorded a plug-in must have recorded it) and must be the benchmark of at least one."""
    runs = [
        _read_run(directory, label, require_log, warn, benchmark, "--benchmark {reference}")
        for directory, label in zip(directories, unique_labels(directories), strict=True)
    ]
    if benchmark is not None:
        misfit = [r for r in runs if r.recorded_plugin is not None and not r.named_fits()]
        if misfit or not any(r.named_fits() for r in runs):
            run = (misfit or runs)[0]
            raise plugin_mismatch(run.path, benchmark, run.benchmark, run.benchmark_ref)
    if need_benchmark:
        for run in runs:
            run.benchmark_class  # noqa: B018  (refused now, before any output)
    return runs


def select_entry(run: Run, model: str | None, flag: str) -> Entry:
    """The model of `run` to use: the one named, or the only one."""
    names = run.model_names
    if not names:
        raise UserError(f"{run.path}: results.json names no model")
    if model is None:
        if len(names) > 1:
            raise UserError(
                f"{run.path} holds {len(names)} models ({', '.join(names)}); "
                f"choose one with {flag} NAME"
            )
        model = names[0]
    if model not in names:
        raise UserError(f"{flag} {model!r}: {run.path} holds only {', '.join(names)}")
    return Entry(run, model, run.model_results(model))


# -- judged-turn rows (exports and the Python API) ----------------------------------------
def latest_records(
    run: Run,
) -> tuple[dict[str, JudgmentRecord], dict[tuple[str, str, int], AnswerRecord]]:
    """The latest trusted judgment per piece of work, and the latest answer per turn."""
    from turnbench.record_keys import record_key

    judgments: dict[str, JudgmentRecord] = {}
    answers: dict[tuple[str, str, int], AnswerRecord] = {}
    for record in run.all_records():
        if isinstance(record, AnswerRecord | JudgmentRecord) and record.arm is not None:
            continue  # a stress arm's work: not the model's own run
        if isinstance(record, JudgmentRecord) and record_problem(record) is None:
            judgments[record_key(record)] = record
        elif isinstance(record, AnswerRecord):
            answers[(record.model, str(record.sample_id), record.turn)] = record
    return judgments, answers


def judged_turn_rows(run: Run) -> list[dict[str, Any]]:
    """One row per judgment in the log (every judge), with the answer and the raw replies,
    then one per request that still fails after its retries (status `request_failed`)."""
    judgments, answers = latest_records(run)
    rows: list[dict[str, Any]] = []
    for record in judgments.values():
        answer = answers.get((record.model, str(record.sample_id), record.turn))
        group = record_group(record)
        rows.append(
            {
                "judge": record.judge,
                "model": record.model,
                "sample_id": record.sample_id,
                "turn": record.turn,
                "group": group,
                "category": record.meta.get(
                    "category", group if "category" in _kinds(run) else None
                ),
                "task": record.meta.get("task", group if "task" in _kinds(run) else None),
                "criterion": record.criterion,
                "repeat": record.repeat,
                # a pairwise game: the other model shown, and the order ("AB": `model` is
                # the pair's first model; "BA": its second), so both games of a pair differ
                "opponent": _opponent(record),
                "order": record.order,
                "prompt_name": record.prompt_name,
                "status": record.status,
                "score": record.score,
                "verdict": record.verdict,
                "checklist": record.checklist,
                "parse_error": record.parse_error,
                "reasks": record.reasks,
                "parser": record.parser,
                "error": None,
                "ts": record.ts,
                "answer": answer.text if answer is not None else None,
                "judge_outputs": record.outputs,
            }
        )
    for failure in run.open_failures.values():
        if failure.model is None or failure.sample_id is None or failure.turn is None:
            continue  # a schema-1 failure names its work only in its key
        group = failure.group
        rows.append(
            {
                "judge": failure.judge if failure.stage == "judgment" else run.judge,
                "model": failure.model,
                "sample_id": failure.sample_id,
                "turn": failure.turn,
                "group": group,
                "category": group if "category" in _kinds(run) else None,
                "task": group if "task" in _kinds(run) else None,
                "criterion": None,
                "repeat": 0,
                "opponent": None,
                "order": None,
                "prompt_name": None,
                "status": "request_failed",
                "score": None,
                "verdict": None,
                "checklist": None,
                "parse_error": None,
                "reasks": 0,
                "parser": None,
                "error": f"{failure.stage} request: {failure.error}",
                "ts": failure.ts,
                "answer": None,
                "judge_outputs": [],
            }
        )
    rows.sort(
        key=lambda r: (r["judge"], r["model"], sample_sort_key(str(r["sample_id"])), r["turn"])
    )
    return rows


def _opponent(record: JudgmentRecord) -> str | None:
    if record.pair is None:
        return None
    first, second = record.pair
    return second if record.model == first else first


def _kinds(run: Run) -> set[str]:
    cls = run.benchmark_class
    return {cls.group_kind} if cls is not None else set(GROUP_META_KEYS)


@dataclass
class FinishedRun:
    """A run directory as the Python API returns it."""

    run: Run

    @property
    def path(self) -> Path:
        return self.run.path

    @property
    def results(self) -> dict[str, Any]:
        return self.run.results

    @property
    def complete(self) -> bool:
        return bool(self.results.get("complete"))

    @property
    def overall(self) -> float | None:
        return self.results.get("overall")

    @property
    def models(self) -> list[str]:
        return self.run.model_names

    def typed(self) -> ResultsModel:
        """The results as their pydantic model (validated against the published schema)."""
        return self.run.typed

    def model_results(self, model: str | None = None) -> dict[str, Any]:
        return select_entry(self.run, model, "model").results

    def conversations(self, model: str | None = None) -> list[Conversation]:
        """Every conversation of the run, whole and typed (`turnbench.conversation`): its
        messages in order, each with the role that produced it, and its outcome (what
        `turnbench export --format conversations` writes, `Conversation.export()`)."""
        return self.run.conversations(model=model, arm="any")

    def turns(self) -> Iterator[dict[str, Any]]:
        """One row per judged turn (and judge): scores, verdicts, the answer, raw replies."""
        yield from judged_turn_rows(self.run)

    def to_pandas(self) -> Any:
        """The judged-turn rows as a pandas DataFrame (pandas must be installed)."""
        try:
            import pandas
        except ImportError:
            raise UserError("to_pandas() needs pandas: pip install pandas") from None
        return pandas.DataFrame(list(self.turns()))


def load_finished_run(path: Path, benchmark: NamedBenchmark | None = None) -> FinishedRun:
    return FinishedRun(
        load_run(
            path,
            require_log=False,
            benchmark=benchmark,
            naming='load_run(..., benchmark="{reference}")',
        )
    )
