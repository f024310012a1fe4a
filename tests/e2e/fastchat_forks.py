"""Small folders in the layout of FastChat llm_judge forks (the Japanese Vicuna QA benchmark
and its kin), written from scratch for the import tests.

The shape, as those forks write it: `data/jp_bench/question.jsonl` (one-turn questions),
`data/judge_prompts_jp.jsonl` (prompts named `single`, `single-math`, `pair`, `pair-math`),
`reference_answer/gpt-4/results.jsonl`, `model_answer/MODEL/results.jsonl` (beside a
config.json), single judgments as `model_judgment/single/gpt-4/MODEL.jsonl` and pairwise
ones as `model_judgment/pairwise/gpt-4/MODEL1_MODEL2.jsonl`, rows with `judge_model` and
`judge_prompt` and no `turn`. Pairs are written in sorted order, so the baseline stands as
`model_1` in some files and `model_2` in others.
"""

from __future__ import annotations

import json
from pathlib import Path

BASELINE = "openai--text-davinci-003"
MODELS = ("cyberagent--calm2-7b-chat", BASELINE, "rinna--japanese-gpt-neox-3.6b-sft-v2")
QUESTIONS = (
    (1, "generic", "時間管理能力を向上させるにはどうしたらいいですか？"),
    (2, "knowledge", "ストレスと上手に付き合うには？"),
    (41, "fermi", "人は一生のうちに何回まばたきをしますか？"),
    (61, "coding", "2つのテキストファイルで最も多い単語を数えるプログラムを書いてください。"),
    (62, "coding", "最長共通部分列を求める関数を書いてください。"),
    (68, "math", "f(x) = 5x^3 - 2x + 3 のとき f(2) を求めてください。"),
    (71, "writing", "取引先に送る正式なメールを書いてください。"),
)
REFERENCE_IDS = (61, 62, 68)
PROMPTS = {
    "pair": ("pairwise", "[[A]]", "{question}|{answer_a}|{answer_b}"),
    "pair-math": ("pairwise", "[[A]]", "{question}|{ref_answer_1}|{answer_a}|{answer_b}"),
    "single": ("single", "[[rating]]", "{question}|{answer}"),
    "single-math": ("single", "[[rating]]", "{question}|{ref_answer_1}|{answer}"),
}

MARKS = {"single": "[[rating]]", "pairwise": "[[A]], [[B]] or [[C]]"}


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def answer_text(model: str, question: int) -> str:
    return f"{model} の回答 {question}"


def single_score(model: str, question: int) -> float:
    return float((question + 3 * MODELS.index(model)) % 10 + 1)


def winner(model: str, question: int) -> str:
    """Who wins `question` against the baseline: "model", "baseline" or "tie" (both games
    agree); question 2 disagrees across the two games (an inconsistent pair)."""
    return ("model", "baseline", "tie")[(question + MODELS.index(model)) % 3]


def fork_folder(root: Path) -> Path:
    """A fork's `data/jp_bench` folder with answers and reference answers, no judgments."""
    folder = root / "data" / "jp_bench"
    write_jsonl(
        folder / "question.jsonl",
        [{"question_id": q, "category": c, "turns": [text]} for q, c, text in QUESTIONS],
    )
    write_jsonl(
        root / "data" / "judge_prompts_jp.jsonl",
        [
            {"name": name, "type": kind, "system_prompt": f"{name}: reply {MARKS[kind]}",
             "prompt_template": template, "description": name, "category": "general",
             "output_format": output}
            for name, (kind, output, template) in PROMPTS.items()
        ],
    )  # fmt: skip
    write_jsonl(
        folder / "reference_answer" / "gpt-4" / "results.jsonl",
        [
            {"question_id": q, "answer_id": f"ref{q}", "model_id": "gpt-4",
             "choices": [{"index": 0, "turns": [f"参考解答 {q}"]}], "tstamp": 1.0}
            for q in REFERENCE_IDS
        ],
    )  # fmt: skip
    for model in MODELS:
        answers = folder / "model_answer" / model
        write_jsonl(
            answers / "results.jsonl",
            [
                {"question_id": q, "answer_id": f"{model}-{q}", "model_id": model,
                 "choices": [{"index": 0, "turns": [answer_text(model, q)]}], "tstamp": 2.0}
                for q, _, _ in QUESTIONS
            ],
        )  # fmt: skip
        (answers / "config.json").write_text(json.dumps({"model_id": model}), "utf-8")
    return folder


def prompt_name(category: str, kind: str) -> str:
    return f"{kind}-math" if category in ("coding", "math") else kind


def write_single_judgments(folder: Path) -> None:
    for model in MODELS:
        rows = []
        for q, category, text in QUESTIONS:
            score = single_score(model, q)
            rows.append(
                {"model": model, "question_id": q, "question": text,
                 "answer": answer_text(model, q), "judgment": f"評価: [[{score:g}]]",
                 "score": score, "judge_model": "gpt-4",
                 "judge_prompt": prompt_name(category, "single"), "tstamp": 3.0}
            )  # fmt: skip
        write_jsonl(folder / "model_judgment" / "single" / "gpt-4" / f"{model}.jsonl", rows)


def write_pairwise_judgments(folder: Path) -> list[str]:
    """One file per (model, baseline) pair, the pair in sorted order as the fork writes it;
    returns the file names."""
    names = []
    for model in MODELS:
        if model == BASELINE:
            continue
        model_1, model_2 = sorted((model, BASELINE))
        rows = []
        for q, category, text in QUESTIONS:
            outcome = winner(model, q)
            side = {"model": model, "baseline": BASELINE}.get(outcome)
            recorded = "tie" if side is None else ("model_1" if side == model_1 else "model_2")
            g1 = g2 = recorded
            if q == 2:  # the two games disagree
                g1, g2 = "model_1", "model_2"
            rows.append(
                {"model_1": model_1, "model_2": model_2, "question_id": q, "question": text,
                 "answer_1": answer_text(model_1, q), "answer_2": answer_text(model_2, q),
                 "g1_judgment": f"g1 {q}", "g2_judgment": f"g2 {q}", "g1_winner": g1,
                 "g2_winner": g2, "judge_model": "gpt-4",
                 "judge_prompt": prompt_name(category, "pair"), "tstamp": 4.0}
            )  # fmt: skip
        name = f"{model_1}_{model_2}.jsonl"
        write_jsonl(folder / "model_judgment" / "pairwise" / "gpt-4" / name, rows)
        names.append(name)
    return names
