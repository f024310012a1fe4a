"""Exports of a run's log: flat judgment tables (CSV, JSONL) and FastChat's file formats.

Everything is read from the run log (the truth), never from results.json. One row per
judged turn: the latest judgment of every log key, plus the turns whose answer or judgment
request still fails after its retries (status `request_failed`; a re-run retries them).

The FastChat layout mirrors FastChat's `data/mt_bench/` folder so its tools (show_result.py,
the answer readers) can load our runs:

    OUT/model_answer/MODEL.jsonl          {"question_id", "answer_id", "model_id",
                                           "choices": [{"index": 0, "turns": [...]}], "tstamp"}
    OUT/model_judgment/JUDGE_single.jsonl {"question_id", "model", "judge": [JUDGE, prompt],
                                           "user_prompt", "judgment", "score", "turn", "tstamp"}

A failed judgment gets score -1 there, as FastChat writes it (its readers drop -1 rows).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnbench.errors import UserError
from turnbench.safetext import file_name_problem
from turnbench.specs import PROVIDERS
from turnbench.store.rundir import Run, judged_turn_rows, latest_records, sample_sort_key
from turnbench.types import AnswerRecord

FORMATS = ("csv", "jsonl", "fastchat")
CSV_COLUMNS = [
    "judge",
    "model",
    "sample_id",
    "turn",
    "category",
    "task",
    "prompt_name",
    "status",
    "score",
    "verdict",
    "parse_error",
    "reasks",
    "parser",
    "error",
    "ts",
]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def judgment_rows(run: Run) -> list[dict[str, Any]]:
    """One row per judged turn (every judge in the log), with the answer and raw replies."""
    return judged_turn_rows(run)


def _csv_cell(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula is prefixed with an apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def render_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {k: "" if row.get(k) is None else _csv_cell(row.get(k)) for k in CSV_COLUMNS}
        )
    return buffer.getvalue()


def render_jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


# -- FastChat -------------------------------------------------------------------------------
def fastchat_name(spec: str) -> str:
    """A model's FastChat name (also its file name): the spec without the provider prefix."""
    provider, sep, name = spec.partition("/")
    base = name if sep and provider in PROVIDERS else spec
    safe = base.strip("/").replace("/", "_").replace("\\", "_")
    problem = file_name_problem(safe) or file_name_problem(f"{safe}_single.jsonl")
    if problem is not None:
        raise UserError(f"cannot make a file name from the model name {spec!r}: {problem}")
    return safe


@dataclass
class FastChatExport:
    answers: dict[str, list[dict[str, Any]]]  # file stem -> rows
    judgments: dict[str, list[dict[str, Any]]]  # judge name -> rows
    skipped: list[str]


def _answer_id(model: str, question_id: int | str) -> str:
    return hashlib.sha256(f"{model}|{question_id}".encode()).hexdigest()[:22]


def _sample_value(sample: str) -> int | str:
    return int(sample) if sample.lstrip("-").isdigit() else sample


def fastchat_rows(run: Run) -> FastChatExport:
    cls = run.benchmark_class
    if cls is None or "fastchat" not in cls.exports:
        raise UserError(
            f"{run.path} is a {run.benchmark} run; FastChat's file formats exist only for "
            "MT-Bench-style benchmarks. Use --format csv or --format jsonl."
        )
    judgments, answers = latest_records(run)
    names: dict[str, str] = {}
    for model in sorted({m for m, _, _ in answers} | {r.model for r in judgments.values()}):
        name = fastchat_name(model)
        if name in names.values():
            raise UserError(f"two models of {run.path} share the FastChat name {name!r}")
        names[model] = name
    by_sample: dict[tuple[str, str], dict[int, AnswerRecord]] = {}
    for (model, sample, turn), record in answers.items():
        by_sample.setdefault((model, sample), {})[turn] = record
    exported: dict[str, list[dict[str, Any]]] = {}
    skipped: list[str] = []
    for (model, sample), turns in sorted(
        by_sample.items(), key=lambda item: (item[0][0], sample_sort_key(item[0][1]))
    ):
        wanted = tuple(range(1, cls.turns_per_sample + 1))
        if tuple(sorted(turns)) != wanted:
            skipped.append(f"{model} question {sample}: answered turns {sorted(turns)}")
            continue
        records = [turns[t] for t in wanted]
        exported.setdefault(names[model], []).append(
            {
                "question_id": _sample_value(sample),
                "answer_id": _answer_id(names[model], sample),
                "model_id": names[model],
                "choices": [{"index": 0, "turns": [r.text for r in records]}],
                "tstamp": max(r.ts for r in records),
            }
        )
    graded: dict[str, list[dict[str, Any]]] = {}
    for record in sorted(
        judgments.values(),
        key=lambda r: (r.judge, r.model, sample_sort_key(str(r.sample_id)), r.turn),
    ):
        if record.is_game or (record.score is None and record.status == "scored"):
            continue  # pairwise games have their own FastChat format
        user = next((m["content"] for m in record.messages if m.get("role") == "user"), "")
        graded.setdefault(fastchat_name(record.judge), []).append(
            {
                "question_id": record.sample_id,
                "model": names[record.model],
                "judge": [fastchat_name(record.judge), record.prompt_name],
                "user_prompt": user,
                "judgment": record.outputs[-1] if record.outputs else "",
                "score": record.score if record.status == "scored" else -1,
                "turn": record.turn,
                "tstamp": record.ts,
            }
        )
    return FastChatExport(exported, graded, skipped)


# -- writing --------------------------------------------------------------------------------
def write_text(path: Path, text: str) -> None:
    """Write a file whole (temporary file, then rename), creating its folder."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror or error}") from None


def write_fastchat(
    export: FastChatExport, out: Path, refuse: Callable[[Path], None] | None = None
) -> list[Path]:
    """FastChat's files under `out`; `refuse` sees every path before any is written (it
    raises for one that must not be replaced: a file of the run being exported)."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a folder (fastchat writes a folder)")
    files = [
        *((out / "model_answer" / f"{stem}.jsonl", rows) for stem, rows in export.answers.items()),
        *(
            (out / "model_judgment" / f"{judge}_single.jsonl", rows)
            for judge, rows in export.judgments.items()
        ),
    ]
    for path, _ in files:
        if refuse is not None:
            refuse(path)
    for path, rows in files:
        write_text(path, render_jsonl(rows))
    return [path for path, _ in files]


def default_output(run_dir: Path, fmt: str) -> Path:
    return (
        run_dir / {"csv": "judgments.csv", "jsonl": "judgments.jsonl", "fastchat": "fastchat"}[fmt]
    )
