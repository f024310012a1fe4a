"""The HTML report of one or more judge audits (`turnbench report AUDIT_DIR ...`).

Numbers come from each audit's audit.json; the judge's own replies to the probes (shown so a
reader can see *why* a number is what it is) come from its log. Every text from the log or
from audit.json is escaped: a judge's reply is untrusted text.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnbench import __version__
from turnbench.report.assets import page
from turnbench.report.markup import fmt
from turnbench.report.templating import render
from turnbench.types import JudgmentRecord, LogRecord

METRICS = (
    ("position_consistency", "position consistency", "1", "share of probe pairs whose two "
     "games (answers swapped) name the same winner"),
    ("first_position_preference", "first-position preference", "0", "(wins of the answer "
     "shown first - wins of the one shown second) / games, per pair"),
    ("verbosity_delta", "verbosity delta", "≤ 0", "score of the right answer repeated to "
     "twice its length minus the score of the right answer"),
    ("stability", "stability", "0", "standard deviation of repeated scores of the same answer"),
    ("scale_sanity", "scale sanity", "1", "share of questions whose right answer outscored "
     "the wrong one"),
)  # fmt: skip
REPLY_CHARS = 1200


@dataclass
class Audit:
    path: Path
    label: str
    audit: dict[str, Any]
    records: list[LogRecord] = field(default_factory=list)


def _interval(metric: Any) -> tuple[str, str]:
    if not isinstance(metric, dict):
        return "–", "–"
    low, high = metric.get("ci_low"), metric.get("ci_high")
    ci = (
        f"[{low:.3f}, {high:.3f}]"
        if isinstance(low, int | float) and isinstance(high, int | float)
        else "–"
    )
    return fmt(metric.get("value"), 3), ci


def _summary(audits: Sequence[Audit]) -> tuple[list[str], list[list[object]]]:
    headers = ["metric", "unbiased judge"]
    for audit in audits:
        headers += [f"{audit.label}: value", "95% CI"]
    headers.append("meaning")
    rows: list[list[object]] = []
    for key, name, ideal, meaning in METRICS:
        row: list[object] = [name, ideal]
        for audit in audits:
            row += list(_interval(audit.audit.get(key)))
        rows.append([*row, meaning])
    kinds = list(dict.fromkeys(k for a in audits for k in (a.audit.get("manipulation") or {})))
    for kind in kinds:
        for guard in ("without_guard", "with_guard"):
            row = [f"manipulation: {kind} ({guard.replace('_', ' ')})", "≤ 0"]
            for audit in audits:
                row += list(
                    _interval(((audit.audit.get("manipulation") or {}).get(kind) or {}).get(guard))
                )
            rows.append([*row, "probe score minus the plain wrong answer's score"])
    return headers, rows


def _settings(audit: Audit) -> list[list[object]]:
    data = audit.audit
    settings = data.get("judge_settings") or {}
    sampling = settings.get("sampling") or {}
    counts = data.get("counts") or {}
    probes = data.get("probes") or {}
    versions = data.get("prompt_versions") or {}
    rows: list[list[object]] = [
        ["judge", data.get("judge")],
        ["benchmark (its judge prompts)", data.get("benchmark")],
        ["prompts", ", ".join(f"{k}: {v}" for k, v in versions.items())],
        ["probe suite", f"{probes.get('suite')} ({len(probes.get('questions') or [])} "
                        f"questions, {probes.get('stability_repeats')} stability repeats)"],
        ["judge sampling", f"temperature {sampling.get('temperature')}, max tokens "
                           f"{sampling.get('max_tokens')}, parser {settings.get('parser')}, "
                           f"max re-asks {settings.get('max_reasks')}"],
        ["judgments", f"{counts.get('judged')} scored / {counts.get('expected')} planned, "
                      f"{counts.get('failed')} unparseable, {counts.get('pending')} pending, "
                      f"{counts.get('reasks')} re-asks"],
        ["judge model reported", ", ".join(data.get("judge_reported") or []) or "–"],
        ["time", f"{data.get('started_at')} to {data.get('finished_at')}, "
                 f"{data.get('wall_seconds')} s"],
    ]  # fmt: skip
    for check in data.get("thresholds") or []:
        state = "FAILED" if check.get("failed") else "ok"
        rows.append([f"--fail-if {check.get('rule')}", f"{state} (value {check.get('value')})"])
    return rows


def _questions(audit: Audit) -> list[list[object]]:
    rows: list[list[object]] = []
    for q in audit.audit.get("questions") or []:
        manipulation = q.get("manipulation") or {}
        pairs = q.get("pairs") or {}
        rows.append(
            [
                q.get("id"),
                q.get("category"),
                ", ".join(fmt(s, 1) for s in q.get("right") or []),
                fmt(q.get("wrong"), 1),
                fmt(q.get("padded"), 1),
                "; ".join(
                    f"{k} {fmt(v.get('without_guard'), 1)}/{fmt(v.get('with_guard'), 1)}"
                    for k, v in manipulation.items()
                ),
                fmt(q.get("wrong_with_guard"), 1),
                "; ".join(f"vs {k}: {v.get('AB')}, {v.get('BA')}" for k, v in pairs.items()),
            ]
        )
    return rows


def _replies(audit: Audit) -> tuple[Any, list[tuple[str, str]]]:
    """The judge's reply to each probe kind of the first question, to read: the question's
    id and (what was judged: the verdict, the reply) for each."""
    first = (audit.audit.get("questions") or [{}])[0].get("id")
    shown = []
    for record in audit.records:
        if not isinstance(record, JudgmentRecord) or str(record.sample_id) != str(first):
            continue
        if record.repeat or (record.order == "BA"):
            continue
        what = record.model if record.pair is None else f"{record.pair[0]} vs {record.pair[1]}"
        reply = (record.outputs[-1] if record.outputs else "")[:REPLY_CHARS]
        verdict = record.score if record.score is not None else record.verdict
        shown_verdict = verdict if verdict is not None else "unparseable"
        shown.append((f"{what}: {shown_verdict}", reply))
    return first, shown


def build_audit_report(audits: Sequence[Audit], title: str, generated_at: str | None = None) -> str:
    generated = generated_at or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    headers, rows = _summary(audits)
    views = [
        {
            "audit": audit,
            "settings": _settings(audit),
            "notes": audit.audit.get("notes") or [],
            "questions": _questions(audit),
            "replies": _replies(audit),
        }
        for audit in audits
    ]
    body = render(
        "audit.html",
        title=title,
        generated=generated,
        version=__version__,
        headers=headers,
        rows=rows,
        audits=views,
    )
    return page(title, body)


def load_audit(directory: Path, label: str, warn: Any = None) -> Audit:
    from turnbench.audit.results import read_audit
    from turnbench.journal.runlog import LOG_NAME, read_records

    data = read_audit(directory)
    records: list[LogRecord] = []
    if (directory / LOG_NAME).is_file():
        records, _ = read_records(directory / LOG_NAME, warn)
    return Audit(directory, label, data, records)


def is_audit_dir(directory: Path) -> bool:
    from turnbench.audit.results import AUDIT_NAME
    from turnbench.store.resultsfile import RESULTS_NAME

    return (directory / AUDIT_NAME).is_file() and not (directory / RESULTS_NAME).is_file()
