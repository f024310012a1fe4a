"""What a benchmark's importer of another tool's files returns, and what it is given.

A benchmark names its importers (`Benchmark.importers`); each reads a folder of another
tool's finished evaluation into an `Imported`, which `turnbench.interop.importing` writes as
a run directory. These shapes sit with the benchmarks so that an importer lives in its
benchmark's package without importing the layer above.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from turnbench.benchmarks.datafiles import DataLocator, sha256_file
from turnbench.samples import AnswerSet, Sample
from turnbench.types import Message, Order

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


Reader = Callable[[Path, ImportOptions, DataLocator], Imported]


def describe_sources(paths: Mapping[str, Path]) -> dict[str, str]:
    """File name -> sha256, for `imported.files`."""
    return {name: sha256_file(path) for name, path in paths.items()}
