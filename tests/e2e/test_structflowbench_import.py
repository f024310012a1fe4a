"""`turnbench import --format structflowbench`: the authors' released evaluation files
become a run whose scores are the published table's rows, with no API call."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli

FILES = ("gpt4o_evaluate.json", "mistral_7b_instruct_v0_3_evaluate.json")
METRICS = ("CSR", "ISR", "WCSR", "DRFR")
CONSTRAINT_TYPES = (
    "Inverse Constraint", "Keyword/Element Constraint", "Style Constraint",
    "Situation Constraint", "Basic Format Constraint", "Quantity Format Constraint",
    "Template Format Constraint", "Content Constraint", "follow-up", "refinement",
    "expansion", "summary", "recall",
)  # fmt: skip
TASKS = (
    "Fact-based Q&A", "Open-ended Questions", "Professional Writing", "Practical Writing",
    "Creative Writing", "Casual Chat", "Task-oriented Role-playing", "mix",
)  # fmt: skip


def published(data_dir: Path) -> dict[str, dict[str, float]]:
    with (data_dir / "structflowbench/overall_score.csv").open(encoding="utf-8") as handle:
        return {
            row["model name"]: {k: float(v) for k, v in row.items() if k != "model name"}
            for row in csv.DictReader(handle)
        }


def our_row(model: dict) -> dict[str, float]:
    return {**model["by_constraint_type"], **model["metrics"], **model["by_task"]}


def rounded(value: float) -> float:
    return float(np.round(value, 2))  # score.py rounds numpy floats


def test_importing_the_released_files_reproduces_the_published_rows(env, tmp_path, data_dir):
    out = tmp_path / "imported"
    source = data_dir / "structflowbench/evaluation"
    done = run_cli(["import", "--format", "structflowbench", str(source), "--out", str(out)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    table = published(data_dir)
    assert set(results["models"]) == {"gpt4o", "mistral_7b_instruct_v0_3"}
    for name, model in results["models"].items():
        ours = our_row(model)
        # exactly the columns of overall_score.csv, keyed by the data's own strings
        assert set(ours) == set(table[name])
        assert list(model["by_constraint_type"]) == list(CONSTRAINT_TYPES)
        assert list(model["by_task"]) == list(TASKS) and list(model["metrics"]) == list(METRICS)
        for column, value in table[name].items():
            assert rounded(ours[column]) == value, (name, column, ours[column], value)
        assert model["overall"] == model["metrics"]["WCSR"]
        assert model["complete"] is True and model["counts"]["judged"] == 643
        assert model["counts"]["constraints"] == 1775
    assert results["judge"] == "structflowbench/evaluate.py" and results["complete"] is True
    assert set(results["imported"]["files"]) == set(FILES)
    records = [json.loads(line) for line in (out / "log.jsonl").open(encoding="utf-8")]
    judgments = [r for r in records if r["kind"] == "judgment"]
    assert len(judgments) == 2 * 643 and {r["origin"] for r in judgments} == {"imported"}
    assert all(r["parser"] == "checklist-compat" for r in judgments)

    # report, compare and export read the imported run
    report = run_cli(["report", str(out), "--out", str(tmp_path / "r.html")], env)
    assert report.returncode == 0, report.stderr
    compared = run_cli(
        ["compare", str(out), str(out), "--base-model", "mistral_7b_instruct_v0_3",
         "--new-model", "gpt4o", "--json"],
        env,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    comparison = json.loads(compared.stdout)
    assert comparison["paired"] == 155
    assert comparison["overall"]["verdict"] == "better"
    assert {row["task"] for row in comparison["rows"]} == set(TASKS)
    exported = run_cli(["export", str(out), "--format", "jsonl", "--out", "-"], env)
    assert exported.returncode == 0 and len(exported.stdout.splitlines()) == 2 * 643


def test_verdicts_other_than_yes_count_as_not_met_and_are_listed(env, tmp_path, data_dir):
    """As score.py: an "N/A" is not met. Dialogues are matched by their turns' prompts and
    constraints, not by their order or metadata."""
    rows = json.loads((data_dir / "structflowbench/evaluation" / FILES[1]).read_text("utf-8"))
    rows.reverse()
    for row in rows:
        row["conv_purpose"] = "edited"
        row["structure"] = []
    first_turn = rows[-1]["whole_conv"][0]  # dataset dialogue 1
    before = [v["judgement"] for v in first_turn["judge result"]]
    first_turn["judge result"][0]["judgement"] = "N/A"
    target = tmp_path / "edited" / "my_model_evaluate.json"
    target.parent.mkdir()
    target.write_text(json.dumps(rows, ensure_ascii=False), "utf-8")
    out = tmp_path / "run"
    done = run_cli(["import", "--format", "structflowbench", str(target), "--out", str(out)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "other than Yes/No" in done.stdout
    model = json.loads((out / "results.json").read_text("utf-8"))["models"]["my_model"]
    assert model["complete"] is True and model["counts"]["other_verdicts"] == 1
    assert model["other_verdicts"] == [
        {"id": 1, "turn": 1, "item": 1, "type": first_turn["constraints"][0]["type"],
         "verdict": "N/A"}
    ]  # fmt: skip
    lost = 1 if before[0] == "Yes" else 0  # the verdict the N/A replaced
    assert model["metrics"]["DRFR"] == pytest.approx(json_drfr(data_dir, FILES[1]) - lost / 1775)


def json_drfr(data_dir: Path, name: str) -> float:
    rows = json.loads((data_dir / "structflowbench/evaluation" / name).read_text("utf-8"))
    verdicts = [
        v["judgement"] for row in rows for turn in row["whole_conv"] for v in turn["judge result"]
    ]
    return sum(v == "Yes" for v in verdicts) / len(verdicts)


def test_a_file_that_is_not_structflowbench_is_refused(env, tmp_path, data_dir):
    rows = json.loads((data_dir / "structflowbench/evaluation" / FILES[0]).read_text("utf-8"))
    rows[3]["whole_conv"][1]["user prompt"] += " (changed)"
    bad = tmp_path / "bad_evaluate.json"
    bad.write_text(json.dumps(rows), "utf-8")
    out = tmp_path / "never"
    done = run_cli(["import", "--format", "structflowbench", str(bad), "--out", str(out)], env)
    assert done.returncode == 2 and not out.exists()
    assert "dialogue 4: its turns' prompts and constraints match no StructFlowBench" in (
        done.stderr
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(bad, empty / "notes.json")
    done = run_cli(["import", "--format", "structflowbench", str(empty), "--out", str(out)], env)
    assert done.returncode == 2 and "no *_evaluate.json files" in done.stderr
