"""The dialogue browser: every judged sample, turn by turn, all models side by side.

Each sample is a closed <details> element carrying its group, its turn scores and whether a
turn failed as data attributes; the page's filter script shows or hides samples by those
attributes and never builds markup. All dataset text, answers and judge replies are
escaped here.

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
from urllib.parse import quote

from turnbench.journal.logindex import AnswerDone, JudgmentDone
from turnbench.report.compare import DEFAULT_RULE, SampleScore, rule_for, sample_scores
from turnbench.report.markup import anchor, badge, esc, fmt, long_text
from turnbench.report.samples import DialogueText, Texts
from turnbench.store.rundir import Entry, Run, TurnKey, sample_sort_key

NO_GROUP = "(none)"
INLINE_LIMIT = 2_000_000  # bytes of dialogue markup kept in the report file itself
PAGE_LIMIT = 1_000_000  # bytes of dialogue markup per page file
PAGE_FILE = re.compile(r"dialogues-\d+-\d+\.html")


@dataclass
class Pages:
    """Where a large report's dialogues go: page files in a folder beside the report."""

    report: Path  # the report file; pages go to REPORT_STEM-files/ beside it
    title: str
    frame: Callable[[str, str], str]  # (title, body markup) -> a whole page
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


def sample_anchor(benchmark: str, sample: str) -> str:
    return anchor("s", benchmark, sample)


def _judge_block(record: JudgmentDone, outputs: list[str]) -> str:
    status = (
        badge(f"score {fmt(record.score, 1)}", "ok")
        if record.status == "scored"
        else badge("unparseable", "fail")
    )
    replies = []
    for index, output in enumerate(outputs):
        heading = "judge reply" if index == 0 else f"reply to re-ask {index}"
        reply = long_text(output, tag="pre")
        replies.append(f'<div class="small muted">{esc(heading)}</div>{reply}')
    error = (
        f'<div class="small">parse error: {esc(record.parse_error)}</div>'
        if record.parse_error
        else ""
    )
    reasks = f" · re-asks {record.reasks}" if record.reasks else ""
    return (
        f'<details class="judge"><summary>judge explanation ({esc(record.prompt_name)}'
        f"{esc(reasks)})</summary>{status}{''.join(replies)}{error}</details>"
    )


def _score_badge(record: JudgmentDone | None, failure: str | None, answered: bool) -> str:
    if record is not None:
        if record.status == "scored" and record.score is not None:
            return f'<span class="score">{fmt(record.score, 1)}</span>'
        return badge("unparseable", "fail")
    if failure is not None:
        return badge("request failed", "fail")
    return badge("not judged", "no_change") if answered else ""


Shown = dict[tuple[int, int], "str | list[str]"]  # (id(run), offset) -> text or replies


def _answer_cell(entry: Entry, key: TurnKey, failures: dict[TurnKey, str], shown: Shown) -> str:
    answer = entry.answers.get(key)
    record = entry.judgments.get(key)
    failure = failures.get(key)
    text = shown.get((id(entry.run), answer.offset)) if answer is not None else None
    body = (
        long_text(text, "text")
        if answer is not None
        else '<div class="text muted">(no answer recorded)</div>'
    )
    notes = []
    if answer is not None and answer.finish_reason == "length":
        notes.append("the answer hit its token limit")
    if failure is not None:
        notes.append(f"request failed (a re-run retries it): {failure}")
    note = "".join(f'<div class="small muted">{esc(n)}</div>' for n in notes)
    outputs = shown.get((id(entry.run), record.offset), []) if record is not None else []
    judge = _judge_block(record, list(outputs)) if record is not None else ""
    return (
        f'<div class="answer"><div class="who"><span>{esc(entry.label)}</span>'
        f"<span>{'' if entry.run.pairwise else _score_badge(record, failure, answer is not None)}"
        "</span></div>"
        f"{body}{note}{judge}</div>"
    )


def _pairwise_games(records: list[tuple[JudgmentDone, list[str]]]) -> str:
    """The two games of each pairwise comparison of this turn, with the judge's replies."""
    if not records:
        return ""
    items = []
    for record, outputs in records:
        shown_a = record.meta.get("model_a", record.model)
        shown_b = record.meta.get("model_b", "?")
        if record.status != "scored":
            outcome = "unparseable"
        elif record.verdict in ("A", "B"):
            winner = shown_a if record.verdict == "A" else shown_b
            outcome = f"{record.verdict}: {winner} wins"
        else:
            outcome = str(record.verdict)
        replies = "".join(long_text(o, tag="pre") for o in outputs)
        items.append(
            f'<details class="judge"><summary>A = {esc(shown_a)}, B = {esc(shown_b)} · '
            f"verdict {esc(outcome)}</summary>{replies}</details>"
        )
    return f'<div class="small muted">pairwise games (both orders)</div>{"".join(items)}'


