"""`turnbench import --format structflowbench FILE_OR_DIR`: the reference tool's finished
evaluations (`MODEL_evaluate.json`: the dataset's dialogues with, per turn, the model's
`response` and the judge's `judge result` list) as a turnbench run, with no API call.

One model per file, named after the file without `_evaluate.json` (as the reference's
`score.py` names its rows). Each dialogue is matched to the pinned dataset by its turns'
prompts and constraints (type and question), never by its metadata, which differs in some
released files. Verdicts are kept as written and scored as `score.py` scores them: only
"Yes" is met, so an "N/A" counts as not met (and is counted and listed in the results).
The judge request of every turn is rebuilt exactly as the reference built it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from turnbench.benchmarks.base import AnswerSet, BenchmarkSettings, Sample
from turnbench.benchmarks.datafiles import DataLocator, sha256_file
from turnbench.benchmarks.imports import Imported, ImportedJudgment, ImportOptions
from turnbench.benchmarks.structflowbench.benchmark import JUDGE_PROMPT_NAME, StructFlowBench
from turnbench.benchmarks.structflowbench.data import Dialogue, signature
from turnbench.benchmarks.structflowbench.prompts import judge_message
from turnbench.benchmarks.structflowbench.scoring import turn_metrics
from turnbench.errors import UserError
from turnbench.textio import ErrorCollector, open_input, read_json

SUFFIX = "_evaluate.json"
#: who judged: the files do not say; they come from the reference tool's evaluate.py
JUDGE = "structflowbench/evaluate.py"


def model_name(path: Path) -> str:
    """The model a file is named after (`MODEL_evaluate.json`); a file whose name gives no
    model (`_evaluate.json`) is refused, as a model named "" would be dropped from rankings."""
    name = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.stem
    if not name.strip():
        raise UserError(
            f"{path}: the file name gives no model name; name the file MODEL{SUFFIX} "
            "after the model it evaluates"
        )
    return name


def evaluation_files(source: Path) -> list[Path]:
    """The evaluation files `source` names: the *_evaluate.json files of a folder, or
    `source` itself. Anything but a folder is checked as an input file first (a device such
    as /dev/zero, a pipe or a file over the size limit is one UserError naming it, not a
    NotADirectoryError traceback from listing it as a folder)."""
    if not source.is_dir():
        open_input(source).close()
        return [source]
    files = sorted(p for p in source.iterdir() if p.is_file() and p.name.endswith(SUFFIX))
    if not files:
        raise UserError(f"{source}: no *{SUFFIX} files in this folder")
    return files


def _verdicts(value: Any) -> tuple[list[str] | None, str | None]:
    """The verdicts of a `judge result`, as written; or why there are none."""
    if isinstance(value, dict):  # evaluate.py's record of a failure
        return None, "the reference recorded no verdicts: " + json.dumps(value)[:200]
    if not isinstance(value, list):
        return None, "no judge result"
    verdicts = []
    for entry in value:
        said = entry.get("judgement") if isinstance(entry, dict) else None
        verdicts.append(said if isinstance(said, str) else json.dumps(said))
    return verdicts, None


def read_evaluations(source: Path, options: ImportOptions, locator: DataLocator) -> Imported:
    benchmark = StructFlowBench(
        StructFlowBench.locate_files(locator), BenchmarkSettings(parser="compat")
    )
    by_signature = {signature(d.whole_conv): d for d in benchmark.dialogues}
    samples = {s.id: s for s in benchmark.all_samples()}
    answer_sets: list[AnswerSet] = []
    judgments: list[ImportedJudgment] = []
    notes: list[str] = []
    files: dict[str, str] = {}
    for path in evaluation_files(source):
        model = model_name(path)
        if any(s.model == model for s in answer_sets):
            raise UserError(f"{path}: a second file for model {model}")
        answers, found = _read_file(path, model, by_signature, samples, benchmark, notes)
        judgments.extend(found)
        files[path.name] = sha256_file(path)
        answer_sets.append(
            AnswerSet(model=model, path=path, sha256=files[path.name], turns=answers)
        )
    other = sum(1 for j in judgments for v in (j.checklist or []) if v not in ("Yes", "No"))
    if other:
        notes.append(f"{other} verdict(s) other than Yes/No, scored as not met (score.py's rule)")
    return Imported(
        benchmark=benchmark,
        judge=JUDGE,
        answer_sets=answer_sets,
        judgments=judgments,
        source={"format": "structflowbench", "path": str(source.resolve()), "files": files},
        notes=notes,
    )


def _read_file(
    path: Path,
    model: str,
    by_signature: dict[tuple, Dialogue],
    samples: dict[Any, Sample],
    benchmark: StructFlowBench,
    notes: list[str],
) -> tuple[dict[Any, dict[int, str]], list[ImportedJudgment]]:
    value = read_json(path)
    if not isinstance(value, list):
        raise UserError(f"{path}: expected a JSON list of evaluated dialogues")
    collector = ErrorCollector(path)
    answers: dict[Any, dict[int, str]] = {}
    judgments: list[ImportedJudgment] = []
    seen: dict[int, int] = {}
    cut = 0
    for number, item in enumerate(value, start=1):
        turns = item.get("whole_conv") if isinstance(item, dict) else None
        if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
            collector.add(None, f"dialogue {number}: no whole_conv list of turns")
            continue
        dialogue = by_signature.get(signature(turns))
        if dialogue is None:
            collector.add(
                None,
                f"dialogue {number}: its turns' prompts and constraints match no "
                "StructFlowBench dialogue",
            )
            continue
        if dialogue.id in seen:
            collector.add(
                None, f"dialogue {number}: the same dialogue as dialogue {seen[dialogue.id]}"
            )
            continue
        seen[dialogue.id] = number
        sample = samples[dialogue.id]
        golden = [(t.user_prompt, t.assistant_answer) for t in dialogue.whole_conv]
        for index, turn in enumerate(turns):
            response = turn.get("response")
            if not isinstance(response, str):
                collector.add(None, f"dialogue {number} turn {index + 1}: no response text")
                continue
            answers.setdefault(dialogue.id, {})[index + 1] = response
            constraints = dialogue.whole_conv[index].constraints
            verdicts, problem = _verdicts(turn.get("judge result"))
            if verdicts is not None and len(verdicts) != len(constraints):
                cut += 1
            metrics = turn_metrics([c.type for c in constraints], verdicts or [])
            request = judge_message(
                benchmark.template, golden[:index], golden[index][0], response, constraints
            )
            judgments.append(
                ImportedJudgment(
                    model=model,
                    sample=sample,
                    turn=index + 1,
                    prompt_name=JUDGE_PROMPT_NAME,
                    messages=[{"role": "user", "content": request}],
                    outputs=[
                        json.dumps({"judge result": turn.get("judge result")}, ensure_ascii=False)
                    ],
                    parser="checklist-compat",
                    status="scored" if verdicts is not None else "parse_failed",
                    score=metrics.wcsr if verdicts is not None else None,
                    checklist=verdicts,
                    parse_error=problem,
                )
            )
    collector.raise_if_any()
    if cut:
        notes.append(
            f"{model}: {cut} turn(s) with a verdict list longer or shorter than the checklist; "
            "paired in order and cut to the shorter, as score.py does"
        )
    missing = len(samples) - len(seen)
    if missing:
        notes.append(f"{model}: {missing} dialogue(s) of the dataset are not in {path.name}")
    return answers, judgments
