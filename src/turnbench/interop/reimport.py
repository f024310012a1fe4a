"""`turnbench import --format csv|jsonl FILE`: a `turnbench export` file read back as a run.

Each row of those files is one judged turn with the benchmark it belongs to, the run's
judging mode and, for a pairwise game, its opponent and order, so the run's plan and its
scores are rebuilt from the rows alone: the benchmark's data (its questions) comes from the
data folder, the `--limit` the run used is told by the samples the rows name, a pairwise
run's baseline by its games. JSONL rows carry the answer texts and the judge's replies; CSV
rows carry neither (the imported run then has the scores, not the texts, and says so). The
judge's prompt is in neither: the imported judgments record none.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from turnbench.benchmarks.answers import texts_sha256
from turnbench.benchmarks.base import AnswerSet, BenchmarkSettings, Sample
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.benchmarks.imports import (
    Imported,
    ImportedJudgment,
    ImportOptions,
    describe_sources,
    detect_baseline,
    inferred_limit,
)
from turnbench.errors import UserError
from turnbench.textio import ErrorCollector, open_input, read_jsonl
from turnbench.types import Order, SampleId

Flat = Literal["csv", "jsonl"]
JUDGED = ("scored", "parse_failed")


class ExportRow(BaseModel):
    """One row of `turnbench export --format csv|jsonl` (the fields the import reads)."""

    model_config = ConfigDict(extra="ignore")

    judge: str
    model: str
    sample_id: int | str
    turn: int
    status: str
    score: float | None = None
    verdict: str | None = None
    checklist: list[str] | None = None
    parse_error: str | None = None
    reasks: int = 0
    parser: str | None = None
    prompt_name: str | None = None
    criterion: str | None = None
    repeat: int = 0
    opponent: str | None = None
    order: Order | None = None
    benchmark: str | None = None
    mode: Literal["single", "pairwise", "pairwise-all"] | None = None
    answer: str | None = None
    judge_outputs: list[str] | None = None

    @field_validator("checklist", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        """CSV writes a checklist as JSON text."""
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value  # reported as a bad field
        return value


def _csv_value(text: str) -> str | None:
    """A CSV cell as written by the export: empty is None, one escaping apostrophe off."""
    if text == "":
        return None
    return text[1:] if text.startswith("'") else text


def _csv_rows(path: Path, collector: ErrorCollector) -> Iterator[tuple[int, Any]]:
    try:
        with io.TextIOWrapper(open_input(path), encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = {"judge", "model", "sample_id", "turn", "status"} - set(
                reader.fieldnames or ()
            )
            if missing:
                collector.add(
                    None,
                    f"not a `turnbench export --format csv` file: no column "
                    f"{', '.join(sorted(missing))}",
                )
                return
            for number, row in enumerate(reader, start=2):
                yield number, {k: _csv_value(v or "") for k, v in row.items() if k}
    except UnicodeDecodeError:
        collector.add(None, "not UTF-8 text")
    except csv.Error as error:
        collector.add(None, f"not CSV: {error}")


def _rows(path: Path, fmt: Flat) -> list[ExportRow]:
    collector = ErrorCollector(path)
    values = _csv_rows(path, collector) if fmt == "csv" else read_jsonl(path, collector)
    rows = []
    for line, value in values:
        try:
            rows.append(ExportRow.model_validate(value))
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(p) for p in problem["loc"]) or "row"
            collector.add(line, f"field {where!r}: {problem['msg']}")
    if not rows:
        collector.add(None, "no rows")
    collector.raise_if_any()
    return rows


def _one(values: set[str], what: str, path: Path, why: str) -> str:
    if len(values) != 1:
        shown = ", ".join(sorted(values)) or "none"
        raise UserError(f"{path}: rows of {len(values)} {what} ({shown}); {why}")
    return next(iter(values))


def _sample_of(samples: dict[str, Sample], row: ExportRow, path: Path) -> Sample:
    sample = samples.get(str(row.sample_id))
    if sample is None:
        raise UserError(f"{path}: sample {row.sample_id!r} is not a sample of this benchmark")
    return sample


def read_flat(fmt: Flat, source: Path, options: ImportOptions, locator: DataLocator) -> Imported:
    from turnbench.benchmarks import benchmark_class

    if not source.is_file():
        raise UserError(
            f"{source}: --format {fmt} reads one `turnbench export --format {fmt}` file"
        )
    rows = _rows(source, fmt)
    reference = _one(
        {r.benchmark for r in rows if r.benchmark},
        "benchmarks",
        source,
        "an export names its benchmark in every row (exports made before that cannot be imported)",
    )
    judged = [r for r in rows if r.status in JUDGED]
    if not judged:
        raise UserError(f"{source}: no judgment rows (every row is a failed request)")
    judge = _one(
        {r.judge for r in judged},
        "judges",
        source,
        "import reads one judge's judgments (a panel's combined scores are not rebuilt)",
    )
    if any(r.repeat for r in judged):
        raise UserError(
            f"{source}: the rows hold repeated judgments (--judge-repeats); import reads one "
            "judgment per turn and would not rebuild their combined scores"
        )
    cls = benchmark_class(reference)
    files = cls.locate_files(locator)
    everything = cls(files, BenchmarkSettings()).all_samples()
    typed = {str(s.id): s.id for s in everything}  # a row's id as the benchmark types it
    limit = inferred_limit(everything, {typed.get(str(r.sample_id)) for r in rows} - {None})
    benchmark = cls(files, BenchmarkSettings(limit=limit))
    samples = {str(s.id): s for s in benchmark.all_samples()}
    modes = {r.mode for r in rows if r.mode}
    games = [r for r in judged if r.opponent is not None and r.order is not None]
    judging = (
        _one(modes, "judging modes", source, "an export is of one run")
        if modes
        else ("pairwise-all" if games else "single")
    )
    notes = []
    if limit is not None:
        notes.append(f"the rows cover the first {limit} sample(s) of every group (--limit {limit})")
    if fmt == "csv":
        notes.append(
            "CSV carries scores and verdicts, not answer texts or judge replies: the run holds "
            "the scores only"
        )
    pairs = {_pair(r) for r in games}
    baseline = None
    if judging == "pairwise":
        baseline = detect_baseline(sorted(pairs), options.baseline)
        if baseline is None:
            raise UserError(f"{source}: a pairwise run's rows, but no model is in every game")
    models = list(dict.fromkeys(m for r in judged for m in (r.model, r.opponent) if m))
    if baseline is not None:
        models = [m for m in models if m != baseline] + [baseline]
    texts: dict[str, dict[SampleId, dict[int, str]]] = {m: {} for m in models}
    judgments = []
    for row in judged:
        sample = _sample_of(samples, row, source)
        if row.answer is not None:
            texts[row.model].setdefault(sample.id, {})[row.turn] = row.answer
        pair = _pair(row) if row.opponent is not None and row.order is not None else None
        judgments.append(
            ImportedJudgment(
                model=row.model,
                sample=sample,
                turn=row.turn,
                prompt_name=row.prompt_name or "",
                messages=[],
                outputs=list(row.judge_outputs or []),
                parser=row.parser or "",
                status="scored" if row.status == "scored" else "parse_failed",
                score=row.score,
                verdict=row.verdict,
                checklist=row.checklist,
                parse_error=row.parse_error,
                criterion=row.criterion,
                pair=pair,
                order=row.order if pair is not None else None,
                reasks=row.reasks,
            )
        )
    answer_sets = [
        AnswerSet(model=m, path=source, sha256=texts_sha256(texts[m]), turns=texts[m])
        for m in models
    ]
    return Imported(
        benchmark=benchmark,
        judge=judge,
        answer_sets=answer_sets,
        judgments=judgments,
        source={
            "format": fmt,
            "path": str(source.resolve()),
            "files": describe_sources({source.name: source}),
        },
        judging=judging,  # type: ignore[arg-type]
        baseline=baseline,
        notes=notes,
    )


def _pair(row: ExportRow) -> tuple[str, str]:
    """A game's pair: "AB" shows the pair's first model as A, "BA" its second."""
    assert row.opponent is not None
    return (row.model, row.opponent) if row.order == "AB" else (row.opponent, row.model)


def read_csv_export(source: Path, options: ImportOptions, locator: DataLocator) -> Imported:
    return read_flat("csv", source, options, locator)


def read_jsonl_export(source: Path, options: ImportOptions, locator: DataLocator) -> Imported:
    return read_flat("jsonl", source, options, locator)