def _turns_of(sample: str, text: DialogueText | None, context: _Context) -> list[int]:
    turns: set[int] = set(text.questions) if text else set()
    turns |= context.turns.get(sample, set())
    return sorted(turns)


def _sample_score(score: SampleScore | None, combine: str) -> float | None:
    if score is None or not score.turns or (combine == "min" and score.failed):
        return None
    values = list(score.turns.values())
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
    summaries: dict[str, tuple[str, str]] = field(default_factory=dict)

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
) -> str:
    """The browser for one benchmark (the `number`-th of the report): filters, then one
    <details> per sample, or one row per sample linking to its page (see the module doc)."""
    rule = rule_for(entries[0].run) if entries else DEFAULT_RULE
    games: dict[TurnKey, list[tuple[Run, JudgmentDone]]] = defaultdict(list)
    for run in {id(e.run): e.run for e in entries if e.run.pairwise}.values():
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
        return '<p class="muted">No answers or judgments in the run logs.</p>'
    filters = _filters(rule.group_kind, group_order)  # type: ignore[attr-defined]
    inline: list[str] = []
    size = 0
    for index, sample in enumerate(ordered):
        block = _sample_block(context, sample)
        inline.append(block)
        size += len(block)
        if pages is not None and size > pages.inline_limit:
            placed = _write_pages(context, pages, number, ordered, inline, index + 1, filters)
            rows = "".join(
                _index_row(context, pages, sample, number, placed[sample]) for sample in ordered
            )
            note = (
                '<p class="small muted">The dialogues of this run are too many to hold in one '
                f"file: they are on {len(set(placed.values()))} pages beside this report "
                f"(folder {esc(pages.folder.name)}). The filters below work on every sample; "
                "open a sample and follow its link to read it. The text search here looks at "
                "the sample rows; each page has its own.</p>"
            )
            return f'{note}<div class="browser">{filters}{rows}</div>'
    return f'<div class="browser">{filters}{"".join(inline)}</div>'


def _group(context: _Context, sample: str) -> str:
    text = context.texts.get(sample)
    return context.groups.get(sample) or (text.group if text else None) or NO_GROUP


def _filters(kind: str, group_order: list[str]) -> str:
    options = "".join(f'<option value="{esc(g)}">{esc(g)}</option>' for g in group_order)
    return (
        '<div class="filters">'
        f'<label>{esc(kind)} <select class="f-group"><option value="">all</option>'
        f"{options}</select></label>"
        '<label>some turn scored from <input class="f-min" type="number" min="0" max="10" '
        'step="0.5"> to <input class="f-max" type="number" min="0" max="10" step="0.5">'
        "</label>"
        '<label><input class="f-failed" type="checkbox"> with a failed turn</label>'
        '<label>text <input class="f-search" type="search" placeholder="search"></label>'
        '<button type="button" class="f-open">open shown</button>'
        '<button type="button" class="f-close">close all</button>'
        '<span class="f-count muted small"></span></div>'
    )


def _page_name(number: int, page: int) -> str:
    return f"dialogues-{number}-{page}.html"


def _write_pages(
    context: _Context,
    pages: Pages,
    number: int,
    ordered: list[str],
    rendered: list[str],
    next_index: int,
    filters: str,
) -> dict[str, int]:
    """Write every sample's dialogue to page files; sample -> its page number."""
    placed: dict[str, int] = {}
    page, body, size = 1, [], 0
    section = f"dialogues-{context.benchmark}"

    def flush(last: bool) -> None:
        nonlocal page, body, size
        nav = [f'<a href="{esc(pages.back(section))}">back to the report</a>']
        if page > 1:
            nav.append(f'<a href="{esc(_page_name(number, page - 1))}">previous page</a>')
        if not last:
            nav.append(f'<a href="{esc(_page_name(number, page + 1))}">next page</a>')
        title = f"{pages.title}: {context.benchmark} dialogues, page {page}"
        header = (
            f'<header class="top"><h1>{esc(title)}</h1>'
            f'<nav class="toc">{"".join(nav)}</nav></header>'
        )
        main = (
            f'<main><section id="{esc(section)}"><h2>{esc(context.benchmark)}: dialogues</h2>'
            f'<div class="browser">{filters}{"".join(body)}</div></section></main>'
        )
        pages.write(_page_name(number, page), pages.frame(title, header + main))
        page, body, size = page + 1, [], 0

    def add(sample: str, block: str) -> None:
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


