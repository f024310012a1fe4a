"""A user's own MT-Bench-style set: `--benchmark FOLDER` runs a folder in MT-Bench's (or
MT-Bench-101's) layout by that benchmark's rules and its own files, which are recorded by
checksum instead of being refused by the published pins."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from turnbench.benchmarks import benchmark_class
from turnbench.errors import UserError
from turnbench.testing.fake_server import FakeServer

EDITED = "Écrivez un article de blog de voyage sur un récent séjour à Hawaï."  # question 81, turn 1


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mt_bench_folder(data_dir: Path, folder: Path, *, judge_prompts: bool = True) -> Path:
    """Three questions: 81 (turn 1 translated), 101 (a reference category), and a new 200."""
    rows = [json.loads(line) for line in (data_dir / "mt_bench/question.jsonl").open()]
    chosen = [r for r in rows if r["question_id"] in (81, 101)]
    chosen[0]["turns"][0] = EDITED
    chosen.append({"question_id": 200, "category": "medicine", "turns": ["Q1?", "Q2?"]})
    folder.mkdir()
    (folder / "question.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen), "utf-8"
    )
    references = [
        line
        for line in (data_dir / "mt_bench/reference_answer/gpt-4.jsonl").open()
        if json.loads(line)["question_id"] == 101
    ]
    (folder / "reference_answer").mkdir()
    (folder / "reference_answer/gpt-4.jsonl").write_text("".join(references), "utf-8")
    if judge_prompts:
        shutil.copy(data_dir / "mt_bench/judge_prompts.jsonl", folder / "judge_prompts.jsonl")
    return folder


def run_args(bench: Path, server: FakeServer, out: Path, *extra: str) -> list[str]:
    return [
        "run", "--benchmark", str(bench), "--model", "openai/m", "--model-base-url",
        server.base_url, "--judge", "openai/judge", "--judge-base-url", server.base_url,
        "--out", str(out), "--no-progress", *extra,
    ]  # fmt: skip


def test_an_mt_bench_folder_with_edited_questions_runs_and_records_its_checksums(
    fake_server, env, tmp_path, data_dir
):
    folder = mt_bench_folder(data_dir, tmp_path / "ja-mt-bench")
    out = tmp_path / "run"
    done = run_cli(run_args(folder, fake_server, out), env)
    assert done.returncode == 0, done.stdout + done.stderr
    sent = [r["messages"][-1]["content"] for r in fake_server.requests if r["model"] == "m"]
    assert EDITED in sent and "Q1?" in sent and "Q2?" in sent
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["benchmark"] == "mt-bench" and results["complete"] is True
    assert results["counts"]["expected"] == 6 and set(results["by_category"]) == {
        "writing", "reasoning", "medicine",
    }  # fmt: skip
    source = results["data_source"]
    assert source["published"] is False and source["folder"] == str(folder.resolve())
    assert "not the published mt-bench set" in source["note"]
    provenance = results["provenance"]
    assert provenance["benchmark_ref"] == str(folder.resolve())
    assert provenance["data_sha256"] == {
        "mt_bench/question.jsonl": sha(folder / "question.jsonl"),
        "mt_bench/reference_answer/gpt-4.jsonl": sha(folder / "reference_answer/gpt-4.jsonl"),
        "mt_bench/judge_prompts.jsonl": sha(folder / "judge_prompts.jsonl"),
    }
    assert provenance["data_sha256"]["mt_bench/question.jsonl"] != sha(
        data_dir / "mt_bench/question.jsonl"
    )
    # the reasoning question was judged with the folder's reference answer
    reference = json.loads((folder / "reference_answer/gpt-4.jsonl").read_text("utf-8"))
    first = reference["choices"][0]["turns"][0]
    judged = [r for r in fake_server.requests if r["model"] == "judge"]
    assert sum(first in r["messages"][1]["content"] for r in judged) == 2
    # reports find the folder again; an edited folder is not resumed
    report = run_cli(["report", str(out), "--out", str(tmp_path / "r.html")], env)
    assert report.returncode == 0, report.stderr
    assert EDITED in (tmp_path / "r.html").read_text("utf-8")
    questions = folder / "question.jsonl"
    questions.write_text(questions.read_text("utf-8").replace("Q1?", "Q1 changed?"), "utf-8")
    again = run_cli(run_args(folder, fake_server, out), env)
    assert again.returncode == 2 and "mt_bench/question.jsonl" in again.stdout + again.stderr


def test_a_folder_without_judge_prompts_uses_the_published_ones(
    fake_server, env, tmp_path, data_dir
):
    folder = mt_bench_folder(data_dir, tmp_path / "set", judge_prompts=False)
    out = tmp_path / "run"
    done = run_cli(run_args(folder, fake_server, out, "--limit", "1"), env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["data_source"]["published_files_used"] == ["mt_bench/judge_prompts.jsonl"]
    pinned = sha(data_dir / "mt_bench/judge_prompts.jsonl")
    assert results["provenance"]["data_sha256"]["mt_bench/judge_prompts.jsonl"] == pinned


def test_an_mt_bench_101_folder_runs_by_its_rules(fake_server, env, tmp_path, data_dir):
    folder = tmp_path / "mtb101"
    folder.mkdir()
    rows = [json.loads(line) for line in (data_dir / "mt_bench_101/mtbench101.jsonl").open()]
    mine = [rows[0], next(r for r in rows if r["task"] == "SI")]
    mine[0]["history"][-1]["user"] = "An edited last question?"
    (folder / "mtbench101.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine), "utf-8")
    out = tmp_path / "run"
    done = run_cli(run_args(folder, fake_server, out), env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["benchmark"] == "mt-bench-101" and results["complete"] is True
    first_judged = 2 if mine[0]["task"] in ("CM", "AR", "CR", "FR", "SC", "SA") else 1
    expected = len(mine[0]["history"]) - first_judged + 1 + len(mine[1]["history"])
    assert results["counts"]["expected"] == expected
    assert results["data_source"]["published"] is False
    assert results["provenance"]["data_sha256"]["mt_bench_101/mtbench101.jsonl"] == sha(
        folder / "mtbench101.jsonl"
    )
    sent = [r["messages"][-1]["content"] for r in fake_server.requests if r["model"] == "m"]
    assert "An edited last question?" in sent


def test_folders_that_are_not_a_benchmark_layout_are_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match=r"must hold one of: question.jsonl \(mt-bench\)"):
        benchmark_class(str(empty))
    both = tmp_path / "both"
    both.mkdir()
    (both / "question.jsonl").write_text("{}\n")
    (both / "mtbench101.jsonl").write_text("{}\n")
    with pytest.raises(UserError, match="several benchmarks"):
        benchmark_class(str(both))
    references = tmp_path / "refs"
    (references / "reference_answer").mkdir(parents=True)
    (references / "question.jsonl").write_text("{}\n")
    (references / "reference_answer/a.jsonl").write_text("{}\n")
    (references / "reference_answer/b.jsonl").write_text("{}\n")
    with pytest.raises(UserError, match="several files match reference_answer"):
        benchmark_class(str(references))
    with pytest.raises(UserError, match="no such file or folder"):
        benchmark_class(str(tmp_path / "missing-folder"))
    with pytest.raises(UserError, match="no such file or folder"):
        benchmark_class("./nope.yaml")
