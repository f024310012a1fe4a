"""Answers taken from an earlier turnbench run directory, for judge-only runs.

A run directory's log already holds every answer it generated or imported, so it can stand
in for an answer file: each model in the log becomes one AnswerSet, named as the run named
it, with a checksum over its answer texts (the log itself keeps growing, so hashing the file
would make every resume look like changed answers).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from turnbench.benchmarks.base import AnswerSet
from turnbench.errors import UserError
from turnbench.runlog import LOG_NAME, read_records
from turnbench.types import AnswerRecord, SampleId


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / LOG_NAME).is_file()


def answer_sources(path: Path) -> list[Path]:
    """What `--answers PATH` names: one file, one run directory, or a folder of either."""
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    if not path.is_dir() or is_run_dir(path):
        return [path]
    sources = sorted(
        p for p in path.iterdir() if (p.is_file() and p.suffix == ".jsonl") or is_run_dir(p)
    )
    if not sources:
        raise UserError(
            f"{path}: no *.jsonl answer files and no turnbench run directories in this folder"
        )
    return sources


def answers_sha256(answers: Mapping[SampleId, list[str]]) -> str:
    canonical = json.dumps(
        {str(key): value for key, value in answers.items()}, sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load_run_answer_sets(
    path: Path, turns_of: Mapping[SampleId, int], planned: list[SampleId]
) -> list[AnswerSet]:
    """One AnswerSet per model of the run; every planned sample must have all its turns."""
    records, _ = read_records(path / LOG_NAME)
    texts: dict[str, dict[SampleId, dict[int, str]]] = defaultdict(lambda: defaultdict(dict))
    for record in records:
        if isinstance(record, AnswerRecord) and record.sample_id in turns_of:
            texts[record.model][record.sample_id][record.turn] = record.text
    if not texts:
        raise UserError(f"{path}: this run directory holds no answers to these questions")
    sets = []
    for model, by_sample in texts.items():
        answers: dict[SampleId, list[str]] = {}
        for sample_id, turns in by_sample.items():
            wanted = range(1, turns_of[sample_id] + 1)
            if all(turn in turns for turn in wanted):
                answers[sample_id] = [turns[turn] for turn in wanted]
        missing = [sample for sample in planned if sample not in answers]
        if missing:
            shown = ", ".join(map(str, missing[:12])) + (" ..." if len(missing) > 12 else "")
            raise UserError(
                f"{path}: model {model} has no complete answers for {len(missing)} planned "
                f"sample(s): {shown} (finish that run, or use the same --limit)"
            )
        sets.append(
            AnswerSet(model=model, path=path, sha256=answers_sha256(answers), answers=answers)
        )
    return sets
