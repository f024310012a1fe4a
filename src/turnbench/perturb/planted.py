"""`--planted-answers FILE`: the flawed earlier answers of the planted-error arm.

Any answer file turnbench reads will do: a FastChat `model_answer` JSONL file (one line per
question, `question_id` and `choices[0].turns`), the generic `{"id", "turn", "answer"}`
lines, or an earlier turnbench run directory (its log's answers, of one model). Unlike
`--answers` of a judge-only run, the file need not answer every planned turn: a turn it
has no answer for is simply not in the arm (counted in results). What it holds is checked
like any answer file, every problem with its line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from turnbench.errors import UserError
from turnbench.journal.runlog import LOG_NAME, read_records
from turnbench.samples import Sample
from turnbench.textio import ErrorCollector, read_jsonl
from turnbench.types import AnswerRecord, SampleId


@dataclass(frozen=True)
class PlantedAnswers:
    """Answers by (sample id, turn), read from `path` (`sha256`: of the texts)."""

    path: Path
    sha256: str
    texts: dict[tuple[SampleId, int], str]

    def get(self, sample_id: SampleId, turn: int) -> str | None:
        return self.texts.get((sample_id, turn))


def _digest(texts: Mapping[tuple[SampleId, int], str]) -> str:
    canonical = json.dumps(
        sorted([str(i), t, text] for (i, t), text in texts.items()), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def load_planted(path: Path, samples: Mapping[SampleId, Sample]) -> PlantedAnswers:
    """The planted answers `path` holds, for the benchmark's `samples` (all of them, by id)."""
    if not path.exists():
        raise UserError(f"--planted-answers {path}: no such file or folder")
    if path.is_dir():
        if not (path / LOG_NAME).is_file():
            raise UserError(
                f"--planted-answers {path}: a folder that is not a turnbench run directory "
                f"(no {LOG_NAME}); name one answer file or one run directory"
            )
        texts = _from_run(path, samples)
    else:
        texts = _from_file(path, samples)
    if not texts:
        raise UserError(f"--planted-answers {path}: no answers to this benchmark's samples")
    return PlantedAnswers(path=path, sha256=_digest(texts), texts=texts)


def _from_run(path: Path, samples: Mapping[SampleId, Sample]) -> dict[tuple[SampleId, int], str]:
    records, _ = read_records(path / LOG_NAME)
    by_model: dict[str, dict[tuple[SampleId, int], str]] = {}
    for record in records:
        if isinstance(record, AnswerRecord) and record.arm is None and record.sample_id in samples:
            by_model.setdefault(record.model, {})[(record.sample_id, record.turn)] = record.text
    if len(by_model) > 1:
        raise UserError(
            f"--planted-answers {path}: the run holds answers of {len(by_model)} models "
            f"({', '.join(sorted(by_model))}); name a run of one model"
        )
    return next(iter(by_model.values()), {})


def _sample_of(
    collector: ErrorCollector, line: int, raw: object, samples: Mapping[SampleId, Sample]
) -> Sample | None:
    id_type = type(next(iter(samples))) if samples else int
    if type(raw) is not id_type:
        collector.add(line, f"the id {raw!r} is not a {id_type.__name__}, as sample ids are")
        return None
    sample = samples.get(raw)  # type: ignore[arg-type]
    if sample is None:
        collector.add(line, f"id {raw!r} is not a sample of this benchmark")
    return sample


def _from_file(path: Path, samples: Mapping[SampleId, Sample]) -> dict[tuple[SampleId, int], str]:
    collector = ErrorCollector(path)
    texts: dict[tuple[SampleId, int], str] = {}
    seen: dict[tuple[SampleId, int], int] = {}

    def keep(line: int, sample: Sample, turn: int, text: object) -> None:
        if not isinstance(text, str):
            collector.add(line, f"the answer to turn {turn} is not a string")
        elif not 1 <= turn <= len(sample.turns):
            collector.add(line, f"sample {sample.id} has turns 1-{len(sample.turns)}, not {turn}")
        elif (sample.id, turn) in seen:
            first = seen[(sample.id, turn)]
            collector.add(line, f"a second answer to id {sample.id} turn {turn} (line {first})")
        else:
            seen[(sample.id, turn)] = line
            texts[(sample.id, turn)] = text

    for line, value in read_jsonl(path, collector):
        if not isinstance(value, dict):
            collector.add(line, "expected a JSON object")
        elif "question_id" in value:  # FastChat: every turn of one question on one line
            sample = _sample_of(collector, line, value["question_id"], samples)
            choices = value.get("choices")
            first = choices[0] if isinstance(choices, list) and choices else None
            turns = first.get("turns") if isinstance(first, dict) else None
            if not isinstance(turns, list):
                collector.add(line, "expected choices[0].turns, a list of answers")
            elif sample is not None:
                for turn, text in enumerate(turns, start=1):
                    keep(line, sample, turn, text)
        elif {"id", "turn", "answer"} <= value.keys():
            sample = _sample_of(collector, line, value["id"], samples)
            turn = value["turn"]
            if type(turn) is not int:
                collector.add(line, f"field 'turn': expected an integer, got {turn!r}")
            elif sample is not None:
                keep(line, sample, turn, value["answer"])
        else:
            collector.add(
                line,
                "neither a FastChat answer (question_id, choices) nor an answer line "
                '({"id", "turn", "answer"})',
            )
    collector.raise_if_any()
    return texts
