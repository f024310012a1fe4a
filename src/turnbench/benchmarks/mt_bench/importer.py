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

Forks of llm_judge (translated benchmarks among them) keep the same rows in another layout,
recognised by its shape: `model_answer/MODEL/results.jsonl`, judgments as
`model_judgment/single/JUDGE/MODEL.jsonl` and `model_judgment/pairwise/JUDGE/M1_M2.jsonl`
(one file per model or pair), rows naming the judge in `judge_model`/`judge_prompt` and,
for their one-turn questions, no `turn`. Which layout was read is recorded in provenance.
When the judgments cover only the first N questions of every category (a run with
`--limit N`), only those are planned. In pairwise files the baseline is the model every
game includes (`--baseline` names it), whichever side it stands on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from turnbench.benchmarks.answers import PER_MODEL_FILE
from turnbench.benchmarks.base import AnswerSet, Benchmark, BenchmarkSettings, Sample
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.benchmarks.folder import folder_benchmark, listing
from turnbench.benchmarks.imports import (
    Imported,
    ImportedJudgment,
    ImportOptions,
    describe_sources,
    detect_baseline,
    inferred_limit,
)
from turnbench.errors import UserError
from turnbench.judging.pairwise import ORDERS
from turnbench.safetext import file_name_problem, name_problem, plain
from turnbench.textio import ErrorCollector, read_jsonl, validate_row

JUDGMENTS = "model_judgment"
ANSWERS = "model_answer"
Kind = Literal["single", "pair"]
FORK_FOLDER = {"single": "single", "pair": "pairwise"}  # model_judgment/<this>/JUDGE/


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question_id: int
    judge: list[str] = Field(min_length=2, max_length=2)
    turn: int = 1  # forks judge one-turn questions and write no turn

    @model_validator(mode="before")
    @classmethod
    def _fork_judge(cls, value: Any) -> Any:
        """Forks write `judge_model` and `judge_prompt` where FastChat writes `judge`."""
        if isinstance(value, dict) and "judge" not in value and "judge_model" in value:
            return {**value, "judge": [value["judge_model"], value.get("judge_prompt", "")]}
        return value


class SingleRow(_Row):
    model: str
    user_prompt: str = ""
    judgment: str = ""
    score: float


class PairRow(_Row):
    model_1: str
    model_2: str
    g1_winner: str
    g2_winner: str
    g1_user_prompt: str = ""
    g1_judgment: str = ""
    g2_user_prompt: str = ""
    g2_judgment: str = ""


@dataclass
class JudgmentSource:
    """The judgment files of one judge and one kind, and the layout they were found in."""

    kind: Kind
    files: list[Path]
    layout: str


def _kind_of(path: Path) -> Kind:
    if path.name.endswith("_pair.jsonl") or FORK_FOLDER["pair"] in path.parts[-3:]:
        return "pair"
    return "single"


def _given(path: Path) -> JudgmentSource:
    """`--judgments PATH`: one file, or a fork's folder of one judge's files."""
    if path.is_file():
        return JudgmentSource(_kind_of(path), [path], "the file given with --judgments")
    if path.is_dir():
        files = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        if not files:
            raise UserError(
                f"--judgments {path}: no *.jsonl judgment files; found: {listing(path)}"
            )
        kind: Kind = "pair" if path.parent.name == FORK_FOLDER["pair"] else _kind_of(files[0])
        return JudgmentSource(kind, files, "the folder given with --judgments")
    raise UserError(f"--judgments {path}: no such file or folder")


def _candidates(root: Path, kind: Kind) -> list[JudgmentSource]:
    """Every judge's judgments of `kind`: FastChat's `JUDGE_<kind>.jsonl` files and the
    forks' `<single|pairwise>/JUDGE/` folders."""
    found = [
        JudgmentSource(kind, [path], f"{JUDGMENTS}/JUDGE_{kind}.jsonl (FastChat)")
        for path in sorted(root.glob(f"*_{kind}.jsonl"))
        if path.is_file()
    ]
    sub = FORK_FOLDER[kind]
    for folder in sorted(p for p in (root / sub).glob("*") if p.is_dir()):
        files = sorted(p for p in folder.glob("*.jsonl") if p.is_file())
        if files:
            per = "model" if kind == "single" else "pair"
            layout = f"{JUDGMENTS}/{sub}/JUDGE/*.jsonl (a FastChat fork's; one file per {per})"
            found.append(JudgmentSource(kind, files, layout))
    return found


