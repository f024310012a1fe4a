"""What the run, conversation and compare pages show, built by the report's own code.

A run is read once per state of its files: `RunCache` keeps the parsed run (and its
rendered report sections) under the size and modification time of its log and results,
so a second look at an unchanged 30,000-judgment run costs a dictionary lookup, and a run
that grew is read again. The run page's sections are `report.html.report_body` (the same
builders as `turnbench report`, with the dialogue browser replaced by links to the
conversation pages); the comparison is `report.compare.compare_entries` rendered by the
report's comparison section.

Everything returned as `Markup` was built by the report's escaping builders; every other
value is plain data that the templates escape.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

from turnbench.benchmarks.recorded import NamedBenchmark
from turnbench.errors import UserError
from turnbench.journal.logindex import AnswerDone, JudgmentDone
from turnbench.journal.runlog import LOG_NAME
from turnbench.report import conversations
from turnbench.report.markup import breakable
from turnbench.report.transcripts import Transcript, transcripts
from turnbench.store.resultsfile import RESULTS_NAME
from turnbench.store.rundir import Entry, Run, load_run, sample_sort_key
from turnbench.types import AnswerRecord, JudgmentRecord
from turnbench.view.runs import RunDir, _stat

MAX_TEXT = 200_000  # characters of one answer or reply shown (the rest is counted)


def run_href(run: RunDir, page: str = "run", **query: str) -> str:
    base = f"/{page}/{run.root}/{run.rel}"
    return base + ("?" + urlencode(query) if query else "")


def pair_href(left: RunDir, right: RunDir, sample: str) -> str:
    query = {"a_root": left.root, "a": left.rel, "b_root": right.root, "b": right.rel}
    return "/pair?" + urlencode({**query, "sample": sample})


def shown_text(text: str | None) -> Markup:
    """Untrusted text as escaped markup that wraps (the report's breakable), cut at MAX_TEXT."""
    value = text or ""
    more = ""
    if len(value) > MAX_TEXT:
        more = f" … ({len(value) - MAX_TEXT:,} more characters not shown)"
        value = value[:MAX_TEXT]
    return Markup(breakable(value) + breakable(more))  # (escaped by breakable)


@dataclass
class Loaded:
    key: tuple[Any, ...]
    run: Run | None
    error: str | None
    warnings: list[str] = field(default_factory=list)
    page: dict[str, Any] | None = None
    data_texts: dict[str, Any] | None = None  # the benchmark's dialogues, read when first needed
    #: held while the page is built: a request that comes while the background warm-up
    #: builds it waits for that build instead of making a second one beside it
    building: threading.Lock = field(default_factory=threading.Lock, repr=False)


class RunCache:
    """Parsed runs by the state of their files (see the module's docstring)."""

    def __init__(
        self, roots: list[Path], size: int = 16, named: NamedBenchmark | None = None
    ) -> None:
        self.roots = roots
        self.size = size
        self.named = named  # a plug-in the user named: the runs that recorded it read with it
        self._loaded: dict[Path, Loaded] = {}
        self._lock = threading.Lock()

    def load(self, rundir: RunDir) -> Loaded:
        key = (_stat(rundir.path / LOG_NAME), _stat(rundir.path / RESULTS_NAME))
        with self._lock:
            found = self._loaded.get(rundir.path)
            if found is not None and found.key == key:
                return found
            warnings: list[str] = []
            try:
                run = load_run(
                    rundir.path, label=rundir.rel, require_log=False, warn=warnings.append
                )
                if self.named is not None:
                    run.named = self.named
                    if not run.named_fits():
                        run.named = None
                run.log  # noqa: B018  (read now, under the lock)
                loaded = Loaded(key, run, None, warnings)
            except UserError as error:
                loaded = Loaded(key, None, error.message, warnings)
            if len(self._loaded) >= self.size:
                self._loaded.pop(next(iter(self._loaded)))
            self._loaded[rundir.path] = loaded
            return loaded

    # -- one run ---------------------------------------------------------------------------
    def run_page(self, rundir: RunDir) -> dict[str, Any]:
        loaded = self.load(rundir)
        with loaded.building:
            if loaded.page is None:
                loaded.page = self._build_run_page(rundir, loaded)
            return loaded.page

    def _build_run_page(self, rundir: RunDir, loaded: Loaded) -> dict[str, Any]:
        if loaded.run is None:
            return {"error": loaded.error, "report": None, "samples": [], "failures": [],
                    "reasks": [], "warnings": loaded.warnings}  # fmt: skip
        from turnbench.report.html import ReportOptions, report_body

        run = loaded.run

        def href(_entry: Entry, sample: str) -> str:
            return run_href(rundir, "conversation", sample=sample)

        options = ReportOptions(title=f"run {rundir.rel}", dialogues=False, sample_href=href)
        try:
            body = report_body([run], options)
            error = None
        except UserError as failure:
            body, error = "", failure.message
        page = {
            "error": error,
            "report": Markup(body),  # (the report escapes every text)
            "samples": _samples(run, rundir),
            "failures": _failures(run, rundir),
            "reasks": _reasks(run, rundir),
            "warnings": loaded.warnings,
        }
        return page

    # -- one conversation ------------------------------------------------------------------
    def conversation(self, rundir: RunDir, sample: str, others: list[RunDir]) -> dict[str, Any]:
        loaded = self.load(rundir)
        if loaded.run is None:
            return {"error": loaded.error, "sample": sample, "turns": [], "others": []}
        run = loaded.run

        acted = transcripts(run, sample)
        if acted:
            return self._acted(run, rundir, sample, acted, others)
        answers: list[AnswerDone] = []
        judgments: list[JudgmentDone] = []
        for done in run.index.done.values():
            if str(done.sample_id) != sample:
                continue
            if isinstance(done, AnswerDone):
                answers.append(done)
            elif isinstance(done, JudgmentDone):
                judgments.append(done)
        turns: dict[int, dict[str, Any]] = {}
        questions = dict(self._data_questions(loaded, sample))
        questions.update(run.log.questions.get(sample, {}))  # what the model was asked

        def turn(number: int) -> dict[str, Any]:
            return turns.setdefault(
                number,
                {"turn": number, "question": shown_text(questions.get(number)),
                 "answers": [], "judgments": []},
            )  # fmt: skip

        for done in sorted(answers, key=lambda d: (d.turn, d.model, d.arm or "")):
            record = run.load(done)
            assert isinstance(record, AnswerRecord)
            turn(done.turn)["answers"].append(
                {
                    "model": done.model,
                    "arm": done.arm,
                    "text": shown_text(record.text),
                    "chars": len(record.text),
                    "finish_reason": record.finish_reason,
                    "flags": _answer_flags(done, record),
                }
            )
        for done in sorted(judgments, key=_judgment_order):
            record = run.load(done)
            assert isinstance(record, JudgmentRecord)
            turn(done.turn)["judgments"].append(_judgment(done, record))
        failures = _sample_failures(run, sample)
        return {
            "error": None if turns or failures else f"sample {sample!r} is not in this run",
            "sample": sample,
            "benchmark": run.benchmark,
            "turns": [turns[n] for n in sorted(turns)],
            "transcripts": [],
            "failures": failures,
            "others": _same_benchmark(run, rundir, sample, others),
        }

    def _acted(
        self, run: Run, rundir: RunDir, sample: str, acted: list[Transcript], others: list[RunDir]
    ) -> dict[str, Any]:
        """A conversation scored as a whole: its transcripts (user, agent, tool calls) and
        each one's outcome (score, how it ended, why it failed)."""
        shown = [conversations.shown(t, t.model) for t in acted]
        return {
            "error": None,
            "sample": sample,
            "benchmark": run.benchmark,
            "turns": [],
            "transcripts": shown,
            "failures": _sample_failures(run, sample),
            "others": _same_benchmark(run, rundir, sample, others),
        }

    def _data_questions(self, loaded: Loaded, sample: str) -> dict[int, str]:
        """The dataset's questions of `sample` (answers imported from files carry none)."""
        if loaded.data_texts is None:
            from turnbench.report.samples import texts_from_data

            assert loaded.run is not None
            try:
                cls = loaded.run.benchmark_class
            except UserError:
                cls = None
            texts, _problem = texts_from_data(cls, loaded.run.benchmark, None)
            loaded.data_texts = texts
        text = loaded.data_texts.get(sample)
        return dict(text.questions) if text is not None else {}

    # -- two runs --------------------------------------------------------------------------
    def compare(
        self, base: RunDir, new: RunDir, base_model: str | None, new_model: str | None
    ) -> dict[str, Any]:
        from turnbench.report.compare import compare_entries
        from turnbench.report.html import comparison_markup
        from turnbench.store.rundir import select_entry

        runs = []
        for rundir in (base, new):
            loaded = self.load(rundir)
            if loaded.run is None:
                return {"error": f"{rundir.rel}: {loaded.error}", "markup": None, "moved": []}
            runs.append(loaded.run)
        try:
            base_entry = select_entry(runs[0], base_model or None, "a_model")
            new_entry = select_entry(runs[1], new_model or None, "b_model")
            comparison = compare_entries(base_entry, new_entry)
        except UserError as error:
            return {"error": error.message, "markup": None, "moved": []}

        def href(_entry: Entry, sample: str) -> str:
            return pair_href(base, new, sample)

        moved = [
            {"sample": p.sample_id, "group": p.group, "base": p.base, "new": p.new,
             "delta": p.delta, "href": pair_href(base, new, p.sample_id)}
            for p in comparison.movers(25)
        ]  # fmt: skip
        markup = comparison_markup(comparison, href)
        return {"error": None, "markup": Markup(markup), "moved": moved}


def _sample_failures(run: Run, sample: str) -> list[dict[str, Any]]:
    return [
        {"stage": f.stage, "model": f.model, "turn": f.turn, "error": f.error}
        for f in run.open_failures.values()
        if str(f.sample_id) == sample
    ]


def _same_benchmark(
    run: Run, rundir: RunDir, sample: str, others: list[RunDir]
) -> list[dict[str, Any]]:
    return [
        {"label": other.rel, "href": run_href(other, "conversation", sample=sample),
         "pair": pair_href(rundir, other, sample)}
        for other in others
        if other.summary().get("benchmark") == run.benchmark
    ]  # fmt: skip


def _judgment_order(done: JudgmentDone) -> tuple[Any, ...]:
    return (done.turn, done.model, done.judge, done.criterion or "", done.repeat, done.order or "")


def _answer_flags(done: AnswerDone, record: AnswerRecord) -> list[str]:
    flags = []
    if done.unclosed_think:
        flags.append("unclosed <think> (not judged)")
    if record.finish_reason == "length":
        flags.append("cut off at max_tokens")
    if record.origin == "imported":
        flags.append("imported")
    if record.raw_text is not None:
        flags.append("cleaned before judging")
    return flags


def _judgment(done: JudgmentDone, record: JudgmentRecord) -> dict[str, Any]:
    flags = []
    if record.status == "parse_failed":
        flags.append(f"parse failed: {record.parse_error or 'no score found'}")
    if record.reasks:
        flags.append(f"re-asked {record.reasks}×")
    if record.scoring:
        flags.append(f"scoring {record.scoring}")
    if record.origin == "imported":
        flags.append("imported")
    return {
        "judge": record.judge,
        "model": record.model,
        "criterion": record.criterion,
        "repeat": record.repeat,
        "pair": list(record.pair_models() or ()),
        "order": record.game_order(),
        "prompt_name": record.prompt_name,
        "score": record.score,
        "verdict": record.verdict,
        "checklist": list(record.checklist or []),
        "status": record.status,
        "flags": flags,
        "messages": [
            {"role": str(m.get("role")), "content": shown_text(str(m.get("content") or ""))}
            for m in record.messages
        ],
        "outputs": [shown_text(o) for o in record.outputs],
        "followup": record.followup,
    }


def _samples(run: Run, rundir: RunDir) -> list[dict[str, Any]]:
    """Every sample of the run with its number of answered turns and mean score, from its
    conversations (`Run.conversation_parts`, one pass over the index): a conversation scored
    whole counts its score (each trial's), one judged turn by turn the first judge's scores
    of its turns; stress arms' conversations are not the run's own."""
    found: dict[str, dict[str, Any]] = {}
    for (_model, sample, _trial, arm), parts in run.conversation_parts.items():
        if arm is not None:
            continue
        row = found.setdefault(sample, {"group": None, "scores": [], "turns": 0})
        row["turns"] = max(row["turns"], len(parts.answers))
        if row["group"] is None:
            groups = [a.group for a in parts.answers if a.group] + [
                u.group for u in parts.users if u.group
            ]
            row["group"] = parts.sample.group if parts.sample is not None else None
            row["group"] = row["group"] or (groups[0] if groups else None)
        if parts.sample is not None:
            if parts.sample.score is not None:
                row["scores"].append(parts.sample.score)
        else:
            row["scores"].extend(parts.judged.values())
    rows = []
    for sample in sorted(found, key=sample_sort_key):
        row = found[sample]
        scores = row["scores"]
        rows.append(
            {
                "sample": sample,
                "group": row["group"],
                "turns": row["turns"],
                "mean": sum(scores) / len(scores) if scores else None,
                "href": run_href(rundir, "conversation", sample=sample),
            }
        )
    return rows


def _failures(run: Run, rundir: RunDir) -> list[dict[str, Any]]:
    rows = [
        {"kind": "request failed", "stage": f.stage, "model": f.model,
         "sample": str(f.sample_id) if f.sample_id is not None else None, "turn": f.turn,
         "detail": f.error}
        for f in run.open_failures.values()
    ]  # fmt: skip
    for done in run.index.done.values():
        if isinstance(done, JudgmentDone) and done.status == "parse_failed":
            rows.append(
                {"kind": "no score", "stage": "judgment", "model": done.model,
                 "sample": str(done.sample_id), "turn": done.turn,
                 "detail": done.parse_error or "the judge's reply held no score"}
            )  # fmt: skip
    for row in rows:
        row["href"] = run_href(rundir, "conversation", sample=row["sample"] or "")
    return rows


def _reasks(run: Run, rundir: RunDir) -> list[dict[str, Any]]:
    rows = []
    for done in run.index.done.values():
        if isinstance(done, JudgmentDone) and done.reasks:
            rows.append(
                {"model": done.model, "judge": done.judge, "sample": str(done.sample_id),
                 "turn": done.turn, "reasks": done.reasks, "status": done.status,
                 "href": run_href(rundir, "conversation", sample=str(done.sample_id))}
            )  # fmt: skip
    rows.sort(key=lambda r: (sample_sort_key(r["sample"]), r["turn"], r["model"]))
    return rows
