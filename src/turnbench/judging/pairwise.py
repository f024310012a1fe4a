"""Pairwise judging rules: the two games of a pair, and how they combine.

Every comparison of two answers is judged twice, once with each answer in position A
(FastChat's "game 1" and "game 2"). A verdict names a *position* ("A", "B" or "tie"); this
module maps it back to the two models and combines the two games by the published rule
(MT-Bench's): the pair has a winner only when both games name the same model; any
disagreement, a (tie, win) included, is a tie counted as "inconsistent". Everything here is
pure; the engine plans the games and the log holds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from turnbench.types import JudgmentRecord, Order

Winner = Literal["model_1", "model_2", "tie"]
ORDERS: tuple[Order, Order] = ("AB", "BA")


def shown_as(model_1: str, model_2: str, order: Order) -> tuple[str, str]:
    """(assistant A, assistant B) of a game."""
    return (model_1, model_2) if order == "AB" else (model_2, model_1)


def game_winner(verdict: str, order: Order) -> Winner:
    """Map a positional verdict ("A", "B", "tie") back to the pair's models."""
    if verdict == "tie":
        return "tie"
    if verdict not in ("A", "B"):
        raise ValueError(f"unknown verdict {verdict!r}")
    first_is_a = (verdict == "A") == (order == "AB")
    return "model_1" if first_is_a else "model_2"


@dataclass(frozen=True)
class PairOutcome:
    winner: Winner
    inconsistent: bool

    @property
    def points_of_model_1(self) -> float:
        """What model_1 scores in a rating battle: a win 1, a tie (inconsistent too) 0.5."""
        return {"model_1": 1.0, "model_2": 0.0, "tie": 0.5}[self.winner]


def combine_games(first: Winner, second: Winner) -> PairOutcome:
    """The published rule: agreement decides; any disagreement is an inconsistent tie."""
    if first == second:
        return PairOutcome(winner=first, inconsistent=False)
    return PairOutcome(winner="tie", inconsistent=True)


@dataclass
class Tally:
    """Pair outcomes from one model's point of view (ties include the inconsistent pairs)."""

    win: int = 0
    loss: int = 0
    tie: int = 0
    inconsistent: int = 0

    def add(self, outcome: PairOutcome, side: Literal["model_1", "model_2"]) -> None:
        if outcome.winner == "tie":
            self.tie += 1
        elif outcome.winner == side:
            self.win += 1
        else:
            self.loss += 1
        if outcome.inconsistent:
            self.inconsistent += 1

    @property
    def compared(self) -> int:
        return self.win + self.loss + self.tie

    def as_dict(self) -> dict[str, int | float | None]:
        total = self.compared
        return {
            "win": self.win,
            "loss": self.loss,
            "tie": self.tie,
            "inconsistent": self.inconsistent,
            "compared": total,
            "win_rate": self.win / total if total else None,
            "loss_rate": self.loss / total if total else None,
            "win_rate_adjusted": (self.win + 0.5 * self.tie) / total if total else None,
        }


@dataclass(frozen=True)
class LoggedPair:
    """A comparison whose two games are both in a log with a verdict."""

    sample_id: int | str
    turn: int
    model_1: str
    model_2: str
    outcome: PairOutcome
    verdicts: tuple[str, str]  # positional verdicts of the AB and BA games
    category: str | None = None


def logged_pairs(records: Iterable[object], judge: str) -> list[LoggedPair]:
    """Every pair of a log whose two games ended with a verdict (latest record per game).

    Reads only the records (they name the pair and the order), so a finished run directory
    can be re-tallied or compared with human votes without the benchmark data.
    """
    games: dict[tuple[int | str, int, str, str], dict[str, JudgmentRecord]] = {}
    for record in records:
        if not isinstance(record, JudgmentRecord) or record.judge != judge or record.repeat:
            continue
        pair, order = record.pair_models(), record.game_order()
        if pair is None or order is None:
            continue
        games.setdefault((record.sample_id, record.turn, pair[0], pair[1]), {})[order] = record
    found = []
    for (sample_id, turn, model_1, model_2), by_order in games.items():
        ab, ba = by_order.get("AB"), by_order.get("BA")
        if ab is None or ba is None or ab.verdict is None or ba.verdict is None:
            continue
        if ab.status != "scored" or ba.status != "scored":
            continue
        outcome = combine_games(game_winner(ab.verdict, "AB"), game_winner(ba.verdict, "BA"))
        found.append(
            LoggedPair(
                sample_id,
                turn,
                model_1,
                model_2,
                outcome,
                (ab.verdict, ba.verdict),
                ab.group or ab.meta.get("category"),
            )
        )
    return found