def _judgment_source(folder: Path, options: ImportOptions) -> JudgmentSource:
    if options.judgments is not None:
        return _given(options.judgments)
    root = folder / JUDGMENTS
    found = {kind: _candidates(root, kind) for kind in ("single", "pair")}
    wanted = options.mode
    if wanted == "auto":
        wanted = "single" if found["single"] or not found["pair"] else "pairwise"
    kind: Kind = "pair" if wanted == "pairwise" else "single"
    sources = found[kind]
    if not sources:
        sub = FORK_FOLDER[kind]
        where = listing(root) if root.is_dir() else f"no {JUDGMENTS}/ folder ({listing(folder)})"
        raise UserError(
            f"{root}: no *_{kind}.jsonl judgment file (FastChat writes "
            f"{JUDGMENTS}/JUDGE_{kind}.jsonl, its forks {JUDGMENTS}/{sub}/JUDGE/*.jsonl); "
            f"found: {where}"
        )
    if len(sources) > 1:
        names = ", ".join(
            str(s.files[0].relative_to(root)) if len(s.files) == 1 else
            f"{s.files[0].parent.relative_to(root)}/"
            for s in sources
        )  # fmt: skip
        raise UserError(f"{root} holds {names}; choose one with --judgments FILE_OR_FOLDER")
    return sources[0]


def _answer_path(folder: Path, model: str) -> Path | None:
    for path in (folder / ANSWERS / f"{model}.jsonl", folder / ANSWERS / model / PER_MODEL_FILE):
        if path.is_file():
            return path
    return None


def _answer_sets(
    benchmark: Benchmark, folder: Path, models: Sequence[str], notes: list[str]
) -> list[AnswerSet]:
    sets = []
    for model in models:
        problem = file_name_problem(f"{model}.jsonl")
        if problem is not None:
            notes.append(f"model {model!r}: {problem}; its judgments are skipped")
            continue
        path = _answer_path(folder, model)
        if path is None:
            notes.append(
                f"model {model}: no {ANSWERS}/{model}.jsonl nor {ANSWERS}/{model}/"
                f"{PER_MODEL_FILE}; its judgments are skipped"
            )
            continue
        sets.append(benchmark.load_answer_file(path))
    if not sets:  # an import of nothing would report a complete run of no model
        raise UserError(
            f"{folder}: none of the {len(models)} model(s) its judgments name can be "
            "imported: " + "; ".join(notes[:5])
        )
    return sets


def _judge_name(rows: Sequence[SingleRow | PairRow], source: JudgmentSource) -> str:
    judges = sorted({row.judge[0] for row in rows})
    where = source.files[0] if len(source.files) == 1 else source.files[0].parent
    if not judges:
        raise UserError(f"{where}: no judgment rows")
    if len(judges) != 1:
        shown = ", ".join(plain(judge, keep_newlines=False) for judge in judges)
        raise UserError(f"{where}: rows of {len(judges)} judges ({shown}); expected one")
    problem = name_problem(judges[0])
    if problem is not None:
        raise UserError(f"{where}: the judge name {judges[0]!r} {problem}")
    return f"fastchat/{judges[0]}"


def _rows(source: JudgmentSource, model: type[SingleRow] | type[PairRow]) -> list[Any]:
    rows = []
    for path in source.files:
        collector = ErrorCollector(path)
        for line, value in read_jsonl(path, collector):
            row = validate_row(collector, line, value, model)
            if row is not None:
                rows.append(row)
        collector.raise_if_any()
    return rows


def _planned(benchmark: Benchmark) -> dict[tuple[int, int], Sample]:
    return {(int(s.id), t): s for s in benchmark.samples for t in s.judged_turns()}


def _relative(path: Path, folder: Path) -> str:
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return path.name


