"""Conversations scored as a whole (an agent with tools and a simulated user), as the log has
them: each run of a sample (a model, a trial) as one transcript in the order it was held,
with its outcome.

The order is rebuilt from the step numbers, without reading any record again: the user
opens; each agent step is one answer, followed by the tool call it made (a `step` record of
the same number) or, when it wrote to the user, by the user's next turn. The outcome is the
sample record's score, how the conversation ended and its explanation (`detail`): a
database diff (rows of table, record, path, expected, found), outputs never told, and any
other scalar the benchmark gave. Everything here is plain data: the report's and the view's
templates escape it. It is also data a run directory may hold from anywhere (an old run, an
imported file, a hostile agent): every text is cut (MAX_TEXT_CHARS, MAX_VALUE_CHARS), a lone
surrogate shown as U+FFFD (a page cannot be encoded with one), a tool's name, which the model
chose, shown with its invisible and control characters escaped (`visible_name`), and the
controls of machine text (a tool's arguments and output, a diff's values) shown (`plain`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from turnbench.journal.logindex import (
    AnswerDone,
    JudgmentDone,
    SampleDone,
    StepDone,
    UserTurnDone,
)
from turnbench.safetext import fix_surrogates, plain, visible_name
from turnbench.store.rundir import Run, sample_sort_key
from turnbench.types import AnswerRecord

MAX_VALUE_CHARS = 2_000  # a diff's value or a tool's output beyond this is cut (and says so)
#: a message of the user or the agent beyond this is cut (and says so), as the viewer cuts
#: every text it shows (a 60-million-character message was a 61.5 MB page: issue 44)
MAX_TEXT_CHARS = 200_000
MAX_NAME_CHARS = 200  # a tool's name beyond this is cut (and says so)


@dataclass
class Line:
    """One line of a transcript: the user's turn, the agent's message, or a tool call with
    its result."""

    kind: str  # "user", "agent" or "tool"
    step: int
    text: str = ""
    name: str = ""  # the tool's
    arguments: str = ""
    output: str = ""


@dataclass
class Transcript:
    sample: str
    model: str
    trial: int | None
    entries: list[Line] = field(default_factory=list)
    score: float | None = None
    ended: str | None = None
    scored: bool = False  # a sample record was logged (else: still running or failed)
    diff: list[dict[str, str]] = field(default_factory=list)
    missing_outputs: list[str] = field(default_factory=list)
    facts: list[tuple[str, str]] = field(default_factory=list)  # other scalars of `detail`


def _cut(text: str, limit: int, more: str) -> str:
    """`text` at most `limit` characters, the rest counted; lone surrogates as U+FFFD."""
    if len(text) > limit:
        text = text[:limit] + f" … ({len(text) - limit:,} {more})"
    return fix_surrogates(text)


def shown_value(value: Any) -> str:
    """A JSON value as compact text, cut at MAX_VALUE_CHARS: machine text (a field, a tool's
    arguments or output), so a control or bidi control in it is shown, never obeyed
    (`plain`: NUL as ^@, U+202E as \\u202e; a tool's output may echo the name it was
    called by)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return plain(_cut(text, MAX_VALUE_CHARS, "more characters"))


def shown_text(text: str) -> str:
    """A message of the user or the agent, cut at MAX_TEXT_CHARS."""
    return _cut(text, MAX_TEXT_CHARS, "more characters not shown")


def shown_name(name: str) -> str:
    """A tool's name as the model wrote it, its invisible characters made visible."""
    return visible_name(_cut(name, MAX_NAME_CHARS, "more characters"))


