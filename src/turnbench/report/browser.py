"""The dialogue browser: every judged sample, turn by turn, all models side by side.

Each sample is a closed <details> element carrying its group, its turn scores and whether a
turn failed as data attributes; the page's filter script shows or hides samples by those
attributes and never builds markup. All dataset text, answers and judge replies are
escaped here.
"""

from __future__ import annotations

from collections import defaultdict

from turnbench.compare import DEFAULT_RULE, SampleScore, rule_for, sample_scores
from turnbench.report.markup import anchor, badge, esc, fmt
from turnbench.report.samples import DialogueText, Texts
from turnbench.rundir import Entry, TurnKey, sample_sort_key
from turnbench.types import JudgmentRecord

NO_GROUP = "(none)"


def sample_anchor(benchmark: str, sample: str) -> str:
    return anchor("s", benchmark, sample)


def _judge_block(record: JudgmentRecord) -> str:
    status = (
        badge(f"score {fmt(record.score, 1)}", "ok")
        if record.status == "scored"
        else badge("unparseable", "fail")
    )
    replies = []
    for index, output in enumerate(record.outputs):
        heading = "judge reply" if index == 0 else f"reply to re-ask {index}"
        replies.append(f'<div class="small muted">{esc(heading)}</div><pre>{esc(output)}</pre>')
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


def _score_badge(record: JudgmentRecord | None, failure: str | None, answered: bool) -> str:
    if record is not None:
        if record.status == "scored" and record.score is not None:
            return f'<span class="score">{fmt(record.score, 1)}</span>'
        return badge("unparseable", "fail")
    if failure is not None:
        return badge("request failed", "fail")
    return badge("not judged", "no_change") if answered else ""


def _answer_cell(entry: Entry, key: TurnKey, failures: dict[TurnKey, str]) -> str:
    answer = entry.answers.get(key)
    record = entry.judgments.get(key)
    failure = failures.get(key)
    body = (
        f'<div class="text">{esc(answer.text)}</div>'
        if answer is not None
        else '<div class="text muted">(no answer recorded)</div>'
    )
    notes = []
    if answer is not None and answer.finish_reason == "length":
        notes.append("the answer hit its token limit")
    if failure is not None:
        notes.append(f"request failed (a re-run retries it): {failure}")
    note = "".join(f'<div class="small muted">{esc(n)}</div>' for n in notes)
    judge = _judge_block(record) if record is not None else ""
    return (
        f'<div class="answer"><div class="who"><span>{esc(entry.label)}</span>'
        f"<span>{'' if entry.run.pairwise else _score_badge(record, failure, answer is not None)}"
        "</span></div>"
        f"{body}{note}{judge}</div>"
    )


def _pairwise_games(records: list[JudgmentRecord]) -> str:
    """The two games of each pairwise comparison of this turn, with the judge's replies."""
    if not records:
        return ""
    items = []
    for record in records:
        shown_a = record.meta.get("model_a", record.model)
        shown_b = record.meta.get("model_b", "?")
        if record.status != "scored":
            outcome = "unparseable"
        elif record.verdict in ("A", "B"):
            winner = shown_a if record.verdict == "A" else shown_b
            outcome = f"{record.verdict}: {winner} wins"
        else:
            outcome = str(record.verdict)
        replies = "".join(f"<pre>{esc(o)}</pre>" for o in record.outputs)
        items.append(
            f'<details class="judge"><summary>A = {esc(shown_a)}, B = {esc(shown_b)} · '
            f"verdict {esc(outcome)}</summary>{replies}</details>"
        )
    return f'<div class="small muted">pairwise games (both orders)</div>{"".join(items)}'


def _turns_of(
    sample: str, text: DialogueText | None, entries: list[Entry], games: dict
) -> list[int]:
    turns: set[int] = set(text.questions) if text else set()
    for entry in entries:
        turns |= {t for s, t in entry.answers if s == sample}
        turns |= {t for s, t in entry.judgments if s == sample}
    turns |= {t for s, t in games if s == sample}
    return sorted(turns)


def _sample_score(score: SampleScore | None, combine: str) -> float | None:
    if score is None or not score.turns or (combine == "min" and score.failed):
        return None
    values = list(score.turns.values())
    return min(values) if combine == "min" else sum(values) / len(values)


