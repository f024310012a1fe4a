"""`turnbench import --format fastchat`: a FastChat data folder's finished judgments, single and
pairwise, as a run that report, compare and export read; no request is sent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e import fastchat_forks as forks

MODELS = ("alpaca-13b", "vicuna-13b-v1.3")


def fastchat_folder(data_dir: Path, root: Path) -> Path:
    """FastChat's layout: data/judge_prompts.jsonl beside data/mt_bench/."""
    folder = root / "data" / "mt_bench"
    (folder / "model_answer").mkdir(parents=True)
    (folder / "model_judgment").mkdir()
    (folder / "reference_answer").mkdir()
    shutil.copy(data_dir / "mt_bench/question.jsonl", folder)
    shutil.copy(data_dir / "mt_bench/reference_answer/gpt-4.jsonl", folder / "reference_answer")
    shutil.copy(data_dir / "mt_bench/judge_prompts.jsonl", root / "data")
    for model in MODELS:
        shutil.copy(data_dir / f"mt_bench/model_answer/{model}.jsonl", folder / "model_answer")
    return folder


def questions(data_dir: Path) -> list[int]:
    rows = (data_dir / "mt_bench/question.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line)["question_id"] for line in rows]


def score(model: str, question: int, turn: int) -> float:
    return float((question * 3 + turn + len(model)) % 10 + 1)


def write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


def single_rows(data_dir: Path) -> list[dict]:
    rows = []
    for model in (*MODELS, "model-without-answers", "../outside"):
        for question in questions(data_dir):
            for turn in (1, 2):
                value = score(model, question, turn)
                if (model, question, turn) == ("alpaca-13b", 81, 1):
                    value = -1.0  # FastChat's mark of a judgment without a rating
                rows.append(
                    {"question_id": question, "model": model,
                     "judge": ["gpt-4", "single-v1" if turn == 1 else "single-v1-multi-turn"],
                     "user_prompt": f"prompt {question}-{turn}", "judgment":
                     f"Rating: [[{value}]]", "score": value, "turn": turn, "tstamp": 1.0}
                )  # fmt: skip
    return rows


def test_single_judgments_import_as_a_run(env, tmp_path, data_dir):
    folder = fastchat_folder(data_dir, tmp_path / "FastChat")
    write_rows(folder / "model_judgment/gpt-4_single.jsonl", single_rows(data_dir))
    out = tmp_path / "imported"
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(out)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "model-without-answers" in done.stdout  # skipped, and said so
    assert "'../outside': not a file name" in done.stdout  # never a path out of the folder
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["judge"] == "fastchat/gpt-4" and results["complete"] is True
    assert set(results["models"]) == set(MODELS)
    for model in MODELS:
        kept = [
            score(model, q, t)
            for q in questions(data_dir)
            for t in (1, 2)
            if (model, q, t) != ("alpaca-13b", 81, 1)
        ]
        result = results["models"][model]
        assert result["overall"] == pytest.approx(sum(kept) / len(kept))  # FastChat's mean
        assert result["data_source"]["published"] is True  # the published files, byte for byte
    assert results["models"]["alpaca-13b"]["counts"]["failed"] == 1
    assert results["imported"]["format"] == "fastchat"
    records = [json.loads(line) for line in (out / "log.jsonl").open(encoding="utf-8")]
    judgments = [r for r in records if r["kind"] == "judgment"]
    assert len(judgments) == 320 and {r["origin"] for r in judgments} == {"imported"}
    assert {r["origin"] for r in records if r["kind"] == "answer"} == {"imported"}
    # report, compare and export read it like a run
    report = run_cli(["report", str(out), "--out", str(tmp_path / "r.html")], env)
    assert report.returncode == 0, report.stderr
    compared = run_cli(
        ["compare", str(out), str(out), "--base-model", MODELS[0], "--new-model", MODELS[1],
         "--json"],
        env,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    # every question pairs: FastChat drops its -1 rating (compat), and so does compare
    assert json.loads(compared.stdout)["paired"] == 80
    exported = run_cli(["export", str(out), "--format", "fastchat", "--out", str(tmp_path / "fc")],
                       env)  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    back = (tmp_path / "fc/model_judgment/fastchat_gpt-4_single.jsonl").read_text("utf-8")
    assert len(back.splitlines()) == 320
    # importing the same files again adds nothing
    before = (out / "log.jsonl").read_text("utf-8").count('"kind":"judgment"')
    again = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(out)], env)
    assert again.returncode == 0, again.stderr
    assert (out / "log.jsonl").read_text("utf-8").count('"kind":"judgment"') == before


