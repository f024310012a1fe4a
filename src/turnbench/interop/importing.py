"""Finished evaluations made by other tools, as turnbench run directories (no API call).

A format reader (declared by the benchmark package it belongs to, `Benchmark.importers`)
turns another tool's files into an `Imported`: the benchmark, the models' answers, and the
judgments that tool recorded, with its verdicts read by the reference's own rules. This
module writes them as a run directory like any other: a config record, the answers and
the judgments (marked `origin: "imported"`), and a results.json rebuilt from the log by the
benchmark's own aggregation, so `report`, `compare` and `export` read it as they read a run.
Importing the same files into the same directory again adds nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from turnbench.benchmarks.base import Benchmark
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.benchmarks.imports import (
    Imported,
    ImportedJudgment,
    ImportOptions,
    Reader,
    inferred_limit,
)
from turnbench.engine.context import RunContext
from turnbench.engine.work import Work
from turnbench.errors import UserError
from turnbench.invocation import finish, invocation
from turnbench.journal.config import RunConfig
from turnbench.journal.logindex import Done, SampleDone
from turnbench.journal.runlog import RunLog
from turnbench.judging.judge import JudgeSettings
from turnbench.record_keys import answer_key, game_key, judgment_key
from turnbench.results.build import build_results
from turnbench.safetext import name_problem, plain
from turnbench.types import JudgmentRecord, LogRecord, SampleRecord, SamplingConfig


def import_formats() -> dict[str, tuple[type[Benchmark], str]]:
    """Every import format the built-in benchmarks declare: name -> (benchmark, reader)."""
    from turnbench.benchmarks import builtin_benchmarks

    found: dict[str, tuple[type[Benchmark], str]] = {}
    for cls in builtin_benchmarks().values():
        for name, reader in cls.importers.items():
            found[name] = (cls, reader)
    return dict(sorted(found.items()))


#: turnbench's own exports (`turnbench export --format csv|jsonl`), of any benchmark
EXPORT_FORMATS = {
    "csv": "turnbench.interop.reimport:read_csv_export",
    "jsonl": "turnbench.interop.reimport:read_jsonl_export",
}


def reader_for(fmt: str) -> Reader:
    formats = {name: reader for name, (_, reader) in import_formats().items()}
    formats.update(EXPORT_FORMATS)
    if fmt not in formats:
        raise UserError(f"unknown import format {fmt!r}; formats: {', '.join(formats)}")
    module_name, _, function = formats[fmt].partition(":")
    return getattr(importlib.import_module(module_name), function)  # type: ignore[no-any-return]


def read_import(fmt: str, source: Path, options: ImportOptions) -> Imported:
    """Read another tool's files (validated; nothing written)."""
    if not source.exists():
        raise UserError(f"{source}: no such file or folder")
    locator = DataLocator(options.data_dir, allow_download=options.download)
    imported = reader_for(fmt)(source, options, locator)
    applied = imported.benchmark.settings.options
    ignored = [
        key for key, value in options.benchmark_options.items()
        if key not in applied or str(applied[key]) != str(value)
    ]  # fmt: skip
    if ignored:  # (a format reads only the options its reader applies: never a silent one)
        shown = ", ".join(f"-B {key}" for key in ignored)
        raise UserError(f"--format {fmt} does not take {shown}")
    imported.data_sha256 = {**locator.checksums, **imported.data_sha256}
    if options.judge_name:
        imported.judge = options.judge_name
    # (the answer sets' model names are checked where every answer set enters: AnswerSet)
    named = {"the judge name": imported.judge, "the model name": imported.model}
    for what, name in named.items():  # (no judge: "", an import of scored conversations)
        problem = name_problem(name) if name else None
        if problem is not None:
            raise UserError(f"{source}: {what} {name!r} {problem}")
    return imported


def _config(imported: Imported, work: Work, judge: JudgeSettings) -> RunConfig:
    benchmark = imported.benchmark
    return RunConfig(
        benchmark=benchmark.name,
        benchmark_ref=type(benchmark).source_ref,
        mode="judge",
        judging=imported.judging,
        models=[s.model for s in imported.answer_sets],
        judges=[judge],
        options=work.config_options(),
        prompt_versions={**work.prompt_versions(), "imported": imported.source["format"]},
        data_sha256=dict(sorted(imported.data_sha256.items())),
        answers_sha256={s.model: s.sha256 for s in imported.answer_sets},
        strip_think=False,  # answers are kept exactly as the judge saw them
    )


def _record(judge: str, item: ImportedJudgment) -> JudgmentRecord:
    if item.pair is not None:
        assert item.order is not None
        key = game_key(judge, *item.pair, item.sample.id, item.turn, item.order)
        shown_b = item.pair[1] if item.pair[0] == item.model else item.pair[0]
        meta = {
            "pair": list(item.pair),
            "order": item.order,
            "model_a": item.model,
            "model_b": shown_b,
        }
    else:
        key = judgment_key(judge, item.model, item.sample.id, item.turn, criterion=item.criterion)
        meta = {}
    return JudgmentRecord(
        key=key,
        judge=judge,
        model=item.model,
        sample_id=item.sample.id,
        turn=item.turn,
        group=item.sample.group,
        criterion=item.criterion,
        pair=item.pair,
        order=item.order,
        prompt_name=item.prompt_name,
        messages=item.messages,
        outputs=item.outputs,
        parser=item.parser,
        status=item.status,
        score=item.score,
        verdict=item.verdict,
        checklist=item.checklist,
        parse_error=item.parse_error,
        reasks=item.reasks,
        origin="imported",
        meta={**meta, **item.meta},
    )


