"""The report's section for conversations scored as a whole (an agent with tools and a
simulated user: tau-bench), and their transcripts in place of the turn-by-turn browser.

The section (`conversations.html`) gives, per model, how its conversations ended and every
failed one with the reason in a line (the database fields that differ from the gold state,
the outputs never told, a conversation cut off), linked to its transcript. The transcripts
(`transcripts.html`, the `transcript` macro of `transcript.html`, which `turnbench view`
shows too) come failed first, each folded, its tool calls folded inside; beyond
`budget` bytes of markup the rest are counted, not drawn (`turnbench view` shows each).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from turnbench.journal.logindex import SampleDone
from turnbench.report.cells import Link
from turnbench.report.markup import fmt
from turnbench.report.reading import single
from turnbench.report.templating import macro, render
from turnbench.report.transcripts import Transcript, transcripts
from turnbench.store.rundir import Entry

#: failed conversations listed in the section's table per model (the rest are counted)
MAX_FAILED_ROWS = 200


def scored_whole(entries: list[Entry]) -> list[Entry]:
    """The entries whose samples were scored as whole conversations."""
    return [entry for entry in single(entries) if entry.conversations]


def anchor(entry_number: int, sample: str, trial: int | None) -> str:
    return f"conversation-{entry_number}-{sample}-{trial or 0}"


def _passed(done: SampleDone | Transcript) -> bool:
    return done.score is not None and done.score >= 1.0


def _reason(done: SampleDone) -> str:
    """Why a conversation failed, in a line."""
    detail: dict[str, Any] = done.detail if isinstance(done.detail, dict) else {}
    reasons = []
    if done.ended not in (None, "user_stop", "terminating_tool"):
        reasons.append(f"ended: {done.ended}")
    diff = detail.get("diff") or []
    if diff:
        tables = sorted({str(row.get("table")) for row in diff if isinstance(row, dict)})
        shown = "50+" if len(diff) >= 50 else str(len(diff))
        reasons.append(f"database differs from the gold state ({shown} field(s) in "
                       f"{', '.join(tables)})")  # fmt: skip
    missing = detail.get("missing_outputs") or []
    if missing:
        reasons.append("never told: " + ", ".join(str(item) for item in missing))
    return "; ".join(reasons) or "scored below 1"


@dataclass
class EntryView:
    label: str
    conversations: int
    passed: int
    ended: list[list[object]]
    failed: list[list[object]]
    more_failed: int


def _view(entry: Entry, href: Callable[[Entry, str, int | None], str]) -> EntryView:
    done = entry.conversations
    ended = Counter(d.ended or "unknown" for d in done)
    failed = [d for d in done if not _passed(d)]
    rows: list[list[object]] = [
        [Link(href(entry, str(d.sample_id), d.trial), f"#{d.sample_id} trial {d.trial or 0}"),
         d.group or "–", fmt(d.score), d.ended or "–", d.steps, _reason(d)]
        for d in failed[:MAX_FAILED_ROWS]
    ]  # fmt: skip
    return EntryView(
        label=entry.label,
        conversations=len(done),
        passed=len(done) - len(failed),
        ended=[[name, count] for name, count in ended.most_common()],
        failed=rows,
        more_failed=max(0, len(failed) - MAX_FAILED_ROWS),
    )


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
        "passed": _passed(transcript),
        "score": transcript.score,
        "ended": transcript.ended,
        "facts": transcript.facts,
        "missing_outputs": transcript.missing_outputs,
        "diff": transcript.diff,
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
    items: list[tuple[bool, int, Entry, SampleDone]] = [
        (_passed(done), number, entry, done)
        for number, entry in enumerate(whole, start=1)
        for done in entry.conversations
    ]
    items.sort(key=lambda item: item[0])  # (failed first; stable: sample and trial order)
    parts: list[str] = []
    used = 0
    left_out = 0
    held: dict[int, dict[tuple[str, int | None], Transcript]] = {}
    opened = 0
    for passed, number, entry, done in items:
        if used >= budget:
            left_out += 1
            continue
        if number not in held:
            held[number] = {(t.sample, t.trial): t for t in _transcripts_of(entry)}
        transcript = held[number].get((str(done.sample_id), done.trial))
        if transcript is None:
            continue
        anchored = anchor(number, transcript.sample, done.trial)
        is_open = not passed and opened < OPEN_FAILED
        opened += is_open
        markup = str(draw(shown(transcript, entry.label), anchored, is_open))
        parts.append(markup)
        used += len(markup)
    return render("transcripts.html", body=Markup("".join(parts)), left_out=left_out)


def _transcripts_of(entry: Entry) -> list[Transcript]:
    return [t for t in transcripts(entry.run) if t.model == entry.model]
