"""Answers that already exist, for judge-only runs: files, folders and earlier run directories.

`--answers PATH` (repeatable) names one answer file, one turnbench run directory, or a folder
of either; every file is one model, named after the file (FastChat's convention), read by the
benchmark's own reader. Forks of FastChat keep one folder per model instead
(`model_answer/MODEL/results.jsonl`): such a file is named after its folder, and a folder of
those folders is read like a folder of files. A run directory's log holds every answer it
generated or imported, so it stands in for an answer file: each model in it becomes one
answer set, with a checksum over its answer texts (the log keeps growing, so hashing the
file would make every resume look like changed answers).

The generic answer-file format, `{"id": sample id, "turn": 1-based turn, "answer": text}` per
line, one line per judged turn, is read here for benchmarks that use it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from turnbench.benchmarks.datafiles import sha256_file
from turnbench.errors import UserError
from turnbench.journal.runlog import LOG_NAME, read_records
from turnbench.safetext import name_problem, plain
from turnbench.samples import AnswerSet, Sample
from turnbench.textio import ErrorCollector, read_jsonl, validate_row
from turnbench.types import AnswerRecord, SampleId

#: the file name FastChat forks give every model's answers, in a folder named after the model
PER_MODEL_FILE = "results.jsonl"


class AnswerReader(Protocol):
    """A benchmark as its answer sources need it (`turnbench.benchmarks.base.Benchmark` is
    one; named here so the base class can use this module's generic reader)."""

    name: str
    sample_noun: str

    @property
    def samples(self) -> list[Sample]: ...

    def all_samples(self) -> list[Sample]: ...

    def load_answer_file(self, path: Path) -> AnswerSet: ...


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / LOG_NAME).is_file()


def is_model_folder(path: Path) -> bool:
    """A fork's folder per model: `MODEL/results.jsonl` (beside, say, its config.json)."""
    return path.is_dir() and not is_run_dir(path) and (path / PER_MODEL_FILE).is_file()


def answer_model_name(path: Path) -> str:
    """The model an answer file holds: named after the file, or after its folder when the
    file is a fork's `MODEL/results.jsonl` (every model's file has that name).

    A name `name_problem` refuses (an invisible character, a bidi mark) is refused here,
    before the file is read: the readers call this first, so a user renaming the file learns
    it at once, not after fixing every row (`AnswerSet` checks again, for every source)."""
    if path.name == PER_MODEL_FILE and path.parent.name not in ("", ".", ".."):
        name = path.parent.name
    else:
        name = path.stem
    problem = name_problem(name)
    if problem is not None:
        where = plain(str(path), keep_newlines=False)
        raise UserError(f"{where}: the model name {name!r} (from the file's name) {problem}")
    return name


def answer_sources(path: Path | Sequence[Path]) -> list[Path]:
    """What `--answers PATH` (once or several times) names: files, run directories, folders
    per model, or folders of any of them."""
    paths = [path] if isinstance(path, Path) else list(path)
    sources: list[Path] = []
    for item in paths:
        for source in _sources(item):
            if source not in sources:  # the same file named twice is one source
                sources.append(source)
    return sources


def _sources(path: Path) -> list[Path]:
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    if not path.is_dir() or is_run_dir(path):
        return [path]
    if is_model_folder(path):
        return [path / PER_MODEL_FILE]
    sources = sorted(
        p / PER_MODEL_FILE if is_model_folder(p) else p
        for p in path.iterdir()
        if (p.is_file() and p.suffix == ".jsonl") or is_run_dir(p) or is_model_folder(p)
    )
    if not sources:
        shown = ", ".join(sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir()))
        raise UserError(
            f"{path}: no answers here; expected *.jsonl answer files, folders per model "
            f"(MODEL/{PER_MODEL_FILE}) or turnbench run directories; found: {shown or 'nothing'}"
        )
    return sources