def dialogue_browser(benchmark: str, entries: list[Entry], texts: Texts) -> str:
    """The browser for one benchmark: filters, then one <details> per sample."""
    rule = rule_for(entries[0].run) if entries else DEFAULT_RULE
    scores = [sample_scores(entry) for entry in entries]
    failures = [
        {key: failure.error for key, failure in entry.open_failures.items()} for entry in entries
    ]
    games: dict[TurnKey, list[JudgmentRecord]] = defaultdict(list)
    for run in {id(e.run): e.run for e in entries if e.run.pairwise}.values():
        for record in run.records:
            if isinstance(record, JudgmentRecord) and record.is_game:
                games[(str(record.sample_id), record.turn)].append(record)
    samples: set[str] = set()
    groups: dict[str, str] = {}
    for entry in entries:
        samples |= {s for s, _ in entry.answers} | {s for s, _ in entry.judgments}
        samples |= {s for s, _ in entry.open_failures}
        for sample, group in entry.groups().items():
            groups.setdefault(sample, group)
    samples |= {s for s, _ in games}
    ordered = sorted(samples, key=sample_sort_key)
    group_order: list[str] = []
    blocks = []
    for sample in ordered:
        text = texts.get(sample)
        group = groups.get(sample) or (text.group if text else None) or NO_GROUP
        if group not in group_order:
            group_order.append(group)
        blocks.append(
            _sample_block(benchmark, sample, group, text, entries, scores, failures, games, rule)
        )
    options = "".join(f'<option value="{esc(g)}">{esc(g)}</option>' for g in group_order)
    kind = rule.group_kind
    filters = (
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
    if not blocks:
        return '<p class="muted">No answers or judgments in the run logs.</p>'
    return f'<div class="browser">{filters}{"".join(blocks)}</div>'


def _sample_block(
    benchmark: str,
    sample: str,
    group: str,
    text: DialogueText | None,
    entries: list[Entry],
    scores: list[dict[str, SampleScore]],
    failures: list[dict[TurnKey, str]],
    games: dict[TurnKey, list[JudgmentRecord]],
    rule,
) -> str:
    turn_scores: list[float] = []
    failed = False
    summary_scores = []
    for entry, by_sample in zip(entries, scores, strict=True):
        if entry.run.pairwise:
            continue
        score = by_sample.get(sample)
        if score is not None:
            turn_scores.extend(score.turns.values())
            failed = failed or score.failed
        value = _sample_score(score, rule.combine)
        shown = (
            fmt(value, 2) if value is not None else ("failed" if score and score.failed else "–")
        )
        summary_scores.append(f"{esc(entry.label)} <b>{shown}</b>")
    turns_markup = []
    for turn in _turns_of(sample, text, entries, games):
        key = (sample, turn)
        question = text.questions.get(turn) if text else None
        question_markup = (
            f'<div class="question">{esc(question)}</div>'
            if question is not None
            else '<div class="question muted">(question text not available: no generated '
            "answer in the log and no data files found)</div>"
        )
        involved = [
            e
            for e, f in zip(entries, failures, strict=True)
            if key in e.answers or key in e.judgments or key in f
        ]
        golden = text.golden.get(turn) if text else None
        golden_markup = (
            f'<details class="judge"><summary>dataset answer for this turn (the golden '
            f'context of later turns)</summary><pre class="raw">{esc(golden)}</pre></details>'
            if golden is not None
            else ""
        )
        if involved:
            cells = "".join(_answer_cell(e, key, f) for e, f in zip(entries, failures, strict=True))
            answers = f'<div class="answers">{cells}</div>'
            heading = f"Turn {turn}"
        else:
            answers = ""
            heading = f"Turn {turn} (context only: not answered or judged)"
        turns_markup.append(
            f'<div class="turn"><h4>{esc(heading)}</h4>{question_markup}{golden_markup}'
            f"{answers}{_pairwise_games(games.get(key, []))}</div>"
        )
    data_scores = " ".join(repr(float(s)) for s in turn_scores)
    failed_badge = " " + badge("failed turn", "fail") if failed else ""
    return (
        f'<details class="sample" id="{esc(sample_anchor(benchmark, sample))}" '
        f'data-group="{esc(group)}" data-scores="{esc(data_scores)}" '
        f'data-failed="{1 if failed else 0}">'
        f"<summary><b>#{esc(sample)}</b> · {esc(group)} · "
        f"{' · '.join(summary_scores)}{failed_badge}</summary>"
        f'<div class="sample-body">{"".join(turns_markup)}</div></details>'
    )
