"""Pairwise panels and repeats: one verdict per game from every judge's every repeat.

A game (one comparison in one order) may have been judged by several judges, several times
each. Its repeats combine by majority per judge, then the judges' verdicts by majority
(`turnbench.trust.combine.combine_verdicts`: a tie between the most common verdicts is a
tie); the two games of a pair then combine by the published two-game rule as before. A
judge whose every repeat failed has no vote; a game with no vote at all is failed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from turnbench.journal.logindex import JudgmentDone
from turnbench.trust.combine import combine_verdicts
from turnbench.types import JudgmentRecord

Game = JudgmentRecord | JudgmentDone


def judge_verdict(records: Sequence[Game | None]) -> str | None:
    """One judge's verdict of a game from its repeats (None: none of them has one)."""
    return combine_verdicts(
        [r.verdict for r in records if r is not None and r.status == "scored" and r.verdict]
    )


def combine_game(
    cells: Mapping[str, Sequence[Game | None]],
) -> tuple[Game | None, int, int]:
    """(the game as one record, its re-asks, its judgments still pending).

    The record is None while nothing finished; otherwise a copy of the first scored (else
    the first finished) record carrying the combined verdict, "parse_failed" when no judge
    has a verdict.
    """
    finished = [r for records in cells.values() for r in records if r is not None]
    pending = sum(r is None for records in cells.values() for r in records)
    reasks = sum(r.reasks for r in finished)
    if not finished:
        return None, reasks, pending
    if len(finished) == 1 and pending == 0:
        return finished[0], reasks, pending
    votes = [v for v in (judge_verdict(records) for records in cells.values()) if v is not None]
    verdict = combine_verdicts(votes)
    scored = [r for r in finished if r.status == "scored"]
    base = scored[0] if scored else finished[0]
    if verdict is None:
        reason = base.parse_error or "no judge gave a verdict"
        update = {"status": "parse_failed", "verdict": None, "parse_error": reason}
    else:
        update = {"status": "scored", "verdict": verdict, "parse_error": None}
    if isinstance(base, JudgmentRecord):
        return base.model_copy(update=update), reasks, pending
    return dataclasses.replace(base, **update), reasks, pending
