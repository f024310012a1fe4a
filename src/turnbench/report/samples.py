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

from dataclasses import dataclass, field
from pathlib import Path

from turnbench.benchmarks.base import Benchmark, BenchmarkSettings, Sample
from turnbench.errors import UserError


@dataclass
class DialogueText:
    sample_id: str
    group: str | None = None
    questions: dict[int, str] = field(default_factory=dict)
    golden: dict[int, str] = field(default_factory=dict)  # the dataset's reference answers
    #: simulated conversations: who wrote each user turn, the shards it revealed, the rules
    #: it broke and the end of the conversation, as the log's user turns record them
    users: dict[int, str] = field(default_factory=dict)


Texts = dict[str, DialogueText]


def user_turn_note(
    origin: str, revealed: tuple[int, ...], problems: tuple[str, ...], ended: str | None
) -> str:
    """How the browser labels a simulated user turn."""
    parts = ["simulated user: " + ("user model" if origin == "user-model" else "template")]
    if revealed:
        parts.append(f"shards revealed: {', '.join(map(str, revealed))}")
    if problems:
        parts.append(f"broke: {', '.join(problems)}")
    if ended:
        parts.append(f"ended the conversation ({ended})")
    return "; ".join(parts)


def texts_from_samples(samples: list[Sample]) -> Texts:
    texts: Texts = {}
    for sample in samples:
        text = DialogueText(str(sample.id), group=sample.group)
        for number, turn in enumerate(sample.turns, start=1):
            text.questions[number] = turn.user
            if turn.golden is not None:
                text.golden[number] = turn.golden
        texts[text.sample_id] = text
    return texts


def texts_from_data(
    cls: type[Benchmark] | None, benchmark: str, data_dir: Path | None
) -> tuple[Texts, str | None]:
    """The benchmark's dialogues from its verified data files, or ({}, why not)."""
    from turnbench.benchmarks.datafiles import DataLocator

    if cls is None:
        return {}, f"benchmark {benchmark!r} is not available here"
    locator = DataLocator(data_dir, allow_download=False)
    try:
        files = cls.locate_files(locator)
        return texts_from_samples(cls(files, BenchmarkSettings()).all_samples()), None
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
            text.users.update(source.users)
        merged[sample] = text
    return merged
