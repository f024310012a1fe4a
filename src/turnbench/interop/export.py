"""Exports of a run's log: flat judgment tables (CSV, JSONL) and FastChat's file formats.

Everything is read from the run log (the truth), never from results.json. One row per
judged turn: the latest judgment of every log key, plus the turns whose answer or judgment
request still fails after its retries (status `request_failed`; a re-run retries them).

Every row names the benchmark and the run's judging mode, and a pairwise game its opponent
and order, so `turnbench import --format csv|jsonl` rebuilds the run's scores from the file
(CSV carries no answer texts and no judge replies; JSONL carries both).

The FastChat layout mirrors FastChat's `data/mt_bench/` folder so its tools (show_result.py,
the answer readers) and `turnbench import --format fastchat` can load our runs:

    OUT/question.jsonl, OUT/reference_answer/gpt-4.jsonl, OUT/judge_prompts.jsonl
                                          the benchmark's data files, byte for byte
    OUT/model_answer/MODEL.jsonl          {"question_id", "answer_id", "model_id",
                                           "choices": [{"index": 0, "turns": [...]}], "tstamp"}
    OUT/model_judgment/JUDGE_single.jsonl {"question_id", "model", "judge": [JUDGE, prompt],
                                           "user_prompt", "judgment", "score", "turn", "tstamp"}
    OUT/model_judgment/JUDGE_pair.jsonl   {"question_id", "model_1", "model_2", "g1_winner",
                                           "g2_winner", "judge", "g1_user_prompt",
                                           "g1_judgment", "g2_user_prompt", "g2_judgment",
                                           "turn", "tstamp"}

A failed judgment gets score -1 there (a failed game winner "error"), as FastChat writes it
(its readers drop -1 rows). What those formats cannot hold (a question not answered in
every turn, a game judged in one order only, repeated judgments) is listed in
`FastChatExport.lost`: the export then does not rebuild the run's scores.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnbench.backends.providers import names as provider_names
from turnbench.errors import UserError
from turnbench.safetext import file_name_problem, fix_surrogates
from turnbench.store.rundir import Run, judged_turn_rows, latest_records, sample_sort_key
from turnbench.types import AnswerRecord, JudgmentRecord, UserTurnRecord

FORMATS = ("csv", "jsonl", "fastchat", "conversations")
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
    "opponent",
    "order",
    "criterion",
    "repeat",
    "checklist",
    "benchmark",
    "mode",
    # simulated conversations: what each conversation is (from its user turns' records)
    "conversation",
    "simulation",
    "seed",
]
#: the conversation fields a simulated conversation's user turns record in `meta`
CONVERSATION_FIELDS = ("conversation", "simulation", "seed")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# an apostrophe of the text itself is doubled, so reading strips exactly one
CSV_ESCAPED = (*FORMULA_STARTS, "'")


def judgment_rows(run: Run) -> list[dict[str, Any]]:
    """One row per judged turn (every judge in the log), with the answer and raw replies,
    the benchmark (its reference: a name, a file, a folder) and the run's judging mode.

    A simulated conversation's rows also say which conversation it is (`conversation`:
    its type or scenario, `simulation`, `seed`); a run with no judge (scored from its
    answers, as the translation benchmark) has one row per answer instead, status
    "answered" (its scores are in results.json: `conversations`)."""
    benchmark = run.provenance.get("benchmark_ref") or run.benchmark
    rows = judged_turn_rows(run)
    conversations, turns = _conversations(run)
    if conversations and not any(row["status"] != "request_failed" for row in rows):
        rows += _answer_rows(run, turns)
    for row in rows:
        meta = conversations.get((row["model"], str(row["sample_id"])), {})
        for name in CONVERSATION_FIELDS:
            row[name] = meta.get(name)
    return [{**row, "benchmark": benchmark, "mode": run.judging} for row in rows]


def _conversations(
    run: Run,
) -> tuple[dict[tuple[str, str], dict[str, Any]], dict[tuple[str, str, int], UserTurnRecord]]:
    """Each simulated conversation's fields, from its user turns' `meta` (a scenario's name
    under `conversation`), and every user turn by (model, sample id, turn)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    turns: dict[tuple[str, str, int], UserTurnRecord] = {}
    for record in run.all_records():
        if isinstance(record, UserTurnRecord):
            meta = dict(record.meta)
            if "conversation" not in meta and "scenario" in meta:
                meta["conversation"] = meta["scenario"]
            found[(record.model, str(record.sample_id))] = meta
            turns[(record.model, str(record.sample_id), record.turn)] = record
    return found, turns


