"""The dialogue browser: every judged sample, turn by turn, all models side by side.

Each sample is a closed <details> element carrying its group, its turn scores and whether a
turn failed as data attributes; the page's filter script shows or hides samples by those
attributes and never builds markup. This module gathers what each sample shows (its
views); `dialogues.html` draws it, every dataset text, answer and judge reply escaped.

A large run's transcripts do not go into the report file: once the rendered dialogues pass
`Pages.inline_limit` bytes, they are written to page files in a folder beside the report
(`REPORT-files/dialogues-B-N.html`, about `Pages.page_limit` bytes each, each a complete
page with the same content policy and filter script), and the report keeps one closed row
per sample (its scores, group and failure mark, so the filters work on every sample) with a
link to the page holding its dialogue. Records are read from the log one sample at a time,
so neither the report nor its pages are ever held whole in memory.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from turnbench.journal.logindex import AnswerDone, JudgmentDone
from turnbench.report.compare import DEFAULT_RULE, SampleScore, rule_for, sample_scores
from turnbench.report.markup import fmt, sample_anchor
from turnbench.report.reading import is_pairwise
from turnbench.report.samples import DialogueText, Texts
from turnbench.report.templating import macro, render
from turnbench.store.rundir import Entry, Run, TurnKey, sample_sort_key

NO_GROUP = "(none)"
CONTEXT_ONLY = "Turn {} (context only: not answered or judged)"
INLINE_LIMIT = 2_000_000  # bytes of dialogue markup kept in the report file itself
PAGE_LIMIT = 1_000_000  # bytes of dialogue markup per page file
PAGE_FILE = re.compile(r"dialogues-\d+-\d+\.html")


@dataclass
class Pages:
    """Where a large report's dialogues go: page files in a folder beside the report."""

    report: Path  # the report file; pages go to REPORT_STEM-files/ beside it
    title: str
    frame: Callable[[str, Markup], str]  # (title, body markup) -> a whole page
    inline_limit: int = INLINE_LIMIT
    page_limit: int = PAGE_LIMIT
    written: list[Path] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return self.report.with_name(f"{self.report.stem}-files")

    def href(self, name: str, target: str = "") -> str:
        """A link from the report to a page (escape the result for an attribute)."""
        return quote(self.folder.name) + "/" + name + (f"#{target}" if target else "")

    def back(self, target: str) -> str:
        """A link from a page back to the report."""
        return "../" + quote(self.report.name) + f"#{target}"

    def clear(self) -> None:
        """Remove the pages an earlier report left (only files this module names)."""
        if not self.folder.is_dir():
            return
        for path in self.folder.iterdir():
            if PAGE_FILE.fullmatch(path.name) and path.is_file() and not path.is_symlink():
                path.unlink()

    def write(self, name: str, text: str) -> None:
        from turnbench.interop.export import write_text

        target = self.folder / name
        if os.path.islink(target):  # never write through a link planted in the folder
            target.unlink()
        write_text(target, text)
        self.written.append(target)


@dataclass
class JudgeView:
    """A judgment under an answer: its prompt, outcome and the judge's replies."""

    title: str  # the prompt's name and the re-asks
    score: str | None  # None: unparseable
    replies: list[tuple[str, str]]  # (what it replies to, the reply)
    parse_error: str | None

    @classmethod
    def of(cls, record: JudgmentDone, outputs: list[str]) -> JudgeView:
        title = record.prompt_name + (f" · re-asks {record.reasks}" if record.reasks else "")
        score = fmt(record.score, 1) if record.status == "scored" else None
        replies = [
            ("judge reply" if index == 0 else f"reply to re-ask {index}", output)
            for index, output in enumerate(outputs)
        ]
        return cls(title, score, replies, record.parse_error)


@dataclass
class AnswerView:
    """One model's answer to one turn, with its score and judgment."""

    label: str
    badge: str | None  # "score" (a score), "fail", "no_change" (a badge); None: nothing
    shown: str  # the score or the badge's text
    text: str | None  # None: no answer recorded
    notes: list[str]
    judge: JudgeView | None


@dataclass
class GameView:
    shown_a: str
    shown_b: str
    outcome: str
    replies: list[str]


@dataclass
class TurnView:
    heading: str
    question: str | None
    user_note: str | None  # a simulated user's turn: who wrote it, what it revealed
    golden: str | None
    answers: list[AnswerView] | None  # None: no model answered or was judged on it
    games: list[GameView]  # the pairwise games of this turn (both orders)


@dataclass
class SummaryView:
    """A sample's summary line and the data attributes the filters read."""

    sample: str
    group: str
    scores: list[tuple[str, str]]  # (model, its sample score as shown)
    failed: bool
    data_scores: str


def _score_badge(
    record: JudgmentDone | None, failure: str | None, answered: bool
) -> tuple[str, str] | None:
    if record is not None:
        if record.status == "scored" and record.score is not None:
            return "score", fmt(record.score, 1)
        return "fail", "unparseable"
    if failure is not None:
        return "fail", "request failed"
    return ("no_change", "not judged") if answered else None


Shown = dict[tuple[int, int], "str | list[str]"]  # (id(run), offset) -> text or replies


