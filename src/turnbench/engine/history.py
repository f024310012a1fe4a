"""What came before a turn: the conversation a request carries, and the part of it a record keeps.

Every driver builds a turn's request on the turns before it: the dataset's answers (golden
history) or the model's own (self history, simulated users, agents). `earlier_pairs` is that
choice for text turns. `Thread` is what a record of a growing conversation keeps: only the
messages its step appended since the step before it in the same thread (`after`), never
the whole history again, so a log grows with a conversation's length, not its square
(`benchmarks/log_growth.py`); `journal.threads` puts the whole request back together from
the chain when a reader needs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from turnbench.journal.logindex import AnswerDone
from turnbench.judging.cleaning import UNCLOSED_THINK
from turnbench.samples import Pair, Sample
from turnbench.types import AnswerRecord, Message


def earlier_pairs(sample: Sample, turn: int, history: str, own: Mapping[int, str]) -> list[Pair]:
    """The (user, assistant) turns before `turn`: the dataset's answers for golden history and
    for turns the model is not asked; the model's own (cleaned) answers otherwise."""
    pairs: list[Pair] = []
    for number in range(1, turn):
        spec = sample.turns[number - 1]
        if history == "golden" or not spec.asked:
            pairs.append((spec.user, spec.golden or ""))
        else:
            pairs.append((spec.user, own[number]))
    return pairs


def cut_off(record: AnswerRecord | AnswerDone) -> bool:
    """Whether an answer ended inside an unclosed <think> block: it has no answer to judge."""
    if isinstance(record, AnswerDone):
        return record.unclosed_think
    return bool(record.meta.get(UNCLOSED_THINK))


def with_user_turns(sample: Sample, texts: Sequence[str]) -> Sample:
    """`sample` as a simulated conversation has it so far: its first turns carry the user
    messages made at run time (`texts`), so the benchmark's request and judge prompts read
    them where they read any user turn."""
    turns = tuple(
        replace(spec, user=texts[number]) if number < len(texts) else spec
        for number, spec in enumerate(sample.turns)
    )
    return replace(sample, turns=turns)


def reply_message(text: str | None, tool_calls: list[dict[str, Any]] | None) -> Message:
    """The message a logged step's reply adds to its thread: the text it kept (an answer's
    cleaned text, a user turn's text) and the tool calls it made (`journal.threads` reads
    a log back the same way)."""
    message: dict[str, Any] = {"role": "assistant", "content": text or ""}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message  # type: ignore[return-value]


@dataclass
class Thread:
    """One role's side of a growing conversation, as its records keep it.

    `last` is the key of the latest logged step of the thread and `known` how many messages
    of the conversation that step's request and reply hold. The next step's record keeps
    `appended(messages)`, the messages past those, and names `last` as the step it
    continues; a request that does not extend the thread (its start differs: a history
    rewritten by the benchmark) is kept whole, as the first step of a thread is.

    The thread keeps the caller's list of the latest request, never a copy (a copy per
    step made a conversation of n steps cost n squared: issue 44). A caller that passes the
    same list again, grown by appending (the reply and what followed it), is checked in
    constant time, at the reply; a new list is compared with the last one message by
    message. So a caller may append to a list it passed, never change what is in it.
    """

    last: str | None = None
    known: int = 0
    _sent: list[Message] | None = None  # the latest step's request (the caller's list)
    _reply: Message | None = None  # and its reply

    def appended(self, messages: list[Message]) -> tuple[str | None, list[Message]]:
        """(the step this request continues or None, the messages its record keeps)."""
        sent, reply = self._sent, self._reply
        if self.last is None or sent is None or len(messages) < self.known:
            return None, messages
        asked = self.known - 1  # (the messages of the latest request, before its reply)
        if messages[asked] != reply:
            return None, messages
        if messages is not sent and messages[:asked] != sent[:asked]:
            return None, messages
        return self.last, messages[self.known :]

    def logged(self, key: str, messages: list[Message], reply: Message) -> None:
        """The step `key` sent `messages` and got `reply`: the thread now holds both."""
        self.last = key
        self._sent = messages
        self._reply = reply
        self.known = len(messages) + 1
