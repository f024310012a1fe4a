"""Agreement between judges on pairwise votes, with the MT-Bench paper's definitions.

Votes come from files in the format of the Hugging Face dataset
`lmsys/mt_bench_human_judgments` (fields `question_id, model_a, model_b, winner, judge,
turn`; others ignored) or from turnbench pairwise runs. The rules are FastChat's
`compute_agreement.py` (paper section 4):

- A vote is keyed by (question, unordered model pair, turn); the pair is put in sorted order
  and the winner flipped when that reorders it. Any winner containing "tie" is a tie.
- Judge names: a list `["gpt-4", "pair..."]` is `gpt4-pair`, names starting with `expert`
  are `human`, names starting with `author` are `author` (the paper's authors are not
  counted as humans); other names are kept (a list is joined with ":").
- Two different judges: every vote of one against every vote of the other on the same key
  (FastChat's judge-vs-human: the judge's single vote against each human vote). The same
  judge with itself: every pair i<j of its votes on a key, two votes by the same person
  included (human-vs-human).
- Setup S1 keeps ties; S2 drops every vote pair in which either side is a tie.

Cohen's kappa is reported next to each agreement rate, over the same vote pairs, with the
categories "first model of the sorted pair wins", "second wins" and "tie". For a judge with
itself every vote pair is counted in both orders, so the two sides share one marginal
distribution and the value does not depend on the order of the votes in the file.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from turnbench.errors import UserError
from turnbench.safetext import name_problem
from turnbench.textio import (
    ErrorCollector,
    NestingError,
    json_problem,
    loads_json,
    read_json,
    read_text,
    validate_row,
)

Outcome = Literal["model_1", "model_2", "tie"]  # relative to the sorted pair
SETUPS = ("S1", "S2")


class RawVote(BaseModel):
    """One row of a vote file; extra fields (conversation_a, tstamp, ...) are ignored."""

    model_config = ConfigDict(extra="ignore")

    question_id: int | str
    model_a: str
    model_b: str
    winner: str
    judge: str | list[str]
    turn: int


@dataclass(frozen=True)
class Vote:
    judge: str
    question_id: str
    model_1: str  # model_1 < model_2
    model_2: str
    turn: int
    winner: Outcome

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.question_id, self.model_1, self.model_2)


def judge_name(raw: str | list[str]) -> str:
    """FastChat's judge-name mapping."""
    if isinstance(raw, list):
        if len(raw) >= 2 and raw[0] == "gpt-4" and raw[1].startswith("pair"):
            return "gpt4-pair"
        return ":".join(raw)
    if raw.startswith("expert"):
        return "human"
    if raw.startswith("author"):
        return "author"
    return raw


def make_vote(
    judge: str, question_id: int | str, model_a: str, model_b: str, turn: int, winner: str
) -> Vote:
    """Normalise one vote: sorted pair, winner flipped when the pair was reordered."""
    if "tie" in winner:
        outcome: Outcome = "tie"
    elif winner in ("model_a", "model_b"):
        first_won = winner == "model_a"
        if model_a > model_b:
            first_won = not first_won
        outcome = "model_1" if first_won else "model_2"
    else:
        raise ValueError(f"winner {winner!r} is not model_a, model_b or a tie")
    model_1, model_2 = sorted((model_a, model_b))
    return Vote(judge, str(question_id), model_1, model_2, turn, outcome)


# -- reading vote files ----------------------------------------------------------------------
def _json_array_items(path: Path, text: str) -> list[tuple[int, Any]]:
    """Elements of a top-level JSON array with the line each one starts on."""
    value = read_json(path)  # reports malformed JSON with its line
    if not isinstance(value, list):
        raise UserError(f"{path}: expected a JSON list of votes or JSON lines")
    decoder = json.JSONDecoder()
    items: list[tuple[int, Any]] = []
    index = text.index("[") + 1
    while True:
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
        if index >= len(text) or text[index] == "]":
            return items
        element, end = decoder.raw_decode(text, index)
        items.append((text.count("\n", 0, index) + 1, element))
        index = end