def _answer(entry: Entry, key: TurnKey, failures: dict[TurnKey, str], shown: Shown) -> AnswerView:
    answer = entry.answers.get(key)
    record = entry.judgments.get(key)
    failure = failures.get(key)
    text = shown.get((id(entry.run), answer.offset)) if answer is not None else None
    notes = []
    if answer is not None and answer.finish_reason == "length":
        notes.append("the answer hit its token limit")
    if failure is not None:
        notes.append(f"request failed (a re-run retries it): {failure}")
    judge = None
    if record is not None:
        judge = JudgeView.of(record, list(shown.get((id(entry.run), record.offset), [])))
    badge = None if is_pairwise(entry.run) else _score_badge(record, failure, answer is not None)
    kind, label = badge or (None, "")
    text = None if answer is None else str(text or "")
    return AnswerView(entry.label, kind, label, text, notes, judge)


def _game(record: JudgmentDone, replies: list[str]) -> GameView:
    """A pairwise game: the models shown as A and B, and its verdict as the browser names it."""
    shown_a = record.meta.get("model_a", record.model)
    shown_b = record.meta.get("model_b", "?")
    if record.status != "scored":
        outcome = "unparseable"
    elif record.verdict in ("A", "B"):
        outcome = f"{record.verdict}: {shown_a if record.verdict == 'A' else shown_b} wins"
    else:
        outcome = str(record.verdict)
    return GameView(shown_a, shown_b, outcome, replies)


def _turns_of(sample: str, text: DialogueText | None, context: _Context) -> list[int]:
    turns: set[int] = set(text.questions) if text else set()
    turns |= context.turns.get(sample, set())
    return sorted(turns)


def _sample_score(score: SampleScore | None, combine: str) -> float | None:
    if score is None or not score.parts or (combine == "min" and score.failed):
        return None
    values = list(score.parts.values())
    return min(values) if combine == "min" else sum(values) / len(values)


@dataclass
class _Context:
    """What every sample block of one benchmark's browser needs."""

    benchmark: str
    entries: list[Entry]
    texts: Texts
    scores: list[dict[str, SampleScore]]
    failures: list[dict[TurnKey, str]]
    games: dict[TurnKey, list[tuple[Run, JudgmentDone]]]
    groups: dict[str, str]
    rule: object
    turns: dict[str, set[int]] = field(default_factory=dict)  # sample -> answered/judged turns
    records: dict[str, list[tuple[Run, AnswerDone | JudgmentDone]]] = field(
        default_factory=dict
    )  # sample -> what its block shows (read from the log when it is rendered)
    openings: dict[str, Markup] = field(default_factory=dict)  # sample -> its drawn summary

    def index(self) -> None:
        for entry in self.entries:
            for mapping in (entry.answers, entry.judgments):
                for (sample, turn), done in mapping.items():
                    self.turns.setdefault(sample, set()).add(turn)
                    self.records.setdefault(sample, []).append((entry.run, done))
        for (sample, turn), games in self.games.items():
            self.turns.setdefault(sample, set()).add(turn)
            self.records.setdefault(sample, []).extend(games)


def dialogue_browser(
    benchmark: str,
    entries: list[Entry],
    texts: Texts,
    pages: Pages | None = None,
    number: int = 1,
) -> Markup:
    """The browser for one benchmark (the `number`-th of the report): filters, then one
    <details> per sample, or one row per sample linking to its page (see the module doc)."""
    rule = rule_for(entries[0].run) if entries else DEFAULT_RULE
    games: dict[TurnKey, list[tuple[Run, JudgmentDone]]] = defaultdict(list)
    for run in {id(e.run): e.run for e in entries if is_pairwise(e.run)}.values():
        for done in run.games():
            games[(str(done.sample_id), done.turn)].append((run, done))
    context = _Context(
        benchmark,
        entries,
        texts,
        [sample_scores(entry) for entry in entries],
        [{key: f.error for key, f in entry.open_failures.items()} for entry in entries],
        games,
        {},
        rule,
    )
    samples: set[str] = set()
    for entry in entries:
        samples |= {s for s, _ in entry.answers} | {s for s, _ in entry.judgments}
        samples |= {s for s, _ in entry.open_failures}
        for sample, group in entry.groups().items():
            context.groups.setdefault(sample, group)
    samples |= {s for s, _ in games}
    context.index()
    ordered = sorted(samples, key=sample_sort_key)
    group_order: list[str] = []
    for sample in ordered:
        group = _group(context, sample)
        if group not in group_order:
            group_order.append(group)
    if not ordered:
        return render("browser.html", filters=None, blocks=[], note=None)
    filters = _macro("filters")(rule.group_kind, group_order)
    inline: list[Markup] = []
    size = 0
    for index, sample in enumerate(ordered):
        block = _sample_block(context, sample)
        inline.append(block)
        size += len(block)
        if pages is not None and size > pages.inline_limit:
            placed = _write_pages(context, pages, number, ordered, inline, index + 1, filters)
            rows = [
                _index_row(context, pages, sample, number, placed[sample]) for sample in ordered
            ]
            note = {"pages": len(set(placed.values())), "folder": pages.folder.name}
            return render("browser.html", filters=filters, blocks=rows, note=note)
    return render("browser.html", filters=filters, blocks=inline, note=None)


