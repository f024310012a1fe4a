"""The log as results read it: the index, and answer texts read back only when needed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from turnbench.benchmarks.base import JudgedTurn
from turnbench.journal.conversations import ConversationId, Parts, conversation_parts
from turnbench.journal.logindex import (
    AnswerDone,
    JudgmentDone,
    LogIndex,
    UserTurnDone,
    index_records,
)
from turnbench.journal.runlog import parse_record_bytes
from turnbench.record_keys import answer_key, record_key
from turnbench.types import AnswerRecord, LogRecord, SampleId


class LogView:
    """The log's finished work by key (valid records only), and what was left out. `path`:
    the log file, for the answer texts the index does not keep (an imported answer's), read
    back when a benchmark's results need them (deterministic checks)."""

    def __init__(self, records: Sequence[LogRecord] | LogIndex, path: Path | None = None) -> None:
        self.path = path
        self.index = records if isinstance(records, LogIndex) else index_records(list(records))
        # records given in memory (tests, the API) keep their answer texts at hand
        self._held: dict[str, str] = (
            {}
            if isinstance(records, LogIndex)
            else {record_key(r): r.text for r in records if isinstance(r, AnswerRecord)}
        )
        self._texts: dict[str, dict[tuple[SampleId, int], str]] = {}
        self._lengths: dict[str, dict[tuple[SampleId, int], int]] = {}
        self.done = self.index.done
        self.invalid = self.index.invalid
        #: (model, judge, repeat, arm) -> items
        self.judged: dict[tuple[str, str, int, str | None], list[JudgedTurn]] = {}

    @cached_property
    def conversations(self) -> dict[ConversationId, Parts]:
        """Every conversation's records (`journal.conversations`), from one pass."""
        return conversation_parts(self.index)

    @cached_property
    def user_turn_models(self) -> frozenset[str]:
        """The models whose conversations had user turns made as they went, from one look
        at the index: a run of answers judged turn by turn has none, and finding that out
        must not build every conversation's parts (8 MB more at the peak of a full resume
        of 28,920 judgments)."""
        return frozenset(d.model for d in self.done.values() if isinstance(d, UserTurnDone))

    def judgment(self, key: str) -> JudgmentDone | None:
        record = self.done.get(key)
        return record if isinstance(record, JudgmentDone) else None

    def answered(self, model: str) -> set[tuple[Any, int]]:
        """(sample id, turn) of every answer of `model` in the log."""
        return self.index.answered.get(model, set())

    def answer(
        self,
        model: str,
        sample_id: SampleId,
        turn: int,
        *,
        read: bool = True,
        arm: str | None = None,
    ) -> str | None:
        """The recorded (cleaned) answer of a turn, if there is one. The index keeps the
        texts of generated answers; an imported one is read back from the log (`read`).
        `arm`: the answer given in that stress arm."""
        key = answer_key(model, sample_id, turn, arm)
        done = self.done.get(key)
        if not isinstance(done, AnswerDone):
            return None
        if done.text is None and key in self._held:
            return self._held[key]
        if read and done.text is None and self.path is not None and done.offset >= 0:
            with self.path.open("rb") as handle:
                handle.seek(done.offset)
                record = parse_record_bytes(handle.read(done.length))
            if isinstance(record, AnswerRecord):
                return record.text
        return done.text

    def answer_texts(self, model: str) -> dict[tuple[SampleId, int], str]:
        """Every recorded answer text of `model` (imported ones read back from the log in one
        pass, in file order), by (sample id, turn)."""
        cached = self._texts.get(model)
        if cached is not None:
            return cached
        texts: dict[tuple[SampleId, int], str] = {}
        unread: list[AnswerDone] = []
        for key, done in self.done.items():
            if not isinstance(done, AnswerDone) or done.model != model or done.arm is not None:
                continue
            text = done.text if done.text is not None else self._held.get(key)
            if text is not None:
                texts[(done.sample_id, done.turn)] = text
            elif done.offset >= 0:
                unread.append(done)
        if unread and self.path is not None:
            with self.path.open("rb") as handle:
                for done in sorted(unread, key=lambda d: d.offset):
                    handle.seek(done.offset)
                    record = parse_record_bytes(handle.read(done.length))
                    if isinstance(record, AnswerRecord):
                        texts[(done.sample_id, done.turn)] = record.text
        # one model's texts at a time: readers go model by model, and a run of 100 models
        # must not hold every answer of every model at once
        self._texts = {model: texts}
        return texts

    def answer_lookup(self, model: str) -> Callable[[SampleId, int], str | None]:
        """(sample id, turn) -> the model's recorded answer text, or None."""
        texts = self.answer_texts(model)
        return lambda sample_id, turn: texts.get((sample_id, turn))

    def answer_length_lookup(self, model: str) -> Callable[[SampleId, int], int | None]:
        """(sample id, turn) -> the length in characters of the model's answer, or None;
        kept for every model (a few bytes per answer), unlike the texts."""
        lengths = self._lengths.get(model)
        if lengths is None:
            # from the index: no answer text is read again
            lengths = {
                (done.sample_id, done.turn): done.chars
                for done in self.done.values()
                if isinstance(done, AnswerDone) and done.model == model and done.arm is None
            }
            self._lengths[model] = lengths
        return lambda sample_id, turn: lengths.get((sample_id, turn))

    def unclosed_think(self, model: str) -> list[tuple[SampleId, int]]:
        """(sample id, turn) of the answers of `model` cut off inside <think>."""
        found = [
            (d.sample_id, d.turn)
            for d in self.done.values()
            if isinstance(d, AnswerDone) and d.model == model and d.unclosed_think and d.arm is None
        ]
        return sorted(found, key=lambda item: (str(item[0]), item[1]))
