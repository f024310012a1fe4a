"""The report's section for conversations scored as a whole (an agent with its tools, a
conversation its driver scores), and their transcripts in place of the turn-by-turn browser.

The section (`conversations.html`) gives, per model, how its conversations ended and every
failed one with the reason in a line (its benchmark's outcome says why: `transcripts.why`),
linked to its transcript. The transcripts (`transcripts.html`, the `transcript` macro of
`transcript.html`, which `turnbench view` shows too) come failed first, each folded, its
tool calls folded inside, its outcome drawn by its benchmark's own template; beyond
`budget` bytes of markup the rest are counted, not drawn (`turnbench view` shows each).
Conversations come from the one reader (`Run.conversations`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from turnbench.conversation import Conversation
from turnbench.report.cells import Link
from turnbench.report.markup import fmt
from turnbench.report.reading import single
from turnbench.report.templating import macro, render
from turnbench.report.transcripts import Transcript, passed, transcripts, why
from turnbench.store.rundir import Entry

#: failed conversations listed in the section's table per model (the rest are counted)
MAX_FAILED_ROWS = 200


def scored_whole(entries: list[Entry]) -> list[Entry]:
    """The entries whose samples were scored as whole conversations."""
    return [entry for entry in single(entries) if entry.conversations]


def anchor(entry_number: int, sample: str, trial: int | None) -> str:
    return f"conversation-{entry_number}-{sample}-{trial or 0}"


@dataclass
class EntryView:
    label: str
    conversations: int
    passed: int
    ended: list[list[object]]
    failed: list[list[object]]
    more_failed: int


def _view(entry: Entry, href: Callable[[Entry, str, int | None], str]) -> EntryView:
    done = outcomes(entry)
    ended = Counter(c.ended or "unknown" for c in done)
    failed = [c for c in done if not passed(c)]
    scored = {(str(d.sample_id), d.trial): d for d in entry.conversations}
    rows: list[list[object]] = [
        [Link(href(entry, str(c.sample_id), c.trial), f"#{c.sample_id} trial {c.trial or 0}"),
         scored[(str(c.sample_id), c.trial)].group or "–", fmt(c.score), c.ended or "–",
         scored[(str(c.sample_id), c.trial)].steps, why(c)]
        for c in failed[:MAX_FAILED_ROWS]
    ]  # fmt: skip
    return EntryView(
        label=entry.label,
        conversations=len(done),
        passed=len(done) - len(failed),
        ended=[[name, count] for name, count in ended.most_common()],
        failed=rows,
        more_failed=max(0, len(failed) - MAX_FAILED_ROWS),
    )


def outcomes(entry: Entry) -> list[Conversation]:
    """The entry's conversations scored whole, how each came out (no messages read)."""
    found = entry.run.conversations(model=entry.model, messages=False)
    return [conversation for conversation in found if conversation.finished]


def conversations_section(
    entries: list[Entry], sample_href: Callable[[Entry, str], str] | None = None
) -> Markup | None:
    """The section's body, or None when no entry was scored by whole conversations.
    `sample_href`: where a sample is shown (`turnbench view`); else its transcript below."""
    whole = scored_whole(entries)
    if not whole:
        return None

    def href(entry: Entry, sample: str, trial: int | None) -> str:
        if sample_href is not None:
            return sample_href(entry, sample)
        return "#" + anchor(whole.index(entry) + 1, sample, trial)

    views = [_view(entry, href) for entry in whole]
    return render("conversations.html", views=views)


def shown(transcript: Transcript, label: str) -> dict[str, Any]:
    """What the `transcript` macro draws (`label`: the model as the page names it)."""
    trial = "" if transcript.trial is None else f" · trial {transcript.trial}"
    return {
        "title": f"#{transcript.sample} · {label}{trial}",
        "scored": transcript.scored,
        "passed": passed(transcript.conversation),
        "score": transcript.score,
        "ended": transcript.ended,
        "why": transcript.why,
        "outcome": transcript.outcome,
        "entries": transcript.entries,
    }


#: failed conversations drawn open at the top of the report's transcripts
OPEN_FAILED = 3


def transcripts_body(entries: list[Entry], budget: int) -> Markup:
    """Every conversation of the entries scored whole, failed first, each folded (the first
    OPEN_FAILED failures drawn open, so the report shows a failure's why without a click),
    until `budget` bytes of markup; the rest counted."""
    whole = scored_whole(entries)
    draw = macro("transcript.html", "transcript")
    items: list[tuple[bool, int, Entry, Conversation]] = [
        (passed(done), number, entry, done)
        for number, entry in enumerate(whole, start=1)
        for done in outcomes(entry)
    ]
    items.sort(key=lambda item: item[0])  # (failed first; stable: sample and trial order)
    parts: list[str] = []
    used = 0
    left_out = 0
    held: dict[int, dict[tuple[str, int | None], Transcript]] = {}
    opened = 0
    for is_passed, number, entry, done in items:
        if used >= budget:
            left_out += 1
            continue
        if number not in held:
            held[number] = {(t.sample, t.trial): t for t in _transcripts_of(entry)}
        transcript = held[number].get((str(done.sample_id), done.trial))
        if transcript is None:
            continue
        anchored = anchor(number, transcript.sample, done.trial)
        is_open = not is_passed and opened < OPEN_FAILED
        opened += is_open
        markup = str(draw(shown(transcript, entry.label), anchored, is_open))
        parts.append(markup)
        used += len(markup)
    return render("transcripts.html", body=Markup("".join(parts)), left_out=left_out)


def _transcripts_of(entry: Entry) -> list[Transcript]:
    return [t for t in transcripts(entry.run) if t.model == entry.model]
