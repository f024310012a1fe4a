"""Export formats: flat judgment rows, CSV safety, FastChat's answer and judgment rows."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from turnbench.errors import UserError
from turnbench.interop.export import (
    CSV_COLUMNS,
    fastchat_name,
    fastchat_rows,
    judgment_rows,
    render_csv,
    render_jsonl,
    write_fastchat,
)
from turnbench.record_keys import game_key
from turnbench.store.rundir import Run
from turnbench.types import AnswerRecord, FailureRecord, JudgmentRecord

JUDGE = "openai/gpt-4"
MODEL = "openai/my-model"


def answer(sample: int, turn: int, text: str, ts: float = 100.0) -> AnswerRecord:
    return AnswerRecord(
        key=f"answer|{MODEL}|{sample}|{turn}",
        model=MODEL,
        sample_id=sample,
        turn=turn,
        text=text,
        meta={"category": "writing"},
        ts=ts,
    )


def judgment(sample: int, turn: int, outputs: list[str], score: float | None) -> JudgmentRecord:
    return JudgmentRecord(
        key=f"judgment|{JUDGE}|{MODEL}|{sample}|{turn}",
        judge=JUDGE,
        model=MODEL,
        sample_id=sample,
        turn=turn,
        prompt_name="single-v1" if turn == 1 else "single-v1-multi-turn",
        messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": f"[Question] q{sample}.{turn} [The Start of Answer]"},
        ],
        outputs=outputs,
        parser="rating-strict",
        status="scored" if score is not None else "parse_failed",
        score=score,
        parse_error=None if score is not None else "no [[rating]] in the reply",
        meta={"category": "writing"},
        ts=200.0 + sample + turn,
    )


def make_run(benchmark: str = "mt-bench") -> Run:
    records = [
        answer(81, 1, '=HYPERLINK("http://x")'),
        answer(81, 2, "second", ts=150.0),
        judgment(81, 1, ["Fine. Rating: [[7]]"], 7.0),
        judgment(81, 2, ["no idea", "still none", "nope"], None),
        answer(82, 1, "only turn 1"),
        judgment(82, 1, ["Rating: [[4.5]]"], 4.5),
        FailureRecord(
            key=f"answer|{MODEL}|82|2",
            stage="answer",
            error="HTTP 503",
            meta={"category": "writing"},
        ),
    ]
    results = {"benchmark": benchmark, "judge": JUDGE, "model": MODEL, "provenance": {}}
    return Run(path=Path("/runs/r"), label="r", results=results, records=records)


def test_judgment_rows_one_per_judged_turn_plus_failing_requests():
    rows = judgment_rows(make_run())
    assert [(r["sample_id"], r["turn"], r["status"], r["score"]) for r in rows] == [
        (81, 1, "scored", 7.0),
        (81, 2, "parse_failed", None),
        (82, 1, "scored", 4.5),
        (82, 2, "request_failed", None),
    ]
    failed = rows[1]
    assert failed["reasks"] == 2 and failed["parse_error"] == "no [[rating]] in the reply"
    assert failed["judge_outputs"] == ["no idea", "still none", "nope"]
    assert rows[0]["answer"] == '=HYPERLINK("http://x")' and rows[0]["category"] == "writing"
    assert rows[3]["error"] == "answer request: HTTP 503" and rows[3]["judge"] == JUDGE


def test_jsonl_round_trips_and_csv_has_fixed_columns_without_formulas():
    rows = judgment_rows(make_run())
    parsed = [json.loads(line) for line in render_jsonl(rows).splitlines()]
    assert parsed == rows
    table = list(csv.DictReader(io.StringIO(render_csv(rows))))
    assert list(table[0]) == CSV_COLUMNS
    assert [r["score"] for r in table] == ["7.0", "", "4.5", ""]
    hostile = [{**rows[0], "model": "=cmd|' /C calc'!A0", "parse_error": "@SUM(1)"}]
    cells = next(csv.DictReader(io.StringIO(render_csv(hostile))))
    assert cells["model"] == "'=cmd|' /C calc'!A0" and cells["parse_error"] == "'@SUM(1)"


def test_fastchat_rows_follow_fastchat_formats(tmp_path):
    exported = fastchat_rows(make_run())
    assert list(exported.answers) == ["my-model"]
    (row,) = exported.answers["my-model"]  # question 82 lacks turn 2: not exported
    assert set(row) == {"question_id", "answer_id", "model_id", "choices", "tstamp"}
    assert row["question_id"] == 81 and row["model_id"] == "my-model"
    assert row["choices"] == [{"index": 0, "turns": ['=HYPERLINK("http://x")', "second"]}]
    assert row["tstamp"] == 150.0
    assert exported.skipped == [f"{MODEL} question 82: answered turns [1] of 2"]
    assert exported.lost == [f"answers of {MODEL} question 82: answered turns [1] of 2"]
    judged = exported.judgments["gpt-4"]
    assert [(j["question_id"], j["turn"], j["score"]) for j in judged] == [
        (81, 1, 7.0),
        (81, 2, -1),  # FastChat's marker for a failed judgment
        (82, 1, 4.5),
    ]
    first = judged[0]
    assert set(first) == {
        "question_id",
        "model",
        "judge",
        "user_prompt",
        "judgment",
        "score",
        "turn",
        "tstamp",
    }
    assert first["judge"] == ["gpt-4", "single-v1"] and first["model"] == "my-model"
    assert first["user_prompt"] == "[Question] q81.1 [The Start of Answer]"
    assert judged[1]["judgment"] == "nope"  # the last reply, the one that was parsed
    written = write_fastchat(exported, tmp_path / "fc")
    assert sorted(p.relative_to(tmp_path / "fc").as_posix() for p in written) == [
        "model_answer/my-model.jsonl",
        "model_judgment/gpt-4_single.jsonl",
    ]


def test_fastchat_refuses_other_benchmarks():
    with pytest.raises(UserError, match="only for MT-Bench"):
        fastchat_rows(make_run("mt-bench-101"))


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("openai/gpt-4o", "gpt-4o"),
        ("openai/meta-llama/Llama-3-8B", "meta-llama_Llama-3-8B"),
        ("local/smollm2", "smollm2"),
        ("alpaca-13b", "alpaca-13b"),
        ("../../etc", ".._.._etc"),
    ],
)
def test_fastchat_names_are_file_names(spec, name):
    assert fastchat_name(spec) == name
    assert "/" not in fastchat_name(spec)


def test_fastchat_name_refuses_empty():
    with pytest.raises(UserError):
        fastchat_name("..")


def test_fastchat_name_refuses_a_name_too_long_for_a_file():
    """A 300-character model would be written as model_answer/<300 chars>.jsonl: refused
    with the reason rather than left to the file system's ENAMETOOLONG."""
    with pytest.raises(UserError, match="too long for a file name"):
        fastchat_name("openai/" + "m" * 300)
    assert fastchat_name("openai/" + "m" * 200) == "m" * 200