def _answer_rows(
    run: Run, turns: Mapping[tuple[str, str, int], UserTurnRecord]
) -> list[dict[str, Any]]:
    """One row per answered turn of a run with no judgment: the user's message (and the
    shards it revealed) and the answer."""
    rows = []
    for record in run.all_records():
        if not isinstance(record, AnswerRecord):
            continue
        user = turns.get((record.model, str(record.sample_id), record.turn))
        rows.append(
            {
                "judge": "",
                "model": record.model,
                "sample_id": record.sample_id,
                "turn": record.turn,
                "group": record.group,
                "status": "answered",
                "reasks": 0,
                "ts": record.ts,
                "answer": record.text,
                "user": user.text if user is not None else None,
                "revealed": user.revealed if user is not None else None,
                "judge_outputs": [],
            }
        )
    rows.sort(key=lambda r: (r["model"], sample_sort_key(str(r["sample_id"])), r["turn"]))
    return rows


def _csv_cell(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula is prefixed with an apostrophe; a
    list (a checklist) is written as JSON."""
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value.startswith(CSV_ESCAPED):
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
    base = name if sep and provider in provider_names() else spec
    safe = base.strip("/").replace("/", "_").replace("\\", "_")
    problem = file_name_problem(safe) or file_name_problem(f"{safe}_single.jsonl")
    if problem is not None:
        raise UserError(f"cannot make a file name from the model name {spec!r}: {problem}")
    return safe


@dataclass
class FastChatExport:
    answers: dict[str, list[dict[str, Any]]]  # file stem -> rows
    judgments: dict[str, list[dict[str, Any]]]  # judge name -> rows
    skipped: list[str]  # answers not exported (a question not answered in every turn)
    pairs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # judge -> rows
    lost: list[str] = field(default_factory=list)  # what the files cannot carry, besides
    data: dict[str, Path] = field(default_factory=dict)  # place in the folder -> data file


def _answer_id(model: str, question_id: int | str) -> str:
    return hashlib.sha256(f"{model}|{question_id}".encode()).hexdigest()[:22]


def _sample_value(sample: str) -> int | str:
    return int(sample) if sample.lstrip("-").isdigit() else sample


def fastchat_rows(run: Run, turns: Mapping[str, int] | None = None) -> FastChatExport:
    """FastChat's rows of `run`. `turns`: sample id -> its number of turns (from the
    benchmark's data; else every sample has the benchmark's `turns_per_sample`)."""
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
    turns_of = dict(turns or {})
    by_sample: dict[tuple[str, str], dict[int, AnswerRecord]] = {}
    for (model, sample, turn), record in answers.items():
        by_sample.setdefault((model, sample), {})[turn] = record
    exported: dict[str, list[dict[str, Any]]] = {}
    skipped: list[str] = []
    for (model, sample), turns in sorted(
        by_sample.items(), key=lambda item: (item[0][0], sample_sort_key(item[0][1]))
    ):
        count = turns_of.get(sample, cls.turns_per_sample)
        wanted = tuple(range(1, count + 1))
        if tuple(sorted(turns)) != wanted:
            skipped.append(f"{model} question {sample}: answered turns {sorted(turns)} of {count}")
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
    lost = [f"answers of {note}" for note in skipped]
    repeats = sum(r.repeat > 0 for r in judgments.values())
    if repeats:
        lost.append(
            f"{repeats} repeated judgment(s) (--judge-repeats): FastChat holds one judgment "
            "per turn, so only the first of each is exported"
        )
    games: dict[tuple[str, tuple[str, str], str, int], dict[str, JudgmentRecord]] = {}
    for record in sorted(
        judgments.values(),
        key=lambda r: (r.judge, r.model, sample_sort_key(str(r.sample_id)), r.turn),
    ):
        if record.repeat > 0:
            continue
        if record.is_game and record.pair is not None and record.order is not None:
            game = (record.judge, record.pair, str(record.sample_id), record.turn)
            games.setdefault(game, {})[record.order] = record
            continue
        if record.score is None and record.status == "scored":
            lost.append(f"{record.model} question {record.sample_id} turn {record.turn}: "
                        "a judgment without a score")  # fmt: skip
            continue
        user = _user_prompt(record)
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
    paired = _pair_rows(games, names, lost)
    return FastChatExport(exported, graded, skipped, pairs=paired, lost=lost)


def _user_prompt(record: JudgmentRecord) -> str:
    return next((m["content"] for m in record.messages if m.get("role") == "user"), "")


def _winner(record: JudgmentRecord | None, first_shown: str) -> str:
    """FastChat's winner of a game: "model_1", "model_2", "tie" or "error" (no verdict);
    `first_shown` is the pair member shown as assistant A ("model_1" in game 1)."""
    if record is None or record.status != "scored" or record.verdict is None:
        return "error"
    second_shown = "model_2" if first_shown == "model_1" else "model_1"
    return {"A": first_shown, "B": second_shown}.get(record.verdict, "tie")


def _pair_rows(
    games: Mapping[tuple[str, tuple[str, str], str, int], Mapping[str, JudgmentRecord]],
    names: Mapping[str, str],
    lost: list[str],
) -> dict[str, list[dict[str, Any]]]:
    """FastChat's pairwise rows: game 1 shows model_1 (the pair's first) as A, game 2
    model_2."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for (judge, pair, sample, turn), played in sorted(
        games.items(), key=lambda i: (i[0][0], i[0][1], sample_sort_key(i[0][2]), i[0][3])
    ):
        first, second = played.get("AB"), played.get("BA")
        if first is None or second is None:
            lost.append(
                f"{pair[0]} vs {pair[1]} question {sample} turn {turn}: judged in one order "
                "only (FastChat's rows hold both games)"
            )
            continue
        rows.setdefault(fastchat_name(judge), []).append(
            {
                "question_id": _sample_value(sample),
                "model_1": names[pair[0]],
                "model_2": names[pair[1]],
                "g1_winner": _winner(first, "model_1"),
                "g2_winner": _winner(second, "model_2"),
                "judge": [fastchat_name(judge), first.prompt_name],
                "g1_user_prompt": _user_prompt(first),
                "g1_judgment": first.outputs[-1] if first.outputs else "",
                "g2_user_prompt": _user_prompt(second),
                "g2_judgment": second.outputs[-1] if second.outputs else "",
                "turn": turn,
                "tstamp": max(first.ts, second.ts),
            }
        )
    return rows