def test_pairwise_judgments_import_with_their_baseline(env, tmp_path, data_dir):
    folder = fastchat_folder(data_dir, tmp_path / "FastChat")
    outcomes = [("model_1", "model_2"), ("model_1", "model_1"), ("tie", "tie"), ("error", "tie")]
    rows = []
    for question in questions(data_dir):
        for turn in (1, 2):
            g1, g2 = outcomes[(question + turn) % 4]
            rows.append(
                {"question_id": question, "model_1": "vicuna-13b-v1.3", "model_2": "alpaca-13b",
                 "g1_winner": g1, "g2_winner": g2, "judge": ["gpt-4", "pair-v2"],
                 "g1_user_prompt": "p1", "g1_judgment": "j1", "g2_user_prompt": "p2",
                 "g2_judgment": "j2", "turn": turn, "tstamp": 1.0}
            )  # fmt: skip
    write_rows(folder / "model_judgment/gpt-4_pair.jsonl", rows)
    out = tmp_path / "pairs"
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(out)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["mode"] == "pairwise" and results["baseline"] == "alpaca-13b"
    row = results["models"]["vicuna-13b-v1.3"]
    # a quarter each: disagreeing games (an inconsistent tie), both for vicuna, both tie,
    # and a game FastChat could not read (the pair is left out)
    assert (row["win"], row["loss"], row["tie"], row["inconsistent"]) == (40, 0, 80, 40)
    assert results["counts"]["pairs"]["excluded"] == 40 and results["complete"] is True
    games = [json.loads(line) for line in (out / "log.jsonl").open(encoding="utf-8")]
    game = next(g for g in games if g["kind"] == "judgment" and g["order"] == "BA")
    assert game["model"] == "alpaca-13b"  # game 2 shows model_2 as assistant A
    report = run_cli(["report", str(out), "--out", str(tmp_path / "r.html")], env)
    assert report.returncode == 0, report.stderr


def test_import_problems_are_one_clear_error(env, tmp_path, data_dir):
    folder = fastchat_folder(data_dir, tmp_path / "FastChat")
    cases = [
        (
            ["--format", "nope", str(folder)],
            "unknown import format 'nope'; formats: agentdojo, fastchat",
        ),
        (["--format", "fastchat", str(tmp_path / "missing")], "no such file or folder"),
        (["--format", "fastchat", str(folder / "question.jsonl")], "reads a FastChat data folder"),
        (["--format", "fastchat", str(folder)], "no *_single.jsonl judgment file"),
    ]
    for extra, message in cases:
        done = run_cli(["import", *extra, "--out", str(tmp_path / "out")], env)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    write_rows(folder / "model_judgment/gpt-4_single.jsonl", [])
    write_rows(folder / "model_judgment/claude_single.jsonl", [])
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(tmp_path / "o")],
                   env)  # fmt: skip
    assert done.returncode == 2 and "choose one with --judgments FILE" in done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()


# -- FastChat forks' layouts (tests/e2e/fastchat_forks.py) and the baseline of pairwise files --
def results_of(out: Path) -> dict:
    return json.loads((out / "results.json").read_text("utf-8"))


def test_a_forks_single_judgments_import_with_their_names(env, tmp_path):
    folder = forks.fork_folder(tmp_path / "fork")
    forks.write_single_judgments(folder)
    out = tmp_path / "single"
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(out)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = results_of(out)
    assert results["judge"] == "fastchat/gpt-4" and results["complete"] is True
    assert list(results["models"]) == list(forks.MODELS)  # named after their folders
    for model in forks.MODELS:
        scores = [forks.single_score(model, q) for q, _, _ in forks.QUESTIONS]
        assert results["models"][model]["overall"] == pytest.approx(sum(scores) / len(scores))
        assert results["models"][model]["data_source"]["published"] is False
    layout = results["imported"]["layout"]
    assert "model_judgment/single/JUDGE/*.jsonl" in layout["judgments"]
    assert layout["answers"] == ["model_answer/MODEL/results.jsonl"]
    assert layout["judge_prompts"] == ["pair", "pair-math", "single", "single-math"]
    files = results["imported"]["files"]
    assert f"model_judgment/single/gpt-4/{forks.MODELS[0]}.jsonl" in files
    assert f"model_answer/{forks.MODELS[0]}/results.jsonl" in files
    records = [json.loads(line) for line in (out / "log.jsonl").open(encoding="utf-8")]
    coding = next(r for r in records if r["kind"] == "judgment" and r["sample_id"] == 61)
    assert coding["prompt_name"] == "single-math" and coding["turn"] == 1


