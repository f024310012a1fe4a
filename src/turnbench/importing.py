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
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from turnbench.benchmarks.base import AnswerSet, Benchmark, Sample
from turnbench.config import LOG_SCHEMA_VERSION, RunConfig, check_resume, load_config
from turnbench.data import DataLocator
from turnbench.dialogue import Work
from turnbench.errors import UserError
from turnbench.judging.judge import JudgeSettings
from turnbench.keys import answer_key, game_key, judgment_key
from turnbench.results import build_results, timing
from turnbench.resultsfile import write_results
from turnbench.runlog import RunLog, config_record
from turnbench.runner import RunContext
from turnbench.types import JudgmentRecord, Message, Order, SampleId, SamplingConfig

Judging = Literal["single", "pairwise", "pairwise-all"]


@dataclass
class ImportedJudgment:
    """One judgment another tool recorded, in the terms of a `JudgmentRecord`."""

    model: str  # the graded model (a pairwise game: the one shown as assistant A)
    sample: Sample
    turn: int
    prompt_name: str
    messages: list[Message]
    outputs: list[str]
    parser: str
    status: Literal["scored", "parse_failed"]
    score: float | None = None
    verdict: str | None = None
    checklist: list[str] | None = None
    parse_error: str | None = None
    criterion: str | None = None
    pair: tuple[str, str] | None = None
    order: Order | None = None
    reasks: int = 0
    meta: dict[str, Any] = field(default_factory=dict)  # e.g. the other tool's timestamp


@dataclass
class Imported:
    benchmark: Benchmark
    judge: str  # the judge's name in the run (what its files say about who judged)
    answer_sets: list[AnswerSet]
    judgments: list[ImportedJudgment]
    source: dict[str, Any]  # format, files and their checksums: results' `imported`
    judging: Judging = "single"
    baseline: str | None = None
    data_sha256: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the reader counted or skipped


@dataclass
class ImportOptions:
    judge_name: str | None = None  # overrides the judge name the reader chose
    mode: Literal["auto", "single", "pairwise"] = "auto"
    judgments: Path | None = None  # one judgment file, when a folder holds several
    data_dir: Path | None = None
    download: bool = True
    baseline: str | None = None  # pairwise: the baseline (else told by the games)


def inferred_limit(samples: Sequence[Sample], judged: Collection[SampleId]) -> int | None:
    """The `--limit N` whose plan (the first N samples of every group) holds every judged
    sample: the plan of a run made with that limit, told by the samples it judged (None: no
    limit; every group's last judged sample is near its end, or nothing was judged)."""
    positions: dict[str | None, int] = {}
    needed = 0
    for sample in samples:
        position = positions.get(sample.group, 0) + 1
        positions[sample.group] = position
        if sample.id in judged:
            needed = max(needed, position)
    if needed == 0 or needed >= max(positions.values(), default=0):
        return None
    return needed


def detect_baseline(pairs: Sequence[tuple[str, str]], given: str | None = None) -> str | None:
    """The baseline of pairwise games (`pairs`: the two models of every game, as recorded):
    `given`, else the one model every game includes, whichever side it stands on. With a
    single pair of models, the one recorded second in every game (FastChat's place for its
    baseline); None when the games compare all pairs."""
    if given is not None:
        return given
    if not pairs:
        return None
    common = set.intersection(*({first, second} for first, second in pairs))
    if len(common) == 1:
        return next(iter(common))
    if len(common) == 2:
        seconds = {second for _, second in pairs}
        return next(iter(seconds)) if len(seconds) == 1 else None
    return None


Reader = Callable[[Path, ImportOptions, DataLocator], Imported]


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
    "csv": "turnbench.reimport:read_csv_export",
    "jsonl": "turnbench.reimport:read_jsonl_export",
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
    imported.data_sha256 = {**locator.checksums, **imported.data_sha256}
    if options.judge_name:
        imported.judge = options.judge_name
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


def write_import(imported: Imported, out: Path, warn: Callable[[str], None]) -> dict[str, Any]:
    """Write `imported` as a run directory at `out`; returns its results."""
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
    started = time.time()
    with RunLog(out, warn=warn) as log:
        previous = log.configs()
        if previous:
            last = previous[-1]
            check_resume(
                load_config(last.config, last.schema_version, str(log.path)),
                config,
                allow_new_judge=False,
            )
        log.append(config_record(started, config.model_dump(mode="json"), LOG_SCHEMA_VERSION))
        context = RunContext(log, model_backend=None, strip_think=False)
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
        finished = log.end_invocation("finished")
        log.sync()
        notes: dict[str, Any] = {"imported": {**imported.source, "notes": imported.notes}}
        results = build_results(
            work, config, log.records, when=timing(log.records, finished), notes=notes
        )
        write_results(log.directory, results)
    return results


def describe_sources(paths: Mapping[str, Path]) -> dict[str, str]:
    """File name -> sha256, for `imported.files`."""
    from turnbench.data import sha256_file

    return {name: sha256_file(path) for name, path in paths.items()}
