"""Conversations as the report and the viewer draw them: each one's lines in the order it was
held, with its outcome drawn by its benchmark's own template.

The conversation comes whole from the run (`Run.conversations`, the one reader of
conversations); this module only decides how each message is shown: the user's and other
speakers' lines, the agent's text, each tool call with its result folded under it (the
result is the tool message that answers the call's id), and the benchmark's system message
folded at the top. The outcome is drawn by the benchmark's template
(`Benchmark.outcome_template`, given the typed `outcome`), or listed field by field for a
benchmark without one; why a failed conversation failed, in a line, is the outcome's own
`why()` when it has one. Everything here is plain data or markup the templates escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from markupsafe import Markup
from pydantic import BaseModel

from turnbench.benchmarks.base import Benchmark
from turnbench.conversation import Conversation, Said
from turnbench.report.markup import cut as cut_at
from turnbench.report.markup import shown_value
from turnbench.report.templating import render_file
from turnbench.safetext import fix_surrogates, visible_name
from turnbench.store.rundir import Run

#: a message's text beyond this is cut (and says so), as the viewer cuts every text it shows
#: (a 60-million-character message was a 61.5 MB page: issue 44)
MAX_LINE_CHARS = 200_000
MAX_NAME_CHARS = 200  # a tool's name beyond this is cut (and says so)


@dataclass
class Line:
    """One line of a transcript: a speaker's message ("user", "agent", "system" or a
    driver's role), or a tool call with its result."""

    kind: str  # "system", "user", "agent", "tool", or the name of a driver's role
    step: int  # the agent's step it belongs to (0: before its first)
    text: str = ""
    name: str = ""  # the tool's
    arguments: str = ""
    output: str = ""
    by: str = ""  # who produced it (the conversation's `Said.by`)


@dataclass
class Transcript:
    conversation: Conversation
    entries: list[Line] = field(default_factory=list)
    outcome: Markup = field(default_factory=Markup)  # drawn by the benchmark's template
    why: str = ""  # why it failed, in a line ("" when it passed or is not finished)

    @property
    def sample(self) -> str:
        return str(self.conversation.sample_id)

    @property
    def model(self) -> str:
        return self.conversation.model

    @property
    def trial(self) -> int | None:
        return self.conversation.trial

    @property
    def score(self) -> float | None:
        return self.conversation.score

    @property
    def ended(self) -> str | None:
        return self.conversation.ended

    @property
    def scored(self) -> bool:
        return self.conversation.finished


def cut(text: str) -> str:
    """A message's text cut at MAX_LINE_CHARS, saying how many more there were."""
    return cut_at(text, MAX_LINE_CHARS, "more characters not shown")


def shown_name(name: str) -> str:
    """A tool's name as the model wrote it, its invisible characters made visible."""
    return visible_name(cut_at(name, MAX_NAME_CHARS))


def pretty(text: str) -> str:
    """A tool's arguments or output: indented when it is a JSON object or list (a lone
    surrogate its escapes spell is shown as U+FFFD: the page is UTF-8; a value too deep to
    indent, or too long, is shown as written, cut)."""
    if len(text) > MAX_LINE_CHARS:
        return cut(text)
    try:
        value = json.loads(text)
        if isinstance(value, dict | list):
            return shown_value(fix_surrogates(json.dumps(value, ensure_ascii=False, indent=2)))
    except (ValueError, RecursionError):
        pass
    return shown_value(text)


def passed(conversation: Conversation) -> bool:
    """Whether a finished conversation passed: as its outcome says (`passed()`, when the
    benchmark's outcome model has one: an attack that succeeded fails a conversation whose
    user task was done), else a score of 1."""
    judged = getattr(conversation.outcome, "passed", None)
    if callable(judged):
        return bool(judged())
    return conversation.score is not None and conversation.score >= 1.0


def why(conversation: Conversation) -> str:
    """Why a finished conversation failed, in a line: its outcome's `why()` when it has
    one, else how it ended and its score."""
    if not conversation.finished or passed(conversation):
        return ""
    outcome = conversation.outcome
    explain = getattr(outcome, "why", None)
    if callable(explain):
        reason = explain()
        if isinstance(reason, str) and reason:
            return reason
    if conversation.ended:
        return f"ended: {conversation.ended}; scored {conversation.score}"
    return "scored below 1"


def lines(conversation: Conversation) -> list[Line]:
    """The conversation's messages as lines: each tool call with the result that answers
    its id (or, a result with no call naming it, on its own)."""
    results: dict[str, Said] = {}
    for said in conversation.messages:
        if said.role == "tool" and said.tool_call_id:
            results.setdefault(said.tool_call_id, said)
    shown: set[int] = set()
    entries: list[Line] = []
    step = 0
    for said in conversation.messages:
        if said.role == "assistant":
            step += 1
            if said.content:
                entries.append(Line("agent", step, text=cut(said.content), by=said.by))
            for call in said.tool_calls:
                result = results.get(call.id)
                if result is not None:
                    shown.add(id(result))
                entries.append(
                    Line(
                        "tool", step, name=shown_name(call.name), arguments=pretty(call.arguments),
                        output=pretty(result.content) if result is not None else "", by="tool",
                    )
                )  # fmt: skip
        elif said.role == "tool":
            if id(said) not in shown:
                entries.append(
                    Line(
                        "tool",
                        step,
                        name=shown_name(said.name or ""),
                        output=pretty(said.content),
                        by="tool",
                    )
                )
        else:
            kind = said.role if said.by in ("user", "benchmark", "model") else said.by
            kind = "system" if said.role in ("system", "developer") else kind
            entries.append(Line(kind, step, text=cut(said.content), by=said.by))
    return entries


def outcome_markup(cls: type[Benchmark] | None, conversation: Conversation) -> Markup:
    """The outcome drawn by the benchmark's template, or its fields listed."""
    outcome = conversation.outcome
    if not conversation.finished or outcome is None:
        return Markup()
    path = cls.outcome_template_path() if cls is not None else None
    if path is not None and isinstance(outcome, BaseModel):
        return render_file(path, outcome=outcome, conversation=conversation)
    fields = outcome.model_dump(mode="json") if isinstance(outcome, BaseModel) else outcome
    facts = [
        (str(name), shown_value(value))
        for name, value in (fields.items() if isinstance(fields, Mapping) else ())
    ]
    return render_file(None, facts=facts)


def transcripts(run: Run, sample: str | None = None) -> list[Transcript]:
    """The transcripts of a run's conversations scored as a whole or holding tool calls (of
    `sample` only, when given), by sample, model and trial; a conversation judged turn by
    turn is shown turn by turn instead."""
    cls = run.benchmark_class_or_none()
    found = []
    for conversation in run.conversations(sample=sample):
        if not conversation.finished and not any(
            said.role == "tool" for said in conversation.messages
        ):
            continue
        found.append(
            Transcript(
                conversation,
                lines(conversation),
                outcome_markup(cls, conversation),
                why(conversation),
            )
        )
    return found