def _rows(path: Path) -> list[tuple[int, Any]]:
    text = read_text(path)  # (a regular file under the input size limit, UTF-8)
    if not text.strip():
        raise UserError(f"{path}: the file is empty")
    if text.lstrip().startswith("["):
        return _json_array_items(path, text)
    collector = ErrorCollector(path)
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append((number, loads_json(line)))
            except (json.JSONDecodeError, NestingError) as error:
                collector.add(number, json_problem(error))
    collector.raise_if_any()
    return rows


def load_votes(path: Path) -> list[Vote]:
    """Votes of one file (JSON list or JSON lines); every bad row reported with its line."""
    collector = ErrorCollector(path)
    votes: list[Vote] = []
    for line, value in _rows(path):
        raw = validate_row(collector, line, value, RawVote)
        if raw is None:
            continue
        if raw.model_a == raw.model_b:
            collector.add(line, f"model_a and model_b are both {raw.model_a!r}")
            continue
        if raw.turn < 1:
            collector.add(line, f"turn must be 1 or more, got {raw.turn}")
            continue
        if isinstance(raw.judge, list) and not raw.judge:
            collector.add(line, "judge is an empty list")
            continue
        named = {"model_a": raw.model_a, "model_b": raw.model_b, "judge": judge_name(raw.judge)}
        bad = [(f, n, p) for f, n in named.items() if (p := name_problem(n)) is not None]
        if bad:
            collector.add(line, "; ".join(f"{f} {n!r} {p}" for f, n, p in bad))
            continue
        try:
            votes.append(
                make_vote(
                    judge_name(raw.judge),
                    raw.question_id,
                    raw.model_a,
                    raw.model_b,
                    raw.turn,
                    raw.winner,
                )
            )
        except ValueError as error:
            collector.add(line, str(error))
    collector.raise_if_any()
    return votes


# -- agreement -------------------------------------------------------------------------------
#: characters that keep two judge names from being joined readably and still split back
_UNJOINABLE = frozenset('|["')


def pair_key(first: str, second: str, separator: str = "|") -> str:
    """The key of a judge pair in a report: `first|second` (as FastChat writes it), or, when
    a name holds `|` (or `[` or `"`, which a JSON key starts with and holds), the pair as a
    JSON list `["a|b", "c"]`. Either way the key names one pair only: joined keys of names
    such as `a|b` + `c` and `a` + `b|c` would be the same string, and one pair's numbers
    would overwrite the other's."""
    if _UNJOINABLE.isdisjoint(first) and _UNJOINABLE.isdisjoint(second):
        return f"{first}{separator}{second}"
    return json.dumps([first, second], ensure_ascii=False)


def _judge_order(name: str) -> tuple[int, int, str]:
    """Machine judges first, then authors, then humans: "gpt4-pair|human"."""
    return (name == "human", name == "author", name)


