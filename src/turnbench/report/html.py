"""`turnbench report`: one self-contained HTML file from one or more run directories.

Sections: summary per model, the benchmark's charts, pairwise outcomes, the comparison of
runs (when several models or runs of one benchmark are given), judge diagnostics, and the
dialogue browser. Numbers come from results.json (rebuilt from the log by the run itself),
read into its typed model (`Run.typed`); dialogues, answers and judge replies come from the
log. Each section is a module of its own rendering a template (`templating.py`); this one
puts them in order. The file needs no network: CSS, script and charts (SVG data URIs) are
inline.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from markupsafe import Markup

from turnbench import __version__
from turnbench.errors import UserError
from turnbench.journal.logindex import UserTurnDone
from turnbench.report.assets import page
from turnbench.report.browser import INLINE_LIMIT, PAGE_LIMIT, Pages, dialogue_browser
from turnbench.report.comparison_section import comparison_markup, comparisons_section
from turnbench.report.conversations import conversations_section, scored_whole, transcripts_body
from turnbench.report.diagnostics import diagnostics_section
from turnbench.report.pairwise_section import pairwise_section
from turnbench.report.reading import is_pairwise, pairwise_of
from turnbench.report.samples import (
    DialogueText,
    Texts,
    merge_texts,
    texts_from_data,
    user_turn_note,
)
from turnbench.report.scores import scores_section
from turnbench.report.stress import stress_section
from turnbench.report.summary import pairwise_id, summary_section
from turnbench.report.templating import render
from turnbench.report.trust import trust_section
from turnbench.store.parallel import forked
from turnbench.store.rundir import Entry, Run

__all__ = ["ReportOptions", "build_report", "comparison_markup", "report_body", "write_report"]

Warn = Callable[[str], None]
# answers + judgments from which the dialogue pages are rendered in a second process
PARALLEL_ITEMS = 4000


@dataclass
class ReportOptions:
    title: str = "turnbench report"
    data_dir: Path | None = None
    seed: int = 0
    resamples: int = 2000
    generated_at: str | None = None  # fixed in tests; now (UTC) otherwise
    notes: list[str] = field(default_factory=list)
    out: Path | None = None  # the report file: a large run's dialogues go to pages beside it
    inline_limit: int = INLINE_LIMIT  # bytes of dialogues kept in the report file itself
    page_limit: int = PAGE_LIMIT  # bytes of dialogues per page file
    pages: Pages | None = None  # set by build_report when `out` is given
    # the dialogue browser section (`turnbench view` shows conversations on pages of their own)
    dialogues: bool = True
    # the href of a sample in the movers table (None: its place in the dialogue browser)
    sample_href: Callable[[Entry, str], str] | None = None
    # dialogues rendered in a second process: None = when the report is large (Linux)
    parallel: bool | None = None


@dataclass
class Section:
    """A section of the report: its id (the table of contents links to it) and its body."""

    id: str
    title: str
    body: Markup
    toc: str | None = None  # its entry in the table of contents (None: not listed)
    extra_class: str = ""


def _texts(benchmark: str, runs: list[Run], options: ReportOptions, warn: Warn) -> Texts:
    from_log: Texts = {}
    for run in runs:
        for sample, questions in run.log.questions.items():
            text = from_log.setdefault(sample, DialogueText(sample))
            for turn, question in questions.items():
                text.questions.setdefault(turn, question)
        for done in run.index.done.values():  # simulated conversations: their user turns
            if isinstance(done, UserTurnDone):
                text = from_log.setdefault(str(done.sample_id), DialogueText(str(done.sample_id)))
                text.users[done.turn] = user_turn_note(
                    done.origin, done.revealed, done.problems, done.ended
                )
                if done.text:
                    text.questions.setdefault(done.turn, done.text)
    from_data, problem = texts_from_data(runs[0].benchmark_class, benchmark, options.data_dir)
    if problem is not None:
        note = f"{benchmark}: dialogue text from the run logs only ({problem})"
        options.notes.append(note)
        warn(note)
    return merge_texts(from_log, from_data)


def build_report(runs: list[Run], options: ReportOptions, warn: Warn | None = None) -> Markup:
    return page(options.title, report_body(runs, options, warn))


def report_body(runs: list[Run], options: ReportOptions, warn: Warn | None = None) -> Markup:
    """The report's markup inside <body> (`report.html`): `turnbench report` frames it as one
    file, `turnbench view` as a page of its own with the same sections."""
    warn = warn or (lambda _message: None)
    if options.out is not None:
        options.pages = Pages(
            options.out, options.title, page, options.inline_limit, options.page_limit
        )
        options.pages.clear()
    entries = [e for run in runs for e in run.entries()]
    if not entries:
        raise UserError("the given run directories hold no model results")
    benchmarks = list(dict.fromkeys(run.benchmark for run in runs))
    generated = options.generated_at or _dt.datetime.now(_dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC"
    )
    sections = [Section("summary", "Summary", summary_section(runs, entries), "Summary")]
    dialogues = (
        _dialogues_started(runs, entries, benchmarks, options, warn)
        if options.dialogues
        else lambda: ([], [])
    )
    for benchmark in benchmarks:
        single = [e for e in entries if e.run.benchmark == benchmark and not is_pairwise(e.run)]
        if single:
            sections.append(
                Section(
                    f"scores-{benchmark}",
                    f"{benchmark}: scores",
                    scores_section(single),
                    f"{benchmark} scores",
                )
            )
        conversations = conversations_section(single, options.sample_href)
        if conversations is not None:
            sections.append(
                Section(
                    f"conversations-{benchmark}",
                    f"{benchmark}: conversations",
                    conversations,
                    f"{benchmark} conversations",
                )
            )
        if len(single) > 1:
            body = comparisons_section(
                benchmark,
                single,
                resamples=options.resamples,
                seed=options.seed,
                sample_href=options.sample_href,
            )
            sections.append(
                Section(
                    f"compare-{benchmark}",
                    f"{benchmark}: comparison",
                    body,
                    f"{benchmark} comparison",
                )
            )
    for run in runs:
        results = pairwise_of(run)
        if results is not None:
            ident = pairwise_id(runs, run)
            body = pairwise_section(run, results)
            sections.append(
                Section(ident, f"Pairwise: {run.label}", body, f"pairwise: {run.label}")
            )
    if any(run.typed.judges for run in runs) or any(e.judgments for e in entries):
        diagnostics = diagnostics_section(entries, options.sample_href)
        sections.append(Section("judge", "Judge diagnostics", diagnostics, "Judge diagnostics"))
    trust = trust_section(entries, runs)
    if trust:
        sections.append(Section("trust", "Judge trust", trust, "Judge trust"))
    stress = stress_section(entries)
    if stress:
        sections.append(Section("stress", "Stress arms", stress, "Stress arms"))
    browsers, written = dialogues()
    if options.pages is not None:
        options.pages.written[:] = written  # (the pages a child process wrote)
    for benchmark, browser in zip(benchmarks if options.dialogues else [], browsers, strict=True):
        sections.append(
            Section(
                f"dialogues-{benchmark}",
                f"{benchmark}: dialogues",
                Markup(browser),  # (rendered by the templates above)
                f"{benchmark} dialogues",
            )
        )
    notes = [*(w for run in runs for w in run.warnings), *_run_notes(runs), *options.notes]
    return render(
        "report.html",
        title=options.title,
        generated=generated,
        version=__version__,
        runs=runs,
        notes=notes,
        sections=sections,
    )


def _dialogues_started(
    runs: list[Run],
    entries: list[Entry],
    benchmarks: list[str],
    options: ReportOptions,
    warn: Warn,
) -> Callable[[], tuple[list[str], list[Path]]]:
    """The dialogue browser of each benchmark and the page files written for them, as a
    function to call when they are needed: for a large report they are rendered meanwhile
    in a second process (`store.parallel`). The question texts are read here, so their
    warnings are this process's."""
    jobs = []
    for number, benchmark in enumerate(benchmarks, start=1):
        bench_runs = [run for run in runs if run.benchmark == benchmark]
        bench_entries = [e for e in entries if e.run.benchmark == benchmark]
        texts = _texts(benchmark, bench_runs, options, warn)
        jobs.append((number, benchmark, bench_entries, texts))

    def render() -> tuple[list[str], list[Path]]:
        browsers = [
            transcripts_body(bench_entries, options.inline_limit)
            if scored_whole(bench_entries)
            else dialogues_intro(
                dialogue_browser(benchmark, bench_entries, texts, options.pages, number)
            )
            for number, benchmark, bench_entries, texts in jobs
        ]
        return browsers, list(options.pages.written) if options.pages is not None else []

    parallel = options.parallel
    if parallel is None:
        parallel = sum(len(e.answers) + len(e.judgments) for e in entries) >= PARALLEL_ITEMS
    return forked(render) if parallel else render


def dialogues_intro(browser: str) -> str:
    """A turn-by-turn dialogue browser with how to read it."""
    return str(render("dialogues_section.html", browser=Markup(browser)))


def _run_notes(runs: list[Run]) -> list[str]:
    """What the reader of each run's numbers must know: a self-judging warning, an
    incomplete run, requests that still fail."""
    notes = []
    for run in runs:
        results = run.typed
        if results.judge_warning:
            notes.append(f"{run.label}: {results.judge_warning}")
        if not results.complete:
            notes.append(
                f"{run.label} is incomplete (stopped: {results.stopped or 'unknown'});"
                " its numbers cover finished work only. Re-run its command to finish it."
            )
        failures = results.request_failures
        if failures:
            notes.append(f"{run.label}: {len(failures)} request(s) still failing after retries")
    return notes


def write_report(text: str, out: Path) -> Path:
    from turnbench.interop.export import write_text

    write_text(out, text)
    return out