def read_fastchat(source: Path, options: ImportOptions, locator: DataLocator) -> Imported:
    if not source.is_dir():
        raise UserError(
            f"{source}: --format fastchat reads a FastChat data folder (data/mt_bench) holding "
            "question.jsonl, model_answer/ and model_judgment/"
        )
    from turnbench.benchmarks.mt_bench.benchmark import MTBench
    from turnbench.benchmarks.mt_bench.data import QUESTIONS, load_questions

    cls = folder_benchmark(MTBench, source)
    files = cls.locate_files(locator)
    judgments_from = _judgment_source(source, options)
    notes: list[str] = []
    rows = _rows(judgments_from, SingleRow if judgments_from.kind == "single" else PairRow)
    judge = _judge_name(rows, judgments_from)
    # the questions judged tell a run with --limit N apart (its first N of every category)
    samples = [MTBench._sample(q) for q in load_questions(files[QUESTIONS])]
    limit = inferred_limit(samples, {row.question_id for row in rows})
    if limit is not None:
        notes.append(
            f"the judgments cover the first {limit} question(s) of every category (a run "
            f"with --limit {limit}): only those are planned"
        )
    benchmark = cls(files, BenchmarkSettings(parser="compat", limit=limit))
    planned = _planned(benchmark)
    baseline = None
    if judgments_from.kind == "single":
        single = [r for r in rows if isinstance(r, SingleRow)]
        models = list(dict.fromkeys(r.model for r in single))
        answer_sets = _answer_sets(benchmark, source, models, notes)
        judgments = _single(single, planned, {s.model for s in answer_sets}, notes)
        judging = "single"
    else:
        pairs = [r for r in rows if isinstance(r, PairRow)]
        models = list(dict.fromkeys(m for r in pairs for m in (r.model_1, r.model_2)))
        if options.baseline is not None and options.baseline not in models:
            raise UserError(
                f"--baseline {options.baseline}: no game in {judgments_from.layout} includes it "
                f"(models: {', '.join(models)})"
            )
        baseline = detect_baseline([(r.model_1, r.model_2) for r in pairs], options.baseline)
        if baseline is not None:  # the models that played the baseline, and the baseline
            played = {m for r in pairs if baseline in (r.model_1, r.model_2) for m in
                      (r.model_1, r.model_2)}  # fmt: skip
            models = [m for m in models if m in played]
        answer_sets = _answer_sets(benchmark, source, models, notes)
        known = [s.model for s in answer_sets]
        if baseline is not None and baseline in known:
            known = [m for m in known if m != baseline] + [baseline]
            answer_sets.sort(key=lambda s: known.index(s.model))
        judging = "pairwise" if baseline is not None else "pairwise-all"
        judgments = _games(pairs, planned, known, baseline, notes)
    used = {"questions": files[QUESTIONS]}
    used.update(
        {f"{JUDGMENTS}/{_relative(p, source / JUDGMENTS)}": p for p in judgments_from.files}
    )
    used.update({f"{ANSWERS}/{_relative(s.path, source / ANSWERS)}": s.path for s in answer_sets})
    return Imported(
        benchmark=benchmark,
        judge=judge,
        answer_sets=answer_sets,
        judgments=judgments,
        source={
            "format": "fastchat",
            "path": str(source.resolve()),
            "files": describe_sources(used),
            "layout": {
                "judgments": judgments_from.layout,
                "answers": sorted(
                    {
                        f"{ANSWERS}/MODEL/{PER_MODEL_FILE}"
                        if s.path.name == PER_MODEL_FILE
                        else f"{ANSWERS}/MODEL.jsonl"
                        for s in answer_sets
                    }
                ),
                "judge_prompts": sorted(set(benchmark.prompt_names.values())),
            },
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
    baseline: str | None,
    notes: list[str],
) -> list[ImportedJudgment]:
    position = {m: i for i, m in enumerate(models)}
    games: list[ImportedJudgment] = []
    unknown = without_baseline = 0
    for row in rows:
        if baseline is not None and baseline not in (row.model_1, row.model_2):
            without_baseline += 1
            continue
        if row.model_1 not in position or row.model_2 not in position:
            continue
        sample = planned.get((row.question_id, row.turn))
        if sample is None:
            unknown += 1
            continue
        # the run plans (model, baseline), whichever side the baseline stood on, or every
        # pair in the models' order
        if baseline is not None:
            other = row.model_2 if row.model_1 == baseline else row.model_1
            pair = (other, baseline)
        else:
            first, second = sorted((row.model_1, row.model_2), key=position.__getitem__)
            pair = (first, second)
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
    if without_baseline:
        notes.append(
            f"{without_baseline} judgment row(s) compare two models other than the baseline "
            f"{baseline}: skipped"
        )
    return games