def pretty(text: str) -> str:
    """A tool's arguments or output: indented when it is a JSON object or list."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return shown_value(text)
    if isinstance(value, dict | list):
        return shown_value(json.dumps(value, ensure_ascii=False, indent=2))
    return shown_value(text)


def _outcome(transcript: Transcript, done: SampleDone) -> None:
    transcript.scored = True
    transcript.score = done.score
    transcript.ended = done.ended
    detail: Mapping[str, Any] = done.detail if isinstance(done.detail, Mapping) else {}
    for row in detail.get("diff") or []:
        if isinstance(row, Mapping):
            transcript.diff.append(
                {
                    "table": shown_value(str(row.get("table", ""))),
                    "record": shown_value(str(row.get("record", ""))),
                    "path": shown_value(str(row.get("path", ""))),
                    "expected": shown_value(row.get("expected")),
                    "found": shown_value(row.get("found")),
                }
            )
    transcript.missing_outputs = [shown_value(str(o)) for o in detail.get("missing_outputs") or []]
    for name, value in detail.items():
        if name not in ("diff", "missing_outputs", "ended") and isinstance(
            value, str | int | float | bool
        ):
            transcript.facts.append((shown_value(str(name)), shown_value(value)))


def _ordered(
    users: dict[int, UserTurnDone],
    answers: dict[int, AnswerDone],
    steps: dict[int, StepDone],
    text_of: Callable[[AnswerDone], str],
) -> list[Line]:
    entries: list[Line] = []
    user_turn = 1
    if 1 in users:
        entries.append(Line("user", 0, text=shown_text(users[1].text)))
    for number in sorted(answers):
        answer = answers[number]
        text = answer.text if answer.text is not None else text_of(answer)
        if text:
            entries.append(Line("agent", number, text=shown_text(text)))
        step = steps.get(number)
        if step is not None:
            arguments, output = pretty(step.arguments), pretty(step.output)
            name = shown_name(step.name)
            entries.append(Line("tool", number, name=name, arguments=arguments, output=output))
            continue
        if answer.tool_calls:  # (called, but its step was not logged: the run stopped)
            for call in answer.tool_calls:
                function = call.get("function") or {}
                name, arguments = str(function.get("name", "")), str(function.get("arguments", ""))
                entries.append(
                    Line("tool", number, name=shown_name(name), arguments=pretty(arguments))
                )
            continue
        user_turn += 1
        if user_turn in users:
            entries.append(Line("user", number, text=shown_text(users[user_turn].text)))
    return entries


def transcripts(run: Run, sample: str | None = None) -> list[Transcript]:
    """The transcripts of a run's samples scored as a whole or holding tool steps (of
    `sample` only, when given), by sample, model and trial; a sample of turn-by-turn judging
    has none. An answer whose text the index does not keep (an imported one) is read from
    its record in the log."""

    def text_of(answer: AnswerDone) -> str:
        record = run.load(answer)
        return record.text if isinstance(record, AnswerRecord) else ""

    parts: dict[tuple[str, str, int | None], dict[str, Any]] = {}
    whole: set[str] = set()
    for item in run.index.done.values():
        if isinstance(item, JudgmentDone) or getattr(item, "arm", None) is not None:
            continue
        name = str(item.sample_id)
        if sample is not None and name != sample:
            continue
        key = (name, item.model, getattr(item, "trial", None))
        part = parts.setdefault(key, {"users": {}, "answers": {}, "steps": {}, "sample": None})
        if isinstance(item, UserTurnDone):
            part["users"][item.turn] = item
        elif isinstance(item, AnswerDone):
            part["answers"][item.turn] = item
        elif isinstance(item, StepDone):
            part["steps"][item.turn] = item
            whole.add(name)
        elif isinstance(item, SampleDone):
            part["sample"] = item
            whole.add(name)
    found = []
    for key in sorted(parts, key=_order):
        name, model, trial = key
        if name not in whole:
            continue
        part = parts[key]
        lines = _ordered(part["users"], part["answers"], part["steps"], text_of)
        transcript = Transcript(name, model, trial, lines)
        if part["sample"] is not None:
            _outcome(transcript, part["sample"])
        found.append(transcript)
    return found


def _order(key: tuple[str, str, int | None]) -> tuple[Any, ...]:
    name, model, trial = key
    return (sample_sort_key(name), model, -1 if trial is None else trial)