def game(order: str, verdict: str | None, shown_a: str) -> JudgmentRecord:
    pair = ("openai/a", "openai/b")
    return JudgmentRecord(
        key=game_key(JUDGE, *pair, 81, 1, order),  # type: ignore[arg-type]
        judge=JUDGE,
        model=shown_a,
        sample_id=81,
        turn=1,
        pair=pair,
        order=order,  # type: ignore[arg-type]
        prompt_name="pair-v2",
        messages=[{"role": "user", "content": f"compare {order}"}],
        outputs=[f"verdict {order}"],
        parser="verdict-strict",
        status="scored" if verdict else "parse_failed",
        verdict=verdict,
        parse_error=None if verdict else "no verdict",
        ts=300.0,
    )


def test_pairwise_games_become_fastchat_pair_rows_and_flat_rows_name_the_opponent():
    records = [game("AB", "B", "openai/a"), game("BA", None, "openai/b")]
    results = {"benchmark": "mt-bench", "judge": JUDGE, "models": {}, "provenance": {
        "judging": "pairwise-all"}}  # fmt: skip
    run = Run(path=Path("/runs/p"), label="p", results=results, records=records)
    exported = fastchat_rows(run)
    (row,) = exported.pairs["gpt-4"]
    # game 1 shows model_1 as A: its "B" is model_2; game 2 found no verdict: "error"
    assert (row["model_1"], row["model_2"], row["g1_winner"], row["g2_winner"]) == (
        "a",
        "b",
        "model_2",
        "error",
    )
    assert row["g1_user_prompt"] == "compare AB" and row["g2_judgment"] == "verdict BA"
    assert exported.judgments == {} and exported.lost == []
    flat = judgment_rows(run)
    assert [(r["model"], r["opponent"], r["order"], r["mode"]) for r in flat] == [
        ("openai/a", "openai/b", "AB", "pairwise-all"),
        ("openai/b", "openai/a", "BA", "pairwise-all"),
    ]
    # one order only: FastChat's row needs both games, and the export says it is lost
    alone = Run(path=Path("/runs/p"), label="p", results=results, records=records[:1])
    assert fastchat_rows(alone).pairs == {}
    assert "judged in one order only" in fastchat_rows(alone).lost[0]


def test_csv_cells_read_back_exactly():
    from turnbench.interop.reimport import _csv_value

    for text in ("=SUM(1)", "'quoted", "''", "-1", "plain"):
        cell = render_csv([{"model": text}]).splitlines()[1].split(",")[1]
        assert _csv_value(cell) == text