def test_a_forks_pairwise_files_import_against_the_baseline_on_either_side(env, tmp_path):
    folder = forks.fork_folder(tmp_path / "fork")
    names = forks.write_pairwise_judgments(folder)
    # the baseline sorts second in one file's name and first in the other's
    assert names[0].endswith(f"_{forks.BASELINE}.jsonl") and names[1].startswith(forks.BASELINE)
    out = tmp_path / "pairs"
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(out)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = results_of(out)
    assert results["mode"] == "pairwise" and results["baseline"] == forks.BASELINE
    assert results["complete"] is True and set(results["models"]) == set(forks.MODELS) - {
        forks.BASELINE
    }
    for model, row in results["models"].items():
        expected = {"win": 0, "loss": 0, "tie": 0, "inconsistent": 0}
        for q, _, _ in forks.QUESTIONS:
            if q == 2:
                expected["tie"] += 1
                expected["inconsistent"] += 1
            else:
                outcome = forks.winner(model, q)
                expected[{"model": "win", "baseline": "loss", "tie": "tie"}[outcome]] += 1
        assert {k: row[k] for k in expected} == expected, model
    assert "one file per pair" in results["imported"]["layout"]["judgments"]


def test_a_baseline_standing_on_both_sides_is_found_and_never_asks_for_a_rerun(
    env, tmp_path, data_dir
):
    folder = fastchat_folder(data_dir, tmp_path / "FastChat")
    third = folder / "model_answer" / "zeta-7b.jsonl"
    shutil.copy(folder / "model_answer" / "vicuna-13b-v1.3.jsonl", third)
    rows = []
    for question in questions(data_dir):
        for turn in (1, 2):
            for first, second in (("vicuna-13b-v1.3", "alpaca-13b"), ("alpaca-13b", "zeta-7b")):
                rows.append(
                    {"question_id": question, "model_1": first, "model_2": second,
                     "g1_winner": "model_1", "g2_winner": "model_1", "judge": ["gpt-4", "pair-v2"],
                     "turn": turn}
                )  # fmt: skip
    judgments = folder / "model_judgment/gpt-4_pair.jsonl"
    write_rows(judgments, rows)
    out = tmp_path / "pairs"
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(out)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = results_of(out)
    assert results["mode"] == "pairwise" and results["baseline"] == "alpaca-13b"
    assert results["complete"] is True and results["counts"]["pending"] == 0
    assert results["models"]["vicuna-13b-v1.3"]["win"] == 160  # model_1 wins both games
    assert results["models"]["zeta-7b"]["loss"] == 160  # alpaca, model_1 there, wins
    # --baseline names it; games without it are left out and said so
    given = tmp_path / "given"
    done = run_cli(
        ["import", "--format", "fastchat", str(folder), "--out", str(given), "--baseline",
         "zeta-7b"],
        env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert results_of(given)["baseline"] == "zeta-7b" and "skipped" in done.stdout
    assert set(results_of(given)["models"]) == {"alpaca-13b"}
    refused = run_cli(
        ["import", "--format", "fastchat", str(folder), "--out", str(tmp_path / "x"),
         "--baseline", "nobody"],
        env,
    )  # fmt: skip
    assert refused.returncode == 2 and "--baseline nobody: no game" in refused.stderr
    # files that truly miss games: incomplete, and no advice to re-run what cannot progress
    write_rows(judgments, [r for r in rows if r["question_id"] != 81])
    partial = tmp_path / "partial"
    for _ in range(2):
        done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(partial)], env)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "re-run" not in done.stdout.lower() and "Re-run" not in done.stderr
        assert "importing the same files again adds nothing" in " ".join(done.stdout.split())
    assert results_of(partial)["counts"]["pending"] == 2 * 2 * 2  # 2 pairs x 2 turns x 2 games


def test_refused_fork_folders_say_what_was_found_and_expected(env, tmp_path):
    folder = forks.fork_folder(tmp_path / "fork")
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(tmp_path / "o")],
                   env)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "model_judgment/single/JUDGE/*.jsonl" in done.stderr
    assert "found: no model_judgment/ folder" in done.stderr and "model_answer/" in done.stderr
    forks.write_single_judgments(folder)
    # a reference answer file without question 61: the file is named, not "no reference"
    reference = folder / "reference_answer/gpt-4/results.jsonl"
    lines = reference.read_text("utf-8").splitlines()
    reference.write_text("\n".join(line for line in lines if '"question_id": 61' not in line))
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(tmp_path / "o")],
                   env)  # fmt: skip
    assert done.returncode == 2
    assert "question 61 (coding)" in done.stderr and "results.jsonl has none for it" in done.stderr
    shutil.rmtree(folder / "reference_answer")
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(tmp_path / "o")],
                   env)  # fmt: skip
    assert done.returncode == 2 and "no reference answer file was found" in done.stderr
    assert "reference_answer/*/*.jsonl" in done.stderr
    (folder / "question.jsonl").unlink()
    done = run_cli(["import", "--format", "fastchat", str(folder), "--out", str(tmp_path / "o")],
                   env)  # fmt: skip
    assert done.returncode == 2 and "has no question.jsonl; found: model_answer/" in done.stderr
    assert "Traceback" not in done.stderr