def fastchat_data(run: Run) -> tuple[dict[str, int], dict[str, Path], str | None]:
    """The run's benchmark data for a FastChat export: sample id -> number of turns, the
    data files to copy (place in the folder -> file), or why they cannot be found."""
    from turnbench.benchmarks.base import BenchmarkSettings
    from turnbench.benchmarks.datafiles import DataLocator

    cls = run.benchmark_class
    if cls is None:
        return {}, {}, f"the benchmark {run.benchmark!r} is not available here"
    try:
        files = cls.locate_files(DataLocator(None, allow_download=False))
        benchmark = cls(files, BenchmarkSettings())
    except UserError as error:
        return {}, {}, error.message.splitlines()[0]
    turns = {str(s.id): len(s.turns) for s in benchmark.all_samples()}
    data = {place: files[key] for key, place in cls.fastchat_files.items() if key in files}
    return turns, data, None


# -- writing --------------------------------------------------------------------------------
def write_text(path: Path, text: str) -> None:
    """Write a file whole (temporary file, then rename), creating its folder. A lone
    surrogate that reached the text from a run directory is written as U+FFFD (UTF-8 cannot
    encode one: a report of such a run was a traceback, issue 44)."""
    try:
        payload = text.encode("utf-8")
    except UnicodeEncodeError:
        payload = fix_surrogates(text).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
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
    targets = [out / place for place in export.data]
    targets += [out / "model_answer" / f"{stem}.jsonl" for stem in export.answers]
    targets += [out / "model_judgment" / f"{judge}_single.jsonl" for judge in export.judgments]
    targets += [out / "model_judgment" / f"{judge}_pair.jsonl" for judge in export.pairs]
    for target in targets:  # every file checked before any is written
        if refuse is not None:
            refuse(target)
    written = []
    for place, source in export.data.items():
        target = out / place
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)  # byte for byte: the import knows them again
        except OSError as error:
            raise UserError(f"cannot write {target}: {error.strerror or error}") from None
        written.append(target)
    for stem, rows in export.answers.items():
        path = out / "model_answer" / f"{stem}.jsonl"
        write_text(path, render_jsonl(rows))
        written.append(path)
    for judge, rows in export.judgments.items():
        path = out / "model_judgment" / f"{judge}_single.jsonl"
        write_text(path, render_jsonl(rows))
        written.append(path)
    for judge, rows in export.pairs.items():
        path = out / "model_judgment" / f"{judge}_pair.jsonl"
        write_text(path, render_jsonl(rows))
        written.append(path)
    return written


def default_output(run_dir: Path, fmt: str) -> Path:
    names = {
        "csv": "judgments.csv",
        "jsonl": "judgments.jsonl",
        "fastchat": "fastchat",
        "conversations": "conversations.jsonl",
    }
    return run_dir / names[fmt]
