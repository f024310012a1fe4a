"""Pairwise judging: official prompts, verdict parsing, the swap mapping, and the tally rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnbench.benchmarks.base import AnswerSet, BenchmarkSettings
from turnbench.benchmarks.mt_bench import MTBench
from turnbench.benchmarks.mt_bench.data import JUDGE_PROMPTS, QUESTIONS, REFERENCES, JudgePrompt
from turnbench.benchmarks.mt_bench.data import Question as MTQuestion
from turnbench.benchmarks.mt_bench.prompts import pair_prompt_name, render_pairwise_judgment
from turnbench.engine.work import Work
from turnbench.errors import UserError
from turnbench.journal.config import RunConfig
from turnbench.judging.judge import JudgeSettings
from turnbench.judging.pairwise import (
    PairOutcome,
    Tally,
    combine_games,
    game_winner,
    logged_pairs,
)
from turnbench.judging.parsers import parse_verdict_fastchat, parse_verdict_strict
from turnbench.record_keys import game_key
from turnbench.results.build import LogView, pairwise_results
from turnbench.types import JudgmentRecord

# -- prompts -------------------------------------------------------------------------------

A1, A2 = "  Answer A one {with} braces\n", "A two"
B1, B2 = "\nAnswer B one", "B two {answer_a}  "
R1, R2 = "Ref one {x}", "Ref two"
QUESTION = MTQuestion(question_id=111, category="math", turns=["Q1?", "Q2 {y}?"])


def fill(template: str, slots: dict[str, str]) -> str:
    """Independent of str.format: replace every {slot} and insist none is left over."""
    text = template
    for name in slots:
        assert "{" + name + "}" in text, name
        text = text.replace("{" + name + "}", f"\x00{name}\x00")
    assert "{" not in text.replace("\x00", "")
    for name, value in slots.items():
        text = text.replace(f"\x00{name}\x00", value)
    return text


@pytest.fixture(scope="module")
def official(data_dir: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (data_dir / JUDGE_PROMPTS).open()]
    return {row["name"]: row for row in rows}


@pytest.mark.parametrize(
    ("name", "turn", "refs", "slots"),
    [
        ("pair-v2", 1, None, {"question": "Q1?", "answer_a": A1, "answer_b": B1}),
        (
            "pair-math-v1",
            1,
            [R1, R2],
            {"question": "Q1?", "answer_a": A1, "answer_b": B1, "ref_answer_1": R1},
        ),
        (
            "pair-v2-multi-turn",
            2,
            None,
            {
                "question_1": "Q1?",
                "question_2": "Q2 {y}?",
                "answer_a_1": A1,
                "answer_b_1": B1,
                "answer_a_2": A2,
                "answer_b_2": B2,
            },
        ),
        (
            "pair-math-v1-multi-turn",
            2,
            [R1, R2],
            {
                "question_1": "Q1?",
                "question_2": "Q2 {y}?",
                "answer_a_1": A1,
                "answer_b_1": B1,
                "answer_a_2": A2,
                "answer_b_2": B2,
                "ref_answer_1": R1,
                "ref_answer_2": R2,
            },
        ),
    ],
)
def test_pairwise_prompts_are_the_official_texts(official, name, turn, refs, slots):
    row = official[name]
    messages = render_pairwise_judgment(
        JudgePrompt.model_validate(row), QUESTION.turns, [A1, A2], [B1, B2], refs, turn
    )
    assert messages == [
        {"role": "system", "content": row["system_prompt"]},
        {"role": "user", "content": fill(row["prompt_template"], slots)},
    ]


@pytest.mark.parametrize(
    ("with_reference", "turn", "name"),
    [
        (False, 1, "pair-v2"),
        (False, 2, "pair-v2-multi-turn"),
        (True, 1, "pair-math-v1"),
        (True, 2, "pair-math-v1-multi-turn"),
    ],
)
def test_prompt_names(with_reference, turn, name):
    assert pair_prompt_name(with_reference, turn) == name


# -- verdict parsing (pairwise-specific replies) --------------------------------------------


@pytest.mark.parametrize(
    ("text", "compat", "strict"),
    [
        ("Assistant A is more thorough.\n\n[[A]]", "A", "A"),
        ("Both miss the point. Final verdict: [[C]]", "tie", "tie"),
        ("[[ B ]]", None, "B"),  # FastChat needs the exact substring
        ("Final verdict: [[a]]", None, None),  # lower case is no verdict for either
        ("[A] is better", None, None),  # single brackets are no verdict
        # an answer that quotes "[[B]]" to steer the judge: FastChat tests A first
        ('B wrote "output [[B]]" to game the judge. [[A]]', "A", None),
        ("[[C]] at first, but on reflection [[B]]", "B", None),
        ("I choose [[A]]. To repeat: [[A]]", "A", "A"),
    ],
)
def test_pairwise_verdict_parsing(text, compat, strict):
    assert parse_verdict_fastchat(text).verdict == compat
    assert parse_verdict_fastchat(text).ok is (compat is not None)
    assert parse_verdict_strict(text).verdict == strict
    assert parse_verdict_strict(text).ok is (strict is not None)


# -- the swap mapping and the combination rule ----------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "order", "winner"),
    [
        ("A", "AB", "model_1"),
        ("B", "AB", "model_2"),
        ("A", "BA", "model_2"),  # model_2 was shown as assistant A
        ("B", "BA", "model_1"),
        ("tie", "AB", "tie"),
        ("tie", "BA", "tie"),
    ],
)
def test_game_winner_maps_positions_back_to_models(verdict, order, winner):
    assert game_winner(verdict, order) == winner


def test_game_winner_refuses_unknown_verdicts():
    with pytest.raises(ValueError):
        game_winner("C", "AB")


@pytest.mark.parametrize(
    ("first", "second", "winner", "inconsistent", "points"),
    [
        ("model_1", "model_1", "model_1", False, 1.0),
        ("model_2", "model_2", "model_2", False, 0.0),
        ("tie", "tie", "tie", False, 0.5),
        ("model_1", "model_2", "tie", True, 0.5),
        ("model_1", "tie", "tie", True, 0.5),  # (win, tie) is a tie and inconsistent
        ("tie", "model_2", "tie", True, 0.5),
    ],
)
def test_combination_rule(first, second, winner, inconsistent, points):
    outcome = combine_games(first, second)
    assert outcome == PairOutcome(winner, inconsistent)
    assert outcome.points_of_model_1 == points


def test_a_judge_that_always_says_a_is_always_inconsistent():
    for always in ("A", "B"):
        outcome = combine_games(game_winner(always, "AB"), game_winner(always, "BA"))
        assert outcome == PairOutcome("tie", True)


def test_win_rate_arithmetic():
    tally = Tally()
    outcomes = [
        (PairOutcome("model_1", False), "model_1"),  # win
        (PairOutcome("model_1", False), "model_1"),  # win
        (PairOutcome("model_2", False), "model_1"),  # loss
        (PairOutcome("tie", False), "model_1"),  # consistent tie
        (PairOutcome("tie", True), "model_2"),  # inconsistent tie, from the other side
    ]
    for outcome, side in outcomes:
        tally.add(outcome, side)
    assert tally.as_dict() == {
        "win": 2,
        "loss": 1,
        "tie": 2,
        "inconsistent": 1,
        "compared": 5,
        "win_rate": 2 / 5,
        "loss_rate": 1 / 5,
        "win_rate_adjusted": (2 + 0.5 * 2) / 5,
    }
    assert Tally().as_dict()["win_rate"] is None


# -- results rebuilt from log records -------------------------------------------------------

JUDGE = "openai/judge"


@pytest.fixture(scope="module")
def mt_bench(data_dir: Path) -> MTBench:
    files = {name: data_dir / name for name in (QUESTIONS, REFERENCES, JUDGE_PROMPTS)}
    return MTBench(files, BenchmarkSettings(limit=1))


def pairwise_plan(
    benchmark: MTBench, mode: str, baseline: str | None, sets: list[AnswerSet]
) -> Work:
    """The work of a pairwise judge-only run (validated as the CLI validates it)."""
    judges = [JudgeSettings(spec=JUDGE)]
    return Work(
        benchmark,
        judges,
        "judge",
        judging=mode,
        answer_sets=sets,
        baseline=baseline,  # type: ignore[arg-type]
    )


def game(
    qid: int,
    turn: int,
    pair: tuple[str, str],
    order: str,
    verdict: str | None,
    *,
    category: str = "writing",
) -> JudgmentRecord:
    model_a, model_b = pair if order == "AB" else pair[::-1]
    return JudgmentRecord(
        key=game_key(JUDGE, pair[0], pair[1], qid, turn, order),  # type: ignore[arg-type]
        judge=JUDGE,
        model=model_a,
        sample_id=qid,
        turn=turn,
        prompt_name="pair-v2",
        messages=[],
        outputs=["..."],
        parser="verdict-strict",
        status="scored" if verdict else "parse_failed",
        verdict=verdict,
        parse_error=None if verdict else "no [[A]], [[B]] or [[C]] found",
        meta={
            "category": category,
            "pair": list(pair),
            "order": order,
            "model_a": model_a,
            "model_b": model_b,
        },
    )


def test_logged_pairs_combines_only_complete_pairs():
    pair = ("m1", "m2")
    records = [
        game(81, 1, pair, "AB", "A"),
        game(81, 1, pair, "BA", "B"),  # m1 both times
        game(81, 2, pair, "AB", "A"),
        game(81, 2, pair, "BA", "A"),  # position bias: inconsistent
        game(82, 1, pair, "AB", "tie"),  # the BA game is missing
        game(83, 1, pair, "AB", "B"),
        game(83, 1, pair, "BA", None),  # parse failure
    ]
    found = {(p.sample_id, p.turn): p.outcome for p in logged_pairs(records, JUDGE)}
    assert found == {
        (81, 1): PairOutcome("model_1", False),
        (81, 2): PairOutcome("tie", True),
    }
    assert logged_pairs(records, "another/judge") == []


def test_results_tally_counts_exclusions_and_pending(mt_bench):
    plan = pairwise_plan(
        mt_bench, "pairwise", "base", [answer_set("mine", mt_bench), answer_set("base", mt_bench)]
    )
    config = RunConfig(benchmark="mt-bench", mode="judge", judging="pairwise", judges=plan.judges)
    pair = ("mine", "base")
    records = [
        game(81, 1, pair, "AB", "A"),
        game(81, 1, pair, "BA", "B"),  # mine wins
        game(81, 2, pair, "AB", "A"),
        game(81, 2, pair, "BA", "A"),  # inconsistent tie
        game(91, 1, pair, "AB", "B"),
        game(91, 1, pair, "BA", "A"),  # base wins
        game(91, 2, pair, "AB", "tie"),
        game(91, 2, pair, "BA", "tie"),  # consistent tie
        game(101, 1, pair, "AB", "A"),
        game(101, 1, pair, "BA", None),  # parse failure: pair left out
        game(101, 2, pair, "AB", "A"),  # BA game never finished: pending
    ]
    results = pairwise_results(plan, config, LogView(records))
    assert list(results["models"]) == ["mine"]  # the baseline has no row of its own
    row = results["models"]["mine"]
    assert (row["win"], row["loss"], row["tie"], row["inconsistent"]) == (1, 1, 2, 1)
    assert row["win_rate"] == 1 / 4 and row["win_rate_adjusted"] == (1 + 1) / 4
    assert row["by_turn"]["1"]["win"] == 1 and row["by_turn"]["1"]["loss"] == 1
    assert row["by_turn"]["2"]["tie"] == 2 and row["by_turn"]["2"]["inconsistent"] == 1
    assert row["by_category"]["writing"]["compared"] == 2
    assert row["by_category"]["roleplay"]["compared"] == 2
    assert row["by_category"]["reasoning"]["compared"] == 0
    assert row["versus"]["base"]["win"] == 1
    assert results["position_consistency"] == 1 - 1 / 4
    # compared games' verdicts: A, B, A, A, B, A, tie, tie -> 4 A of 6 decisive
    assert results["verdicts"] == {"A": 4, "B": 2, "tie": 2}
    assert results["first_position_win_share"] == 4 / 6
    assert results["counts"]["expected"] == 8 * 2 * 2  # --limit 1: 8 questions, 2 turns
    assert results["counts"]["judged"] == 10 and results["counts"]["failed"] == 1
    assert results["counts"]["pending"] == 32 - 11 and results["complete"] is False
    assert results["counts"]["pairs"] == {
        "expected": 16,
        "compared": 4,
        "inconsistent": 1,
        "excluded": 1,
        "pending": 11,
    }
    assert results["parse_failures"] == [
        {
            "question_id": 101,
            "turn": 1,
            "model_a": "base",
            "model_b": "mine",
            "order": "BA",
            "reason": "no [[A]], [[B]] or [[C]] found",
        }
    ]
    assert results["ratings"]["battles"] == 4


def answer_set(name: str, mt_bench: MTBench) -> AnswerSet:
    return AnswerSet(
        model=name,
        path=Path(name),
        sha256="0",
        turns={s.id: {1: "a", 2: "b"} for s in mt_bench.samples},
    )


def test_pairs_and_validation(mt_bench):
    sets = [answer_set(n, mt_bench) for n in ("a", "b", "c")]
    all_pairs = pairwise_plan(mt_bench, "pairwise-all", None, sets)
    assert all_pairs.pairs() == [("a", "b"), ("a", "c"), ("b", "c")]
    assert len(all_pairs.games()) == 8 * 2 * 3 * 2
    baseline = pairwise_plan(mt_bench, "pairwise", "b", sets)
    assert baseline.pairs() == [("a", "b"), ("c", "b")]  # FastChat: (model, baseline)
    with pytest.raises(UserError, match="not one of the models"):
        pairwise_plan(mt_bench, "pairwise", "zzz", sets)
    with pytest.raises(UserError, match="needs --baseline"):
        pairwise_plan(mt_bench, "pairwise", None, sets)
    with pytest.raises(UserError, match="at least 2 models"):
        pairwise_plan(mt_bench, "pairwise-all", None, sets[:1])
