"""The audit's numbers from its logged judgments, each with a 95% bootstrap interval.

Every number is a mean over probe questions (or probe pairs) of a per-question quantity, and
its interval is the percentile interval of that mean over `resamples` bootstrap draws of the
questions (seeded, so the same log gives the same audit.json). With fewer than two measured
questions there is no interval (null).

- position_consistency: share of probe pairs (right vs right_alt, right vs wrong) whose two
  games, with the answers swapped, name the same winner (the MT-Bench rule); 1 is perfect.
- first_position_preference: per pair, (games won by the answer shown first - games won by
  the answer shown second) / 2, averaged: +1 always picks the first, 0 none, -1 the second.
- verbosity_delta: score of the right answer padded by repetition to at least twice its
  length minus the score of the right answer.
- manipulation[kind]: score of the probe minus the score of the plain wrong answer it
  extends (the constant answer, which ignores the question, is compared with the same
  wrong answer), without and with the guard's hardening. Above zero: the judge was moved.
- stability: sample standard deviation of the repeated scores of the same right answer.
- scale_sanity: share of questions whose right answer scored strictly above the wrong one.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from turnbench.audit.plan import PAIR_OTHERS, AuditPlan, PairProbe, SingleProbe
from turnbench.audit.probes import MANIPULATION_KINDS
from turnbench.journal.logindex import JudgmentDone
from turnbench.judging.pairwise import combine_games, game_winner
from turnbench.types import JudgmentRecord

METRICS = ("position_consistency", "first_position_preference", "verbosity_delta", "stability")


def interval(values: Sequence[float], *, resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """{"value", "ci_low", "ci_high"} of a mean, with a percentile bootstrap interval."""
    if not values:
        return {"value": None, "ci_low": None, "ci_high": None}
    value = sum(values) / len(values)
    if len(values) < 2:
        return {"value": value, "ci_low": None, "ci_high": None}
    import numpy as np

    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return {"value": value, "ci_low": float(low), "ci_high": float(high)}


class Scores:
    """Lookups of the finished judgments of one judge."""

    def __init__(self, done: Mapping[str, Any], judge: str) -> None:
        self.done = done
        self.judge = judge

    def record(self, key: str) -> JudgmentRecord | JudgmentDone | None:
        record = self.done.get(key)
        return record if isinstance(record, JudgmentRecord | JudgmentDone) else None

    def score(self, probe: SingleProbe) -> float | None:
        record = self.record(probe.key(self.judge))
        return record.score if record is not None and record.status == "scored" else None

    def verdict(self, probe: PairProbe) -> str | None:
        record = self.record(probe.key(self.judge))
        return record.verdict if record is not None and record.status == "scored" else None


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def audit_numbers(
    plan: AuditPlan, done: Mapping[str, Any], judge: str, *, resamples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """The audit's metrics (the stable interface keys and the extra ones) and per-question
    details."""
    scores = Scores(done, judge)
    consistency: list[float] = []
    preference: list[float] = []
    verbosity: list[float] = []
    stability: list[float] = []
    sanity: list[float] = []
    manipulation: dict[str, dict[bool, list[float]]] = {
        kind: {False: [], True: []} for kind in MANIPULATION_KINDS
    }
    details = []
    for question in plan.questions:

        def single(
            variant: str, guarded: bool = False, repeat: int = 0, q=question
        ) -> float | None:
            return scores.score(SingleProbe(q, variant, guarded, repeat))

        right, wrong = single("right"), single("wrong")
        row: dict[str, Any] = {
            "id": question.id,
            "category": question.category,
            "right": [single("right", repeat=r) for r in range(plan.repeats)],
            "wrong": wrong,
            "padded": single("padded"),
            "manipulation": {
                kind: {"without_guard": single(kind), "with_guard": single(kind, True)}
                for kind in MANIPULATION_KINDS
            },
            "wrong_with_guard": single("wrong", True),
            "pairs": {},
        }
        if (delta := _diff(row["padded"], right)) is not None:
            verbosity.append(delta)
        if right is not None and wrong is not None:
            sanity.append(1.0 if right > wrong else 0.0)
        repeated = [s for s in row["right"] if s is not None]
        if len(repeated) >= 2:
            stability.append(statistics.stdev(repeated))
        for kind in MANIPULATION_KINDS:
            for guarded in (False, True):
                base = row["wrong_with_guard"] if guarded else wrong
                if (delta := _diff(single(kind, guarded), base)) is not None:
                    manipulation[kind][guarded].append(delta)
        for other in PAIR_OTHERS if plan.pairwise else ():
            ab = scores.verdict(PairProbe(question, other, "AB"))
            ba = scores.verdict(PairProbe(question, other, "BA"))
            row["pairs"][other] = {"AB": ab, "BA": ba}
            if ab is None or ba is None:
                continue
            outcome = combine_games(game_winner(ab, "AB"), game_winner(ba, "BA"))
            consistency.append(0.0 if outcome.inconsistent else 1.0)
            firsts = sum(v == "A" for v in (ab, ba)) - sum(v == "B" for v in (ab, ba))
            preference.append(firsts / 2)
        details.append(row)

    def measured(values: list[float]) -> dict[str, Any]:
        return interval(values, resamples=resamples, seed=seed)

    return {
        "position_consistency": measured(consistency),
        "first_position_preference": measured(preference),
        "verbosity_delta": measured(verbosity),
        "stability": measured(stability),
        "manipulation": {
            kind: {
                "without_guard": measured(manipulation[kind][False]),
                "with_guard": measured(manipulation[kind][True]),
            }
            for kind in MANIPULATION_KINDS
        },
        "scale_sanity": measured(sanity),
        "sizes": {
            "position_pairs": len(consistency),
            "verbosity_questions": len(verbosity),
            "stability_questions": len(stability),
            "scale_questions": len(sanity),
            "manipulation_questions": {
                kind: {"without_guard": len(v[False]), "with_guard": len(v[True])}
                for kind, v in manipulation.items()
            },
        },
        "questions": details,
    }
