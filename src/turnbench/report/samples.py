"""The text of each dialogue (the user's questions, the dataset's own answers) for display.

results.json holds numbers only, so the dialogue browser needs the questions from elsewhere.
Two sources, in this order:

1. the run log: a generated answer stores the exact messages sent to the model, so its user
   messages are the questions of turns 1..k as the model saw them. This needs no data files
   and shows exactly what was asked.
2. the benchmark's data files (found like a run finds them: --data-dir, $TURNBENCH_DATA_DIR,
   the user cache; never downloaded here, and verified against their pinned checksums).
   They fill what the log lacks: judge-only runs import answers without messages, and
   MT-Bench-101's golden answers and unjudged first turns appear only in the data.

A question found in neither is shown as unavailable; the report never guesses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from turnbench.errors import UserError
from turnbench.textio import read_jsonl
from turnbench.types import AnswerRecord, LogRecord


@dataclass
class DialogueText:
    sample_id: str
    group: str | None = None
    questions: dict[int, str] = field(default_factory=dict)
    golden: dict[int, str] = field(default_factory=dict)  # the dataset's reference answers


Texts = dict[str, DialogueText]


def texts_from_log(records: list[LogRecord], into: Texts | None = None) -> Texts:
    texts: Texts = {} if into is None else into
    for record in records:
        if not isinstance(record, AnswerRecord) or not record.messages:
            continue
        sample = str(record.sample_id)
        text = texts.setdefault(sample, DialogueText(sample))
        users = [m["content"] for m in record.messages if m.get("role") == "user"]
        for turn, question in enumerate(users, start=1):
            text.questions.setdefault(turn, question)
    return texts


def _read_mt_bench(path: Path) -> Texts:
    texts: Texts = {}
    for _, row in read_jsonl(path):
        if not isinstance(row, dict) or "question_id" not in row:
            continue
        sample = str(row["question_id"])
        turns = row.get("turns") if isinstance(row.get("turns"), list) else []
        texts[sample] = DialogueText(
            sample,
            group=row.get("category") if isinstance(row.get("category"), str) else None,
            questions={i: str(t) for i, t in enumerate(turns, start=1)},
        )
    return texts


def _read_mt_bench_101(path: Path) -> Texts:
    texts: Texts = {}
    for _, row in read_jsonl(path):
        if not isinstance(row, dict) or "id" not in row:
            continue
        sample = str(row["id"])
        history = row.get("history") if isinstance(row.get("history"), list) else []
        text = DialogueText(
            sample, group=row.get("task") if isinstance(row.get("task"), str) else None
        )
        for turn, item in enumerate(history, start=1):
            if isinstance(item, dict):
                text.questions[turn] = str(item.get("user", ""))
                text.golden[turn] = str(item.get("bot", ""))
        texts[sample] = text
    return texts


DATA_READERS: dict[str, tuple[str, Callable[[Path], Texts]]] = {
    "mt-bench": ("mt_bench/question.jsonl", _read_mt_bench),
    "mt-bench-101": ("mt_bench_101/mtbench101.jsonl", _read_mt_bench_101),
}


def _dataset_of(benchmark: str) -> str:
    from turnbench.benchmarks import benchmark_class

    try:
        return benchmark_class(benchmark).dataset
    except (UserError, ImportError, AttributeError):
        return benchmark


def texts_from_data(benchmark: str, data_dir: Path | None) -> tuple[Texts, str | None]:
    """The benchmark's dialogues from its verified data files, or ({}, why not)."""
    from turnbench.data import DataLocator

    reader = DATA_READERS.get(benchmark)
    if reader is None:
        return {}, f"no dialogue reader for benchmark {benchmark!r}"
    relative, read = reader
    locator = DataLocator(data_dir, allow_download=False)
    try:
        files = locator.require(_dataset_of(benchmark))
        return read(files[relative]), None
    except (UserError, KeyError, OSError) as error:
        message = getattr(error, "message", str(error))
        return {}, message.splitlines()[0] if message else type(error).__name__


def merge_texts(primary: Texts, fallback: Texts) -> Texts:
    """`primary` (the log) wins; `fallback` (the data) fills groups, questions and answers."""
    merged: Texts = {}
    for sample in {*primary, *fallback}:
        first = primary.get(sample)
        second = fallback.get(sample)
        text = DialogueText(sample)
        for source in (s for s in (second, first) if s is not None):
            text.group = source.group or text.group
            text.questions.update(source.questions)
            text.golden.update(source.golden)
        merged[sample] = text
    return merged