def _index_row(context: _Context, pages: Pages, sample: str, number: int, page: int) -> str:
    """One sample in the report when its dialogue is on a page: its summary and a link."""
    target = sample_anchor(context.benchmark, sample)
    href = pages.href(_page_name(number, page), target)
    summary, attributes = _summary(context, sample)
    return (
        f'<details class="sample" id="{esc(target)}" {attributes}>{summary}'
        f'<div class="sample-body"><a href="{esc(href)}">read this dialogue</a> '
        f'<span class="small muted">(page {page})</span></div></details>'
    )


def _summary(context: _Context, sample: str) -> tuple[str, str]:
    """A sample's <summary> and the data attributes the filters read."""
    found = context.summaries.get(sample)
    if found is None:
        found = context.summaries[sample] = _make_summary(context, sample)
    return found


def _make_summary(context: _Context, sample: str) -> tuple[str, str]:
    turn_scores: list[float] = []
    failed = False
    summary_scores = []
    for entry, by_sample in zip(context.entries, context.scores, strict=True):
        if entry.run.pairwise:
            continue
        score = by_sample.get(sample)
        if score is not None:
            turn_scores.extend(score.turns.values())
            failed = failed or score.failed
        value = _sample_score(score, context.rule.combine)  # type: ignore[attr-defined]
        shown = (
            fmt(value, 2) if value is not None else ("failed" if score and score.failed else "–")
        )
        summary_scores.append(f"{esc(entry.label)} <b>{shown}</b>")
    group = _group(context, sample)
    data_scores = " ".join(repr(float(s)) for s in turn_scores)
    failed_badge = " " + badge("failed turn", "fail") if failed else ""
    attributes = (
        f'data-group="{esc(group)}" data-scores="{esc(data_scores)}" '
        f'data-failed="{1 if failed else 0}"'
    )
    summary = (
        f"<summary><b>#{esc(sample)}</b> · {esc(group)} · "
        f"{' · '.join(summary_scores)}{failed_badge}</summary>"
    )
    return summary, attributes


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


def _sample_block(context: _Context, sample: str) -> str:
    entries = context.entries
    text = context.texts.get(sample)
    shown = _load(context, sample)
    turns_markup = []
    for turn in _turns_of(sample, text, context):
        key = (sample, turn)
        question = text.questions.get(turn) if text else None
        question_markup = (
            long_text(question, "question")
            if question is not None
            else '<div class="question muted">(question text not available: no generated '
            "answer in the log and no data files found)</div>"
        )
        involved = [
            e
            for e, f in zip(entries, context.failures, strict=True)
            if key in e.answers or key in e.judgments or key in f
        ]
        note = text.users.get(turn) if text else None
        if note is not None:  # a simulated user's turn: who wrote it, what it revealed
            question_markup = badge(note, "simulated") + question_markup
        golden = text.golden.get(turn) if text else None
        golden_markup = (
            f'<details class="judge"><summary>dataset answer for this turn (the golden '
            f"context of later turns)</summary>{long_text(golden, 'raw', 'pre')}</details>"
            if golden is not None
            else ""
        )
        if involved:
            cells = "".join(
                _answer_cell(e, key, f, shown)
                for e, f in zip(entries, context.failures, strict=True)
            )
            answers = f'<div class="answers">{cells}</div>'
            heading = f"Turn {turn}"
        else:
            answers = ""
            heading = f"Turn {turn} (context only: not answered or judged)"
        game_records = [
            (done, list(shown.get((id(run), done.offset), [])))
            for run, done in context.games.get(key, [])
        ]
        turns_markup.append(
            f'<div class="turn"><h4>{esc(heading)}</h4>{question_markup}{golden_markup}'
            f"{answers}{_pairwise_games(game_records)}</div>"
        )
    summary, attributes = _summary(context, sample)
    return (
        f'<details class="sample" id="{esc(sample_anchor(context.benchmark, sample))}" '
        f"{attributes}>{summary}"
        f'<div class="sample-body">{"".join(turns_markup)}</div></details>'
    )
