"""Paired comparison arithmetic on synthetic runs with known differences."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_results_schema import minimal_run
from turnbench.errors import UserError
from turnbench.report.compare import (
    Row,
    compare_entries,
    pair_samples,
    provenance_differences,
    rule_for,
    sample_scores,
)
from turnbench.stats.paired import fails_gate
from turnbench.store.rundir import Entry, Run
from turnbench.types import FailureRecord, JudgmentRecord

JUDGE = "openai/judge"


def judgment(
    model: str,
    sample: int,
    turn: int,
    score: float | None,
    group: str,
    *,
    group_key: str = "category",
    judge: str = JUDGE,
) -> JudgmentRecord:
    return JudgmentRecord(
        key=f"judgment|{judge}|{model}|{sample}|{turn}",
        judge=judge,
        model=model,
        sample_id=sample,
        turn=turn,
        prompt_name="single-v1",
        messages=[],
        outputs=["Rating: [[x]]"],
        parser="rating-strict",
        status="scored" if score is not None else "parse_failed",
        score=score,
        parse_error=None if score is not None else "no rating",
        meta={group_key: group},
    )


def make_entry(
    name: str,
    benchmark: str,
    records: list,
    *,
    model: str = "m",
    judge: str = JUDGE,
    parser: str = "strict",
    **provenance,
) -> Entry:
    results = run_results(benchmark, model, judge, {"parser": parser, **provenance})
    run = Run(path=Path("/runs") / name, label=name, results=results, records=records)
    return run.entries()[0]


def run_results(benchmark: str, model: str, judge: str, provenance: dict) -> dict:
    """The results.json of a finished `turnbench run` (the keys its typed shape requires,
    no score tables: the comparison reads the scores from the records)."""
    results = {k: v for k, v in minimal_run().items() if not k.startswith("by_")}
    results.update(benchmark=benchmark, model=model, judge=judge, judges=[judge])
    results["provenance"] = {**results["provenance"], "judge_sampling": None, **provenance}
    return results


def mt_bench_entry(name: str, scores: dict[int, tuple[str, list[float | None]]], **kw) -> Entry:
    records = [
        judgment(kw.get("model", "m"), sample, turn, score, group)
        for sample, (group, turns) in scores.items()
        for turn, score in enumerate(turns, start=1)
    ]
    return make_entry(name, "mt-bench", records, **kw)


def test_constant_shift_is_found_exactly():
    base = {q: ("writing" if q < 85 else "math", [4.0, 6.0]) for q in range(81, 91)}
    new = {q: (g, [s + 1.0 for s in turns]) for q, (g, turns) in base.items()}
    result = compare_entries(mt_bench_entry("a", base), mt_bench_entry("b", new))
    overall = result.overall
    assert (overall.base, overall.new, overall.delta, overall.n) == (5.0, 6.0, 1.0, 10)
    assert (overall.ci_low, overall.ci_high, overall.verdict) == (1.0, 1.0, "better")
    assert [(r.name, r.n, r.delta, r.verdict) for r in result.rows] == [
        ("writing", 4, 1.0, "insufficient_data"),  # fewer than 6 paired questions
        ("math", 6, 1.0, "better"),
    ]
    assert result.to_json()["overall"] == {
        "base": 5.0,
        "new": 6.0,
        "delta": 1.0,
        "ci_low": 1.0,
        "ci_high": 1.0,
        "verdict": "better",
    }
    assert result.to_json()["paired"] == 10


def test_two_samples_are_too_few_for_a_verdict_but_keep_their_numbers():
    base = {81: ("writing", [5.0]), 82: ("writing", [5.0])}
    new = {81: ("writing", [5.0]), 82: ("writing", [7.0])}
    result = compare_entries(mt_bench_entry("a", base), mt_bench_entry("b", new), seed=3)
    assert (result.overall.base, result.overall.new, result.overall.delta) == (5.0, 6.0, 1.0)
    assert (result.overall.ci_low, result.overall.ci_high) == (None, None)
    assert result.overall.verdict == "insufficient_data"


def test_sign_flip_p_value_is_hand_computed():
    # six questions, each +2: of the 2**6 sign patterns only "all +" and "all -" are as
    # extreme as the observed mean, so p = 2/64, below 0.05: better, with the interval [2, 2]
    base = {81 + i: ("writing", [5.0]) for i in range(6)}
    new = {81 + i: ("writing", [7.0]) for i in range(6)}
    result = compare_entries(mt_bench_entry("a", base), mt_bench_entry("b", new))
    assert result.overall.p_value == pytest.approx(2 / 64)
    assert (result.overall.ci_low, result.overall.ci_high, result.overall.verdict) == (
        2.0,
        2.0,
        "better",
    )
    # one question fewer: p = 2/32 > 0.05, and 5 is below the minimum anyway
    fewer = compare_entries(
        mt_bench_entry("a", dict(list(base.items())[:5])),
        mt_bench_entry("b", dict(list(new.items())[:5])),
    )
    assert fewer.overall.verdict == "insufficient_data"


def test_noisy_known_difference_interval_brackets_it_and_is_seeded():
    deltas = [-0.5, 1.5, 0.0, 1.0, 0.5, 2.0, -1.0, 1.5, 0.5, 1.0] * 3  # mean 0.65
    base = {80 + i: ("stem", [5.0]) for i in range(len(deltas))}
    new = {80 + i: ("stem", [5.0 + d]) for i, d in enumerate(deltas)}
    one = compare_entries(mt_bench_entry("a", base), mt_bench_entry("b", new), seed=7)
    two = compare_entries(mt_bench_entry("a", base), mt_bench_entry("b", new), seed=7)
    assert one.overall.delta == pytest.approx(0.65)
    assert one.overall.ci_low < 0.65 < one.overall.ci_high
    assert one.overall.ci_low > 0  # a clear improvement at n = 30
    assert (one.overall.ci_low, one.overall.ci_high) == (two.overall.ci_low, two.overall.ci_high)
    assert one.overall.verdict == "better"
    flipped = compare_entries(mt_bench_entry("b", new), mt_bench_entry("a", base), seed=7)
    assert flipped.overall.delta == pytest.approx(-0.65) and flipped.overall.verdict == "worse"


def test_mt_bench_pairs_only_turns_scored_in_both_runs():
    base = {81: ("writing", [8.0, 2.0]), 82: ("writing", [6.0, 6.0]), 83: ("writing", [5.0])}
    new = {81: ("writing", [9.0, None]), 82: ("writing", [7.0, 3.0])}
    result = compare_entries(mt_bench_entry("a", base), mt_bench_entry("b", new))
    by_id = {p.sample_id: (p.base, p.new) for p in result.pairs}
    assert by_id == {"81": (8.0, 9.0), "82": (6.0, 5.0)}  # 81: turn 1 only (turn 2 failed)
    assert result.skipped == {"judged in one run only": 1}


def dialogue_entry(name: str, dialogues: dict[int, tuple[str, dict[int, float | None]]], **kw):
    records = [
        judgment("m", sample, turn, score, task, group_key="task")
        for sample, (task, turns) in dialogues.items()
        for turn, score in turns.items()
    ]
    return make_entry(name, "mt-bench-101", records, **kw)


def test_mt_bench_101_min_rule_and_mean_of_task_means():
    base = {
        1: ("CM", {2: 6.0, 3: 8.0}),  # min 6
        2: ("CM", {2: 4.0, 3: 4.0}),  # min 4
        3: ("CM", {2: 5.0, 3: 9.0}),  # min 5
        4: ("SI", {1: 7.0, 2: 3.0}),  # min 3
        5: ("SI", {1: 2.0, 2: None}),  # failed turn: never paired
    }
    new = {
        1: ("CM", {2: 9.0, 3: 7.0}),  # min 7 (+1)
        2: ("CM", {2: 6.0, 3: 5.0}),  # min 5 (+1)
        3: ("CM", {2: 8.0, 3: 8.0}),  # min 8 (+3)
        4: ("SI", {1: 3.0, 2: 9.0}),  # min 3 (0)
        5: ("SI", {1: 9.0, 2: 9.0}),
    }
    result = compare_entries(dialogue_entry("a", base), dialogue_entry("b", new))
    assert result.skipped == {"a failed or missing turn": 1}
    rows = {r.name: (r.n, r.base, r.new) for r in result.rows}
    assert rows == {"CM": (3, 5.0, 20 / 3), "SI": (1, 3.0, 3.0)}
    # overall = mean of the task means, not the mean over dialogues
    assert result.overall.base == pytest.approx((5.0 + 3.0) / 2)
    assert result.overall.new == pytest.approx((20 / 3 + 3.0) / 2)
    assert result.overall.delta == pytest.approx(5 / 6)
    assert {r.name: r.ci_low for r in result.rows}["SI"] is None  # one dialogue: no interval


def test_mt_bench_101_compat_parser_drops_unparseable_turns_like_the_results():
    dialogues = {5: ("SI", {1: 2.0, 2: None})}
    strict = sample_scores(dialogue_entry("a", dialogues))
    compat = sample_scores(dialogue_entry("a", dialogues, parser="compat"))
    assert strict["5"].failed and not compat["5"].failed
    assert compat["5"].parts == {1: 2.0}


def test_request_failures_mark_the_sample_failed():
    records = [
        judgment("m", 7, 2, 6.0, "CM", group_key="task"),
        FailureRecord(key="judgment|openai/judge|m|7|3", stage="judgment", error="HTTP 500"),
    ]
    scores = sample_scores(make_entry("a", "mt-bench-101", records))
    assert scores["7"].failed and scores["7"].parts == {2: 6.0}


@pytest.mark.parametrize(
    ("verdict", "high", "threshold", "fails"),
    [
        ("worse", -0.6, 0.5, True),
        ("worse", -0.5, 0.5, False),
        ("worse", -0.01, 0.0, True),
        ("no_change", -0.01, 0.0, False),  # only a `worse` verdict can fail the gate
        ("worse", 0.0, 0.0, False),
        ("insufficient_data", None, 0, False),
    ],
)
def test_ci_gate_fails_exactly_when_worse_and_upper_end_is_below_minus_delta(
    verdict, high, threshold, fails
):
    low = None if high is None else -2.0
    row = Row(
        name="overall",
        n=10,
        base=5.0,
        new=4.0,
        delta=-1.0,
        ci_low=low,
        ci_high=high,
        p_value=None if high is None else 0.01,
        verdict=verdict,
    )
    assert fails_gate(row, threshold) is fails


def test_no_common_sample_is_a_user_error():
    with pytest.raises(UserError, match="no judged sample in common"):
        compare_entries(
            mt_bench_entry("a", {81: ("writing", [5.0])}),
            mt_bench_entry("b", {82: ("writing", [5.0])}),
        )


def test_different_benchmarks_are_refused():
    with pytest.raises(UserError, match="different benchmarks"):
        compare_entries(
            mt_bench_entry("a", {81: ("writing", [5.0])}),
            dialogue_entry("b", {81: ("CM", {2: 5.0})}),
        )


def test_provenance_differences_name_what_changed():
    sampling = {"temperature": 0.0, "max_tokens": 2048}
    base = mt_bench_entry("a", {81: ("writing", [5.0])}, judge_sampling=sampling)
    same = mt_bench_entry("b", {81: ("writing", [5.0])}, judge_sampling=sampling)
    assert provenance_differences(base.run, same.run) == []
    other = mt_bench_entry(
        "c",
        {81: ("writing", [5.0])},
        judge="openai/other-judge",
        parser="compat",
        judge_sampling={"temperature": 0.7, "max_tokens": 2048},
    )
    lines = provenance_differences(base.run, other.run)
    assert any(line.startswith("judge:") and "other-judge" in line for line in lines)
    assert any(line.startswith("parser:") for line in lines)
    assert any(line.startswith("judge_sampling.temperature:") for line in lines)


def test_pair_samples_reports_samples_without_common_turns():
    base_entry = mt_bench_entry("a", {81: ("writing", [5.0, None])})
    rule = rule_for(base_entry.run)
    base = sample_scores(base_entry)
    new = sample_scores(mt_bench_entry("b", {81: ("writing", [None, 6.0])}))
    pairs, skipped = pair_samples(base, new, rule)
    assert pairs == [] and skipped == {"no turn scored in both runs": 1}