def cohen_kappa(pairs: list[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters over paired labels; None when it is undefined."""
    if not pairs:
        return None
    total = len(pairs)
    observed = sum(a == b for a, b in pairs) / total
    labels = {label for pair in pairs for label in pair}
    expected = sum(
        (sum(a == label for a, _ in pairs) / total) * (sum(b == label for _, b in pairs) / total)
        for label in labels
    )
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def _stats(pairs: list[tuple[str, str]], symmetric: bool) -> dict[str, Any]:
    agree = sum(a == b for a, b in pairs)
    total = len(pairs)
    kappa_pairs = pairs + [(b, a) for a, b in pairs] if symmetric else pairs
    return {
        "agree": agree,
        "total": total,
        "rate": agree / total if total else None,
        "kappa": cohen_kappa(kappa_pairs),
    }


def agreement(votes: list[Vote]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """{"judge1|judge2": {turn: {"S1": stats, "S2": stats}}} for every judge pair present
    (keys made by `pair_key`, unambiguous whatever the judges' names)."""
    table: dict[int, dict[tuple[str, str, str], dict[str, list[str]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for vote in votes:
        table[vote.turn][vote.key][vote.judge].append(vote.winner)
    judges = sorted({vote.judge for vote in votes}, key=_judge_order)
    repeated = {
        judge
        for by_key in table.values()
        for by_judge in by_key.values()
        for judge, cast in by_judge.items()
        if len(cast) >= 2
    }
    pairs = [
        (first, second)
        for index, first in enumerate(judges)
        for second in judges[index:]
        if first != second or first in repeated
    ]
    turns = sorted(table)
    report: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for first, second in pairs:
        by_turn: dict[str, dict[str, dict[str, Any]]] = {}
        for turn in turns:
            compared: list[tuple[str, str]] = []
            for by_judge in table[turn].values():
                if first == second:
                    cast = by_judge.get(first, [])
                    compared += [
                        (cast[i], cast[j])
                        for i in range(len(cast))
                        for j in range(i + 1, len(cast))
                    ]
                else:
                    compared += [
                        (a, b) for a in by_judge.get(first, []) for b in by_judge.get(second, [])
                    ]
            no_ties = [(a, b) for a, b in compared if a != "tie" and b != "tie"]
            by_turn[str(turn)] = {
                "S1": _stats(compared, first == second),
                "S2": _stats(no_ties, first == second),
            }
        report[pair_key(first, second)] = by_turn
    return report


# -- single grading: scores of one answer ------------------------------------------------------
@dataclass(frozen=True)
class Score:
    """One judge's (or the pooled humans') 1-10 score of one model's answer to one turn."""

    judge: str
    question_id: str
    model: str
    turn: int
    score: float

    @property
    def key(self) -> tuple[str, str]:
        return (self.question_id, self.model)


def _score_stats(pairs: list[tuple[float, float]], symmetric: bool) -> dict[str, Any]:
    """Exact agreement of the rounded scores, agreement within one point, the mean absolute
    difference, and Cohen's kappa over the rounded scores as categories (unweighted)."""
    total = len(pairs)
    rounded = [(str(round(a)), str(round(b))) for a, b in pairs]
    agree = sum(a == b for a, b in rounded)
    kappa_pairs = rounded + [(b, a) for a, b in rounded] if symmetric else rounded
    return {
        "agree": agree,
        "within_1": sum(abs(a - b) <= 1 for a, b in pairs),
        "total": total,
        "rate": agree / total if total else None,
        "mean_abs_diff": sum(abs(a - b) for a, b in pairs) / total if total else None,
        "kappa": cohen_kappa(kappa_pairs),
    }


def score_agreement(scores: list[Score]) -> dict[str, dict[str, dict[str, Any]]]:
    """{"judge1|judge2": {turn: stats}} over the scores of the same answer: two judges pair
    every score of one with every score of the other; a judge with itself pairs its scores
    i<j (different annotators pooled as `human`), as `agreement` does for votes."""
    table: dict[int, dict[tuple[str, str], dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for score in scores:
        table[score.turn][score.key][score.judge].append(score.score)
    judges = sorted({score.judge for score in scores}, key=_judge_order)
    report: dict[str, dict[str, dict[str, Any]]] = {}
    for index, first in enumerate(judges):
        for second in judges[index:]:
            by_turn: dict[str, dict[str, Any]] = {}
            for turn in sorted(table):
                compared: list[tuple[float, float]] = []
                for by_judge in table[turn].values():
                    one = by_judge.get(first, [])
                    if first == second:
                        compared += [
                            (one[i], one[j])
                            for i in range(len(one))
                            for j in range(i + 1, len(one))
                        ]
                    else:
                        compared += [(a, b) for a in one for b in by_judge.get(second, [])]
                if compared:
                    by_turn[str(turn)] = _score_stats(compared, first == second)
            if by_turn:
                report[pair_key(first, second)] = by_turn
    return report
