"""What a benchmark's importer of another tool's files returns, and what it is given.

A benchmark names its importers (`Benchmark.importers`); each reads a folder of another
tool's finished evaluation into an `Imported`, which `turnbench.interop.importing` writes as
a run directory. These shapes sit with the benchmarks so that an importer lives in its
benchmark's package without importing the layer above.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from turnbench.benchmarks.datafiles import DataLocator, sha256_file
from turnbench.samples import AnswerSet, Sample
from turnbench.types import LogRecord, Message, Order, SampleId

if TYPE_CHECKING:
    from turnbench.benchmarks.base import Benchmark

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
    #: conversations another tool ran (the model acting, scored per sample): the model's
    #: name, the records of its conversations as a run keeps them, the samples they cover
    model: str | None = None
    records: list[LogRecord] = field(default_factory=list)
    scored_ids: list[SampleId] = field(default_factory=list)


@dataclass
class ImportOptions:
    judge_name: str | None = None  # overrides the judge name the reader chose
    mode: Literal["auto", "single", "pairwise"] = "auto"
    judgments: Path | None = None  # one judgment file, when a folder holds several
    data_dir: Path | None = None
    download: bool = True
    baseline: str | None = None  # pairwise: the baseline (else told by the games)
    benchmark: str | None = None  # a format several benchmarks read: which one
    model_name: str | None = None  # the model's name in the run (else told by the files)
    #: `-B key=value`: the benchmark's own options (which attack of a folder, say)
    benchmark_options: dict[str, Any] = field(default_factory=dict)


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


def describe_sources(paths: Mapping[str, Path]) -> dict[str, str]:
    """File name -> sha256, for `imported.files`."""
    return {name: sha256_file(path) for name, path in paths.items()}
