"""Pairwise judging rules of MT-Bench: prompts, the two games of a pair, and how they combine.

Every comparison of two answers is judged twice, once with each answer in position A
(FastChat's "game 1" and "game 2"). A verdict names a *position* ("A", "B" or "tie"); this
module maps it back to the two models and combines the two games by the published rule: the
pair has a winner only when both games name the same model; any disagreement, a (tie, win)
included, is a tie counted as "inconsistent". Everything here is pure; the log and the judge
are handled by the benchmark module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from turnbench.benchmarks.mt_bench_data import JudgePrompt, Question
from turnbench.judging.fastchat_prompts import judge_request, reference_fields
from turnbench.types import JudgmentRecord, Message

Order = Literal["AB", "BA"]  # "AB": model_1 is shown as assistant A; "BA": swapped
Winner = Literal["model_1", "model_2", "tie"]
ORDERS: tuple[Order, Order] = ("AB", "BA")
PAIR_PROMPT_NAMES = (
    "pair-v2",
    "pair-v2-multi-turn",
    "pair-math-v1",
    "pair-math-v1-multi-turn",
)
PARSER_NAMES = {"strict": "verdict-strict", "compat": "verdict-fastchat"}


def pair_prompt_name(with_reference: bool, turn: int) -> str:
    """`pair-v2` / `pair-math-v1` on turn 1, their `-multi-turn` forms on turn 2."""
    base = "pair-math-v1" if with_reference else "pair-v2"
    return base if turn == 1 else f"{base}-multi-turn"


def render_pairwise_judgment(
    prompt: JudgePrompt,
    question: Question,
    answers_a: list[str],
    answers_b: list[str],
    references: list[str] | None,
    turn: int,
) -> list[Message]:
    """FastChat's request: [system, user], the template filled by str.format on raw answers."""
    if turn == 1:
        fields = {"question": question.turns[0], "answer_a": answers_a[0], "answer_b": answers_b[0]}
    else:
        fields = {
            "question_1": question.turns[0],
            "question_2": question.turns[1],
            "answer_a_1": answers_a[0],
            "answer_b_1": answers_b[0],
            "answer_a_2": answers_a[1],
            "answer_b_2": answers_b[1],
        }
    return judge_request(prompt, fields | reference_fields(references, turn))


def game_key(
    judge: str, model_1: str, model_2: str, question_id: int | str, turn: int, order: Order
) -> str:
    """Log key of one game; `order` says which model the judge saw as assistant A."""
    return f"pair|{judge}|{model_1}|{model_2}|{question_id}|{turn}|{order}"


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
    """Every pair of a log whose two games ended with a verdict (latest record per key).

    Reads only the records (their `meta` names the pair and the order), so a finished run
    directory can be re-tallied or compared with human votes without the benchmark data.
    """
    latest: dict[str, JudgmentRecord] = {}
    for record in records:
        if (
            isinstance(record, JudgmentRecord)
            and record.judge == judge
            and record.key.startswith("pair|")
        ):
            latest[record.key] = record
    games: dict[tuple[int | str, int, str, str], dict[str, JudgmentRecord]] = {}
    for record in latest.values():
        pair, order = record.meta.get("pair"), record.meta.get("order")
        if not (isinstance(pair, list) and len(pair) == 2 and order in ORDERS):
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
                ab.meta.get("category"),
            )
        )
    return found
