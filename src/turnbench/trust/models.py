"""Typed shapes of the judge-trust keys of results.json (published in the results schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class JudgmentCounts(BaseModel):
    """Single judgments (every judge x repeat x item): how many ended scored, failed,
    pending."""

    expected: int
    scored: int
    failed: int
    pending: int


class JudgeScores(BaseModel):
    """One judge of a panel: its own score tables (repeats combined), as the benchmark
    aggregates them (the benchmark's tables are extra keys)."""

    model_config = ConfigDict(extra="allow")

    overall: float | None
    overall_ci95: list[float] | None = None
    counts: JudgmentCounts


class VariableItem(BaseModel):
    model_config = ConfigDict(extra="allow")  # the benchmark's sample naming (question_id, ...)

    turn: int
    judge: str
    criterion: str | None = None
    scores: list[float]


class RepeatSpread(BaseModel):
    """`--judge-repeats K`: how much repeated judgments of the same item move, and how much the
    overall score moves when each repeat is aggregated on its own."""

    k: int
    aggregate: Literal["mean", "median"]
    items: int  # rating items with at least two scored repeats (per judge)
    items_varying: int  # of those, items whose repeats differ
    mean_item_sd: float | None  # mean over items of the sample standard deviation
    max_item_range: float | None
    overall_by_repeat: dict[str, list[float | None]]  # judge -> overall of repeat 0..K-1
    overall_range: dict[str, float | None]  # judge -> max - min of those
    overall_sd: dict[str, float | None]
    most_variable: list[VariableItem]


class PairAgreement(BaseModel):
    model_config = ConfigDict(extra="allow")

    items: int


class JudgeAgreement(BaseModel):
    """Agreement between the judges of a panel, over the items each pair (or all) judged."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["ratings", "verdicts", "checklist"]
    judges: list[str]
    items: int
    krippendorff_alpha: float | None = None  # ratings (interval metric)
    fleiss_kappa: float | None = None  # verdicts and checklist answers
    pairs: dict[str, PairAgreement]
    checklist: dict[str, Any] | None = None


class LengthScores(BaseModel):
    """How much of one model's score goes with answer length (see turnbench.trust.length)."""

    spearman: float | None  # rank correlation of answer characters and score
    items: int
    median_chars: float | None
    method: Literal["within-model-and-item", "within-model"]
    slope_per_doubling: float | None  # score change when an answer doubles, pooled fit
    length_controlled_overall: float | None
    difference: float | None  # length-controlled overall minus overall


class LengthControl(BaseModel):
    """The pooled length fit of a run with several models."""

    method: Literal["within-model-and-item", "within-model"]
    slope_per_doubling: float | None
    items: int
    models: dict[str, float | None]  # model -> length-controlled overall


class AnswerFlag(BaseModel):
    kind: Literal["score_token", "addresses_judge", "transcript_marker"]
    label: str
    excerpt: str


class FlaggedAnswer(BaseModel):
    """An answer the injection detector flagged (listed for reading, scores unchanged)."""

    model_config = ConfigDict(extra="allow")  # the benchmark's sample naming

    turn: int
    model: str | None = None
    flags: list[AnswerFlag]


class PairwiseJudgeResults(BaseModel):
    """One judge of a pairwise panel: its own outcomes (repeats combined)."""

    model_config = ConfigDict(extra="allow")

    position_consistency: float | None
    first_position_win_share: float | None
    verdicts: dict[str, int]
    models: dict[str, Any]


class PairwiseLength(BaseModel):
    """Pairwise runs: how often the longer answer won (decisive pairs; 0.5 = length-blind)."""

    decisive_pairs: int
    longer_answer_win_share: float | None


class PairwiseRepeats(BaseModel):
    """`--judge-repeats K` in pairwise runs: how often a judge's repeats of a game disagree."""

    k: int
    games: int  # games with at least two verdicts from the same judge (per judge)
    games_varying: int  # of those, games whose repeated verdicts differ
    share_varying: float | None