def _macro(name: str) -> Any:
    return macro("dialogues.html", name)


def _group(context: _Context, sample: str) -> str:
    text = context.texts.get(sample)
    return context.groups.get(sample) or (text.group if text else None) or NO_GROUP


def _page_name(number: int, page: int) -> str:
    return f"dialogues-{number}-{page}.html"


def _write_pages(
    context: _Context,
    pages: Pages,
    number: int,
    ordered: list[str],
    rendered: list[Markup],
    next_index: int,
    filters: Markup,
) -> dict[str, int]:
    """Write every sample's dialogue to page files; sample -> its page number."""
    placed: dict[str, int] = {}
    page, body, size = 1, [], 0
    section = f"dialogues-{context.benchmark}"

    def flush(last: bool) -> None:
        nonlocal page, body, size
        title = f"{pages.title}: {context.benchmark} dialogues, page {page}"
        main = render(
            "dialogues_page.html",
            title=title,
            back=pages.back(section),
            previous=_page_name(number, page - 1) if page > 1 else None,
            following=None if last else _page_name(number, page + 1),
            section=section,
            benchmark=context.benchmark,
            filters=filters,
            blocks=body,
        )
        pages.write(_page_name(number, page), pages.frame(title, main))
        page, body, size = page + 1, [], 0

    def add(sample: str, block: Markup) -> None:
        nonlocal size
        placed[sample] = page
        body.append(block)
        size += len(block)

    total = len(ordered)
    for index, block in enumerate(rendered):
        add(ordered[index], block)
        if size > pages.page_limit and index + 1 < total:
            flush(last=False)
    rendered.clear()
    for index in range(next_index, total):
        add(ordered[index], _sample_block(context, ordered[index]))
        if size > pages.page_limit and index + 1 < total:
            flush(last=False)
    if body:
        flush(last=True)
    return placed


def _index_row(context: _Context, pages: Pages, sample: str, number: int, page: int) -> Markup:
    """One sample in the report when its dialogue is on a page: its summary and a link."""
    target = sample_anchor(context.benchmark, sample)
    href = pages.href(_page_name(number, page), target)
    return _macro("index_row")(_opening(context, sample), href, page)


def _opening(context: _Context, sample: str) -> Markup:
    """A sample's <details> opening with its summary (drawn once: a paged report shows it
    in the report and on a page)."""
    found = context.openings.get(sample)
    if found is None:
        anchor = sample_anchor(context.benchmark, sample)
        found = _macro("opening")(anchor, _make_summary(context, sample))
        context.openings[sample] = found
    return found


def _make_summary(context: _Context, sample: str) -> SummaryView:
    turn_scores: list[float] = []
    failed = False
    shown_scores = []
    for entry, by_sample in zip(context.entries, context.scores, strict=True):
        if is_pairwise(entry.run):
            continue
        score = by_sample.get(sample)
        if score is not None:
            turn_scores.extend(score.parts.values())
            failed = failed or score.failed
        value = _sample_score(score, context.rule.combine)  # type: ignore[attr-defined]
        shown = (
            fmt(value, 2) if value is not None else ("failed" if score and score.failed else "–")
        )
        shown_scores.append((entry.label, shown))
    data_scores = " ".join(repr(float(s)) for s in turn_scores)
    return SummaryView(sample, _group(context, sample), shown_scores, failed, data_scores)


def _load(context: _Context, sample: str) -> Shown:
    """The texts and replies the sample's block shows, read from each run's log at once."""
    wanted: dict[int, tuple[Run, list[AnswerDone | JudgmentDone]]] = {}
    for run, done in context.records.get(sample, []):
        wanted.setdefault(id(run), (run, []))[1].append(done)
    shown: Shown = {}
    for run, dones in wanted.values():
        unique = list({d.offset: d for d in dones}.values())
        for done, value in zip(unique, run.log.shown(unique), strict=True):
            shown[(id(run), done.offset)] = value
    return shown


def _sample_block(context: _Context, sample: str) -> Markup:
    entries = context.entries
    text = context.texts.get(sample)
    shown = _load(context, sample)
    turns = []
    for turn in _turns_of(sample, text, context):
        key = (sample, turn)
        involved = any(
            key in e.answers or key in e.judgments or key in f
            for e, f in zip(entries, context.failures, strict=True)
        )
        answers = None
        if involved:
            answers = [
                _answer(e, key, f, shown) for e, f in zip(entries, context.failures, strict=True)
            ]
        games = [
            _game(done, list(shown.get((id(run), done.offset), [])))
            for run, done in context.games.get(key, [])
        ]
        heading = f"Turn {turn}" if involved else CONTEXT_ONLY.format(turn)
        turns.append(
            TurnView(
                heading,
                text.questions.get(turn) if text else None,
                text.users.get(turn) if text else None,
                text.golden.get(turn) if text else None,
                answers,
                games,
            )
        )
    return _macro("sample")(_opening(context, sample), turns)
