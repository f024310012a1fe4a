"""Every export reads back: a run judged against the fake server, exported as CSV, JSONL and
FastChat's files, and imported again has the same scores (single and pairwise, with and
without --limit); an export that cannot carry a run says what it loses and exits non-zero."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e import fastchat_forks as forks
from turnbench.testing.fake_server import FakeServer

ALPACA, VICUNA, ZETA = "alpaca-13b", "vicuna-13b-v1.3", "zeta-7b"
JUDGE = "openai/judge-model"
SCORES = ("overall", "by_turn", "by_category", "counts")
GAMES = ("win", "loss", "tie", "inconsistent", "compared", "win_rate", "loss_rate",
         "win_rate_adjusted", "by_turn", "by_category", "versus")  # fmt: skip
RUN = ("position_consistency", "verdicts", "ratings", "counts")
CASES = {
    "single, --limit 1": ("single", ["--limit", "1"]),
    "single": ("single", []),
    "pairwise vs a baseline": ("pairwise", ["--mode", "pairwise", "--baseline", ALPACA]),
    "pairwise vs a baseline, --limit 2": (
        "pairwise",
        ["--mode", "pairwise", "--baseline", ALPACA, "--limit", "2"],
    ),
    "all pairs of three, --limit 1": ("pairwise-all", ["--mode", "pairwise-all", "--limit", "1"]),
}


def results_of(out: Path) -> dict:
    return json.loads((out / "results.json").read_text("utf-8"))


def judge_cli(answers: list[Path], server: FakeServer, out: Path, *extra: str) -> list[str]:
    given = [arg for path in answers for arg in ("--answers", str(path))]
    return ["judge", *given, "--judge", JUDGE, "--judge-base-url", server.base_url,
            "--out", str(out), *extra]  # fmt: skip


def scores(results: dict, texts: bool = True) -> dict:
    """What the scores of a run are: per model, its score fields (counts of judgments and
    re-asks included; of answers too when the format carries `texts`), and the run's mode
    and baseline."""
    keys = GAMES if "position_consistency" in results else SCORES
    models = {m: {k: row.get(k) for k in keys} for m, row in results["models"].items()}
    for row in models.values():
        if not texts and isinstance(row.get("counts"), dict):
            row["counts"] = {k: v for k, v in row["counts"].items() if k != "answers"}
    run = {k: results.get(k) for k in RUN}
    if not texts and isinstance(run["counts"], dict):
        run["counts"] = {k: v for k, v in run["counts"].items() if k != "answers"}
    return {
        **run,
        "models": models,
        "mode": results.get("mode"),
        "baseline": results.get("baseline"),
        "complete": results["complete"],
    }


@pytest.mark.parametrize("case", list(CASES))
def test_every_export_imports_back_to_the_same_scores(case, fake_server, env, tmp_path, data_dir):
    mode, extra = CASES[case]
    answers = [data_dir / f"mt_bench/model_answer/{m}.jsonl" for m in (ALPACA, VICUNA)]
    if mode == "pairwise-all":
        third = tmp_path / f"{ZETA}.jsonl"
        shutil.copy(answers[1], third)
        answers.append(third)
    run = tmp_path / "run"
    # --answers given once per model (every one is judged), or one folder of them
    given = answers
    if case != "single, --limit 1":
        given = [tmp_path / "answers"]
        given[0].mkdir()
        for path in answers:
            shutil.copy(path, given[0])
    done = run_cli(judge_cli(given, fake_server, run, *extra), env)
    assert done.returncode == 0, done.stdout + done.stderr
    original = results_of(run)
    assert len(original["models"]) == (len(answers) - 1 if mode == "pairwise" else len(answers))
    for fmt in ("fastchat", "jsonl", "csv"):
        exported = tmp_path / (f"export-{fmt}" if fmt == "fastchat" else f"export.{fmt}")
        done = run_cli(["export", str(run), "--format", fmt, "--out", str(exported)], env)
        assert done.returncode == 0, (fmt, done.stdout + done.stderr)
        back = tmp_path / f"back-{fmt}"
        done = run_cli(["import", "--format", fmt, str(exported), "--out", str(back)], env)
        assert done.returncode == 0, (fmt, done.stdout + done.stderr)
        imported = results_of(back)
        texts = fmt != "csv"  # CSV carries no answer texts, and says so
        assert scores(imported, texts) == scores(original, texts), fmt
        if not texts:
            assert "CSV carries scores and verdicts" in " ".join(done.stdout.split())
        if fmt == "fastchat":  # the published files, copied: the import knows them
            assert (exported / "question.jsonl").read_bytes() == (
                data_dir / "mt_bench/question.jsonl"
            ).read_bytes()
            assert (exported / "reference_answer/gpt-4.jsonl").is_file()
            assert (exported / "judge_prompts.jsonl").is_file()
    if mode != "single":
        # every game row says whom it was against and in which order: no two look alike
        rows = list(csv.DictReader((tmp_path / "export.csv").open(encoding="utf-8")))
        seen = Counter(
            (r["model"], r["sample_id"], r["turn"], r["opponent"], r["order"]) for r in rows
        )
        assert max(seen.values()) == 1 and {r["order"] for r in rows} == {"AB", "BA"}
        assert all(r["opponent"] and r["mode"] == mode for r in rows)


def test_a_one_turn_benchmark_exports_its_answers(fake_server, env, tmp_path):
    folder = forks.fork_folder(tmp_path / "fork")
    run = tmp_path / "run"
    done = run_cli(
        judge_cli([folder / "model_answer"], fake_server, run, "--benchmark", str(folder)), env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(results_of(run)["models"]) == list(forks.MODELS)  # named after their folders
    exported = tmp_path / "fc"
    done = run_cli(["export", str(run), "--format", "fastchat", "--out", str(exported)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stdout + done.stderr
    for model in forks.MODELS:
        rows = (exported / f"model_answer/{model}.jsonl").read_text("utf-8").splitlines()
        assert len(rows) == len(forks.QUESTIONS)
        assert json.loads(rows[0])["choices"][0]["turns"] == [forks.answer_text(model, 1)]
    back = tmp_path / "back"
    done = run_cli(["import", "--format", "fastchat", str(exported), "--out", str(back)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert scores(results_of(back)) == scores(results_of(run))


def test_an_export_that_cannot_carry_the_run_says_what_and_fails(fake_server, env, tmp_path,
                                                                  data_dir):  # fmt: skip
    answers = [data_dir / f"mt_bench/model_answer/{m}.jsonl" for m in (ALPACA, VICUNA)]
    run = tmp_path / "run"
    done = run_cli(
        judge_cli(answers, fake_server, run, "--limit", "1", "--judge-repeats", "2"), env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_cli(["export", str(run), "--format", "fastchat", "--out", str(tmp_path / "fc")],
                   env)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    flat = " ".join((done.stdout + done.stderr).split())
    assert "32 repeated judgment(s) (--judge-repeats)" in flat
    assert "cannot carry 1 item(s)" in flat and "--format jsonl carries everything" in flat
    assert "Traceback" not in done.stderr
    # the flat export carries them, and its import says it reads one judgment per turn
    exported = tmp_path / "rows.jsonl"
    done = run_cli(["export", str(run), "--format", "jsonl", "--out", str(exported)], env)
    assert done.returncode == 0, done.stderr
    done = run_cli(["import", "--format", "jsonl", str(exported), "--out", str(tmp_path / "b")],
                   env)  # fmt: skip
    assert done.returncode == 2 and "repeated judgments (--judge-repeats)" in done.stderr
