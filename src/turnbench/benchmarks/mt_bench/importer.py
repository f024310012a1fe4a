"""`turnbench import --format fastchat FOLDER`: a FastChat `data/mt_bench/` folder's finished
judgments as a turnbench run.

The folder holds `question.jsonl`, `model_answer/MODEL.jsonl` and
`model_judgment/JUDGE_single.jsonl` (single grading: `{"question_id", "model", "judge":
[judge, prompt], "user_prompt", "judgment", "score", "turn", "tstamp"}`, score -1 when
FastChat found no rating) and/or `model_judgment/JUDGE_pair.jsonl` (pairwise: `{"question_id",
"model_1", "model_2", "g1_winner", "g2_winner", "judge", "g1_user_prompt", "g1_judgment",
"g2_user_prompt", "g2_judgment", "turn", "tstamp"}`; game 1 shows model_1 as assistant A,
game 2 model_2, and the winners name models: "model_1", "model_2", "tie" or "error"). The
folder is read as an MT-Bench data folder (the published set when its files are the
published ones, otherwise a user's own set), so its own questions are the ones imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from turnbench.benchmarks.base import AnswerSet, Benchmark, BenchmarkSettings, Sample
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.benchmarks.folder import folder_benchmark
from turnbench.benchmarks.imports import Imported, ImportedJudgment, ImportOptions, describe_sources
from turnbench.errors import UserError
from turnbench.judging.pairwise import ORDERS
from turnbench.safetext import file_name_problem, name_problem, plain
from turnbench.textio import ErrorCollector, read_jsonl, validate_row

JUDGMENTS = "model_judgment"
ANSWERS = "model_answer"


class SingleRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question_id: int
    model: str
    judge: list[str] = Field(min_length=2, max_length=2)
    user_prompt: str = ""
    judgment: str = ""
    score: float
    turn: int


class PairRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question_id: int
    model_1: str
    model_2: str
    g1_winner: str
    g2_winner: str
    judge: list[str] = Field(min_length=2, max_length=2)
    g1_user_prompt: str = ""
    g1_judgment: str = ""
    g2_user_prompt: str = ""
    g2_judgment: str = ""
    turn: int


def _judgment_file(folder: Path, options: ImportOptions) -> tuple[Path, Literal["single", "pair"]]:
    if options.judgments is not None:
        path = options.judgments
        if not path.is_file():
            raise UserError(f"--judgments {path}: no such file")
        kind: Literal["single", "pair"] = "pair" if path.name.endswith("_pair.jsonl") else "single"
        return path, kind
    found = {
        kind: sorted((folder / JUDGMENTS).glob(f"*_{kind}.jsonl")) for kind in ("single", "pair")
    }
    wanted = options.mode
    if wanted == "auto":
        wanted = "single" if found["single"] or not found["pair"] else "pairwise"
    kind = "pair" if wanted == "pairwise" else "single"
    files = found[kind]
    if not files:
        raise UserError(
            f"{folder / JUDGMENTS}: no *_{kind}.jsonl judgment file (FastChat writes "
            f"model_judgment/JUDGE_{kind}.jsonl)"
        )
    if len(files) > 1:
        names = ", ".join(p.name for p in files)
        raise UserError(f"{folder / JUDGMENTS} holds {names}; choose one with --judgments FILE")
    return files[0], kind


def _answer_sets(
    benchmark: Benchmark, folder: Path, models: Sequence[str], notes: list[str]
) -> list[AnswerSet]:
    sets = []
    for model in models:
        problem = file_name_problem(f"{model}.jsonl")
        if problem is not None:
            notes.append(f"model {model!r}: {problem}; its judgments are skipped")
            continue
        path = folder / ANSWERS / f"{model}.jsonl"
        if not path.is_file():
            notes.append(f"model {model}: no {ANSWERS}/{model}.jsonl; its judgments are skipped")
            continue
        sets.append(benchmark.load_answer_file(path))
    if not sets:  # an import of nothing would report a complete run of no model
        raise UserError(
            f"{folder}: none of the {len(models)} model(s) its judgments name can be "
            "imported: " + "; ".join(notes[:5])
        )
    return sets


def _judge_name(rows: Sequence[SingleRow | PairRow], path: Path) -> str:
    judges = sorted({row.judge[0] for row in rows})
    if len(judges) != 1:
        shown = ", ".join(plain(judge, keep_newlines=False) for judge in judges)
        raise UserError(f"{path}: rows of {len(judges)} judges ({shown}); expected one")
    problem = name_problem(judges[0])
    if problem is not None:
        raise UserError(f"{path}: the judge name {judges[0]!r} {problem}")
    return f"fastchat/{judges[0]}"


def _rows(path: Path, model: type[SingleRow] | type[PairRow]) -> list[SingleRow | PairRow]:
    collector = ErrorCollector(path)
    rows = []
    for line, value in read_jsonl(path, collector):
        row = validate_row(collector, line, value, model)
        if row is not None:
            rows.append(row)
    collector.raise_if_any()
    return rows


def _planned(benchmark: Benchmark) -> dict[tuple[int, int], Sample]:
    return {(int(s.id), t): s for s in benchmark.samples for t in s.judged_turns()}


def read_fastchat(source: Path, options: ImportOptions, locator: DataLocator) -> Imported:
    if not source.is_dir():
        raise UserError(
            f"{source}: --format fastchat reads a FastChat data folder (data/mt_bench) holding "
            "question.jsonl, model_answer/ and model_judgment/"
        )
    from turnbench.benchmarks.mt_bench.benchmark import MTBench

    cls = folder_benchmark(MTBench, source)
    benchmark = cls(cls.locate_files(locator), BenchmarkSettings(parser="compat"))
    path, kind = _judgment_file(source, options)
    notes: list[str] = []
    planned = _planned(benchmark)
    if kind == "single":
        single = [r for r in _rows(path, SingleRow) if isinstance(r, SingleRow)]
        judge = _judge_name(single, path)
        models = list(dict.fromkeys(r.model for r in single))
        answer_sets = _answer_sets(benchmark, source, models, notes)
        judgments = _single(single, planned, {s.model for s in answer_sets}, notes)
        judging, baseline = "single", None
    else:
        pairs = [r for r in _rows(path, PairRow) if isinstance(r, PairRow)]
        judge = _judge_name(pairs, path)
        seconds = {r.model_2 for r in pairs}
        models = list(dict.fromkeys(m for r in pairs for m in (r.model_1, r.model_2)))
        answer_sets = _answer_sets(benchmark, source, models, notes)
        known = [s.model for s in answer_sets]
        baseline = next(iter(seconds)) if len(seconds) == 1 else None
        if baseline is not None and baseline in known:
            known = [m for m in known if m != baseline] + [baseline]
            answer_sets.sort(key=lambda s: known.index(s.model))
        judging = "pairwise" if baseline is not None else "pairwise-all"
        judgments = _games(pairs, planned, known, judging, baseline, notes)
    files = {"questions": source / "question.jsonl", path.name: path}
    files.update({f"{ANSWERS}/{s.path.name}": s.path for s in answer_sets})
    return Imported(
        benchmark=benchmark,
        judge=judge,
        answer_sets=answer_sets,
        judgments=judgments,
        source={
            "format": "fastchat",
            "path": str(source.resolve()),
            "files": describe_sources(files),
        },
        judging=judging,  # type: ignore[arg-type]
        baseline=baseline,
        notes=notes,
    )


def _single(
    rows: Sequence[SingleRow],
    planned: dict[tuple[int, int], Sample],
    models: set[str],
    notes: list[str],
) -> list[ImportedJudgment]:
    found: dict[tuple[str, int, int], ImportedJudgment] = {}
    unknown = twice = 0
    for row in rows:
        if row.model not in models:
            continue
        sample = planned.get((row.question_id, row.turn))
        if sample is None:
            unknown += 1
            continue
        failed = row.score == -1
        twice += (row.model, row.question_id, row.turn) in found
        found[(row.model, row.question_id, row.turn)] = ImportedJudgment(
            model=row.model,
            sample=sample,
            turn=row.turn,
            prompt_name=row.judge[1],
            messages=[{"role": "user", "content": row.user_prompt}],
            outputs=[row.judgment],
            parser="rating-fastchat",
            status="parse_failed" if failed else "scored",
            score=None if failed else row.score,
            parse_error="FastChat recorded score -1 (no rating found)" if failed else None,
        )
    if unknown:
        notes.append(f"{unknown} judgment row(s) of questions or turns not in the question file")
    if twice:
        notes.append(f"{twice} row(s) judge an answer judged before: the last one is kept")
    return list(found.values())


def _games(
    rows: Sequence[PairRow],
    planned: dict[tuple[int, int], Sample],
    models: list[str],
    judging: str,
    baseline: str | None,
    notes: list[str],
) -> list[ImportedJudgment]:
    position = {m: i for i, m in enumerate(models)}
    games: list[ImportedJudgment] = []
    unknown = 0
    for row in rows:
        if row.model_1 not in position or row.model_2 not in position:
            continue
        sample = planned.get((row.question_id, row.turn))
        if sample is None:
            unknown += 1
            continue
        # the run plans (model, baseline), or every pair in the models' order
        if judging == "pairwise":
            pair = (row.model_1, row.model_2) if row.model_2 == baseline else None
        else:
            first, second = sorted((row.model_1, row.model_2), key=position.__getitem__)
            pair = (first, second)
        if pair is None:
            continue
        plays = (
            (row.model_1, row.model_2, row.g1_winner, row.g1_user_prompt, row.g1_judgment),
            (row.model_2, row.model_1, row.g2_winner, row.g2_user_prompt, row.g2_judgment),
        )
        for shown_a, shown_b, winner, prompt, judgment in plays:
            order = ORDERS[0] if shown_a == pair[0] else ORDERS[1]
            verdict = {"model_1": row.model_1, "model_2": row.model_2}.get(winner, winner)
            positional = {shown_a: "A", shown_b: "B", "tie": "tie"}.get(verdict)
            games.append(
                ImportedJudgment(
                    model=shown_a,
                    sample=sample,
                    turn=row.turn,
                    prompt_name=row.judge[1],
                    messages=[{"role": "user", "content": prompt}],
                    outputs=[judgment],
                    parser="verdict-fastchat",
                    status="scored" if positional else "parse_failed",
                    verdict=positional,
                    parse_error=None if positional else f"FastChat recorded winner {winner!r}",
                    pair=pair,
                    order=order,
                )
            )
    if unknown:
        notes.append(f"{unknown} judgment row(s) of questions or turns not in the question file")
    return games