def _held_otherwise(records: list[LogRecord], done: dict[str, Done]) -> str | None:
    """Why `records` cannot be added to a run that holds `done`, or None. Importing the same
    file again adds nothing; a conversation the run holds already (its sample record is
    logged) that comes again with other steps or another outcome (another file's
    conversation of the same sample and trial) would be spliced into the one logged, so it
    is refused."""
    held: set[tuple[str, str, int | None]] = set()
    for record in records:
        if not isinstance(record, SampleRecord):
            continue
        logged = done.get(record.key)
        if not isinstance(logged, SampleDone):
            continue
        conversation = (record.model, str(record.sample_id), record.trial)
        if (logged.steps, logged.score, logged.ended) != (
            record.steps,
            record.score,
            record.ended,
        ):
            return _clash(conversation)
        held.add(conversation)
    for record in records:
        conversation = (
            str(getattr(record, "model", "")),
            str(getattr(record, "sample_id", "")),
            getattr(record, "trial", None),
        )
        if conversation in held and record.key not in done:
            return _clash(conversation)
    return None


def _clash(conversation: tuple[str, str, int | None]) -> str:
    model, sample, trial = conversation
    return (
        f"it holds sample {plain(sample, keep_newlines=False)} trial {trial or 0} of "
        f"{plain(model, keep_newlines=False)} already, as another conversation (imported "
        "from another file?): import into a new --out"
    )


def write_conversations(
    imported: Imported, out: Path, warn: Callable[[str], None]
) -> dict[str, Any]:
    """Write conversations another tool ran (`imported.records`) as the run directory of a
    `run` of that model, scored per sample by the benchmark's own driver and aggregation;
    importing the same files again adds nothing."""
    assert imported.model is not None
    benchmark = imported.benchmark
    limit = inferred_limit(benchmark.all_samples(), set(imported.scored_ids))
    if limit is not None:
        benchmark.limit_to(limit)
    work = Work(benchmark=benchmark, judges=[], mode="run", model=imported.model)
    config = RunConfig(
        benchmark=benchmark.name,
        benchmark_ref=type(benchmark).source_ref,
        mode="run",
        model=imported.model,
        options=work.config_options(),
        prompt_versions={**work.prompt_versions(), "imported": imported.source["format"]},
        data_sha256=dict(sorted(imported.data_sha256.items())),
        strip_think=False,
        limit=limit,
    )

    def clash(log: RunLog) -> None:
        found = _held_otherwise(imported.records, log.index.done)
        if found is not None:
            raise UserError(f"{plain(str(out), keep_newlines=False)}: {found}")

    with invocation(out, config, warn, check=clash) as log:
        done = log.index.done
        for record in imported.records:
            if record.key not in done:  # type: ignore[union-attr]
                log.append(record)
        notes: dict[str, Any] = {"imported": {**imported.source, "notes": imported.notes}}
        _, results = finish(
            log,
            "finished",
            lambda when: build_results(work, config, log.index, when=when, notes=notes),
        )
    return results


def write_import(imported: Imported, out: Path, warn: Callable[[str], None]) -> dict[str, Any]:
    """Write `imported` as a run directory at `out`; returns its results."""
    if imported.records:
        return write_conversations(imported, out, warn)
    judge = JudgeSettings(
        spec=imported.judge,
        # what the other tool sent is not known: recorded as unknown, not as turnbench's
        sampling=SamplingConfig(temperature=None, max_tokens=0),
        parser="compat",  # verdicts read by the reference's own rules
        max_reasks=0,
    )
    work = Work(
        benchmark=imported.benchmark,
        judges=[judge],
        mode="judge",
        judging=imported.judging,
        answer_sets=imported.answer_sets,
        baseline=imported.baseline,
    )
    config = _config(imported, work, judge)
    with invocation(out, config, warn) as log:
        context = RunContext(log, strip_think=False)
        for answer_set in imported.answer_sets:
            for sample in imported.benchmark.all_samples():
                for turn, text in sorted(answer_set.turns.get(sample.id, {}).items()):
                    context.import_answer(
                        key=answer_key(answer_set.model, sample.id, turn),
                        model=answer_set.model,
                        sample=sample,
                        turn=turn,
                        text=text,
                    )
        for item in imported.judgments:
            record = _record(judge.id, item)
            if record.key not in context.done:
                log.append(record)
                context.done[record.key] = record
        notes: dict[str, Any] = {"imported": {**imported.source, "notes": imported.notes}}
        # (the records themselves: imported answers' texts, which the index keeps as digests)
        _, results = finish(
            log,
            "finished",
            lambda when: build_results(work, config, log.records, when=when, notes=notes),
        )
    return results