def texts_sha256(turns: Mapping[SampleId, Mapping[int, str]]) -> str:
    canonical = json.dumps(
        {str(i): {str(t): text for t, text in by_turn.items()} for i, by_turn in turns.items()},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def missing_turns(
    turns: Mapping[SampleId, Mapping[int, str]], planned: Iterable[tuple[SampleId, int]]
) -> str:
    """'' when every planned (id, turn) has an answer, else a short description."""
    missing = [(i, t) for i, t in planned if t not in turns.get(i, {})]
    if not missing:
        return ""
    shown = ", ".join(f"id {i} turn {t}" for i, t in missing[:12])
    return f"{len(missing)} planned turn(s): {shown}" + (" ..." if len(missing) > 12 else "")


def run_answer_sets(path: Path, benchmark: AnswerReader) -> list[AnswerSet]:
    """One answer set per model of an earlier run; every planned turn must be answered."""
    known = {s.id for s in benchmark.all_samples()}
    records, _ = read_records(path / LOG_NAME)
    texts: dict[str, dict[SampleId, dict[int, str]]] = {}
    for record in records:
        if isinstance(record, AnswerRecord) and record.sample_id in known and record.arm is None:
            by_sample = texts.setdefault(record.model, {})
            by_sample.setdefault(record.sample_id, {})[record.turn] = record.text
    if not texts:
        raise UserError(f"{path}: this run directory holds no {benchmark.name} answers")
    sets = []
    for model, turns in texts.items():
        missing = [
            s.id
            for s in benchmark.samples
            if any(t not in turns.get(s.id, {}) for t in s.judged_turns())
        ]
        if missing:
            shown = ", ".join(map(str, missing[:12])) + (" ..." if len(missing) > 12 else "")
            raise UserError(
                f"{path}: model {model} has no complete answers for {len(missing)} planned "
                f"{benchmark.sample_noun}: {shown} (finish that run, or use the same --limit)"
            )
        sets.append(AnswerSet(model=model, path=path, sha256=texts_sha256(turns), turns=turns))
    return sets


def load_answer_sets(benchmark: AnswerReader, path: Path | Sequence[Path]) -> list[AnswerSet]:
    """Every answer set `--answers PATH` (once or more) names; two sources naming one model
    are refused."""
    sets: list[AnswerSet] = []
    for source in answer_sources(path):
        if is_run_dir(source):
            sets.extend(run_answer_sets(source, benchmark))
        else:
            sets.append(benchmark.load_answer_file(source))
    names = [s.model for s in sets]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        where = {name: ", ".join(str(s.path) for s in sets if s.model == name) for name in twice}
        shown = "; ".join(f"{name} ({where[name]})" for name in twice)
        raise UserError(f"two answer sources name the same model: {shown}")
    return sets


class TurnAnswerRow(BaseModel):
    """One judge-only answer: sample id, 1-based turn index in the dialogue, the text."""

    model_config = ConfigDict(extra="ignore", strict=True)

    id: int | str
    turn: int
    answer: str


def _plain_row(value: object) -> TurnAnswerRow | None:
    """A row that is plainly valid, without pydantic's validation (the common case of a
    large answer file); anything else (None) is validated with its messages."""
    if type(value) is not dict:
        return None
    sample, turn, answer = value.get("id"), value.get("turn"), value.get("answer")
    if type(sample) in (int, str) and type(turn) is int and type(answer) is str:
        return TurnAnswerRow.model_construct(id=sample, turn=turn, answer=answer)
    return None


def load_turn_answers(
    path: Path,
    samples: Mapping[SampleId, Sample],
    planned: Iterable[tuple[SampleId, int]],
    *,
    unknown_id: Callable[[SampleId], str],
    not_judged: Callable[[Sample, int], str],
    answered: Callable[[Sample], Iterable[int]] = Sample.judged_turns,
) -> AnswerSet:
    """A JSONL file of `{"id", "turn", "answer"}` rows, every problem reported with its line.

    `unknown_id` and `not_judged` word the benchmark's own messages ("id 9 is not an
    MT-Bench-101 dialogue (ids are 1-1388)"). `answered`: the turns a sample's answers are
    for (its judged turns; with self history, every turn the model is asked, since later
    turns are judged after the model's own earlier answers).
    """
    model = answer_model_name(path)  # (first: a refused name is told before any row)
    collector = ErrorCollector(path)
    turns: dict[SampleId, dict[int, str]] = {}
    seen: dict[tuple[SampleId, int], int] = {}
    id_type = type(next(iter(samples))) if samples else int
    for line, value in read_jsonl(path, collector):
        row = _plain_row(value) or validate_row(collector, line, value, TurnAnswerRow)
        if row is None:
            continue
        if not isinstance(row.id, id_type):
            collector.add(line, f"field 'id': expected {id_type.__name__}, got {row.id!r}")
            continue
        sample = samples.get(row.id)
        if sample is None:
            collector.add(line, unknown_id(row.id))
            continue
        if not 1 <= row.turn <= len(sample.turns):
            collector.add(
                line,
                f"dialogue {row.id} ({sample.group}) has turns 1-{len(sample.turns)}, "
                f"not turn {row.turn}",
            )
            continue
        if row.turn not in answered(sample):
            collector.add(line, not_judged(sample, row.turn))
            continue
        identity = (row.id, row.turn)
        if identity in seen:
            collector.add(
                line,
                f"duplicate answer for id {row.id} turn {row.turn} (first on line "
                f"{seen[identity]})",
            )
            continue
        seen[identity] = line
        turns.setdefault(row.id, {})[row.turn] = row.answer
    missing = missing_turns(turns, planned)
    if missing:
        collector.add(None, f"no answers for {missing}")
    collector.raise_if_any()
    return AnswerSet(model=model, path=path, sha256=sha256_file(path), turns=turns)
