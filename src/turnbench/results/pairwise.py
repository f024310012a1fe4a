"""Pairwise results: the games of every pair of models, combined per comparison and per
judge, win/loss/tie, position consistency and ratings."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from turnbench.engine.plan import Game
from turnbench.engine.work import Work
from turnbench.journal.config import RunConfig
from turnbench.journal.logindex import (
    JudgmentDone,
)
from turnbench.judging.pairwise import PairOutcome, Tally, combine_games, game_winner
from turnbench.record_keys import game_key
from turnbench.results.logview import LogView
from turnbench.trust import blocks as trust
from turnbench.trust.games import combine_game, judge_verdict


def game_cells(
    work: Work, config: RunConfig, view: LogView, game: Game
) -> dict[str, list[JudgmentDone | None]]:
    """judge -> the game's records per repeat (None: not finished)."""
    return {
        judge.id: [
            view.judgment(
                game_key(
                    judge.id,
                    game.model_1,
                    game.model_2,
                    game.sample.id,
                    game.turn,
                    game.order,
                    repeat=repeat,
                )
            )
            for repeat in range(config.judge_repeats)
        ]
        for judge in config.judges
    }


def pairwise_results(work: Work, config: RunConfig, view: LogView) -> dict[str, Any]:
    played: dict[tuple[Any, int, str, str], dict[str, tuple[Game, JudgmentDone | None]]] = {}
    reasks = pending_judgments = 0
    for game in work.games():
        combined, game_reasks, game_pending = combine_game(game_cells(work, config, view, game))
        reasks += game_reasks
        pending_judgments += game_pending
        pair = (game.sample.id, game.turn, game.model_1, game.model_2)
        played.setdefault(pair, {})[game.order] = (game, combined)
    compared: list[tuple[Game, PairOutcome, tuple[str, str]]] = []
    failures: list[dict[str, Any]] = []
    pending_pairs = excluded_pairs = judged = failed = 0
    describe = work.benchmark.describe
    for games in played.values():
        done = [(g, r) for g, r in games.values() if r is not None]
        judged += sum(r.status == "scored" for _, r in done)
        for game, record in done:
            if record.status != "scored":
                failed += 1
                model_a, model_b = (record.meta.get("model_a"), record.meta.get("model_b"))
                failures.append(
                    {
                        **describe(game.sample),
                        "turn": game.turn,
                        "model_a": model_a,
                        "model_b": model_b,
                        "order": game.order,
                        "reason": record.parse_error,
                    }
                )
        if len(done) < len(games):
            pending_pairs += 1
        elif any(r.status != "scored" or r.verdict is None for _, r in done):
            excluded_pairs += 1
        else:
            (game, ab), (_, ba) = games["AB"], games["BA"]
            assert ab is not None and ba is not None and ab.verdict and ba.verdict
            outcome = combine_games(game_winner(ab.verdict, "AB"), game_winner(ba.verdict, "BA"))
            compared.append((game, outcome, (ab.verdict, ba.verdict)))
    expected = 2 * len(played)
    pending = expected - judged - failed
    inconsistent = sum(outcome.inconsistent for _, outcome, _ in compared)
    verdicts = {"A": 0, "B": 0, "tie": 0}
    for _, _, pair_verdicts in compared:
        for verdict in pair_verdicts:
            verdicts[verdict] += 1
    decisive = verdicts["A"] + verdicts["B"]
    models = set(work.models)
    answers = {(model, *turn) for model in models for turn in view.answered(model)}
    from turnbench.stats.ratings import Battle, bradley_terry

    return {
        "benchmark": work.benchmark.name,
        "judge": config.judge,
        "mode": work.judging,
        "baseline": work.baseline,
        "complete": pending == 0 and pending_judgments == 0,
        "models": _pairwise_rows(work, compared),
        "position_consistency": 1 - inconsistent / len(compared) if compared else None,
        "first_position_win_share": verdicts["A"] / decisive if decisive else None,
        "verdicts": verdicts,
        "ratings": bradley_terry(
            [
                Battle(game.sample.id, game.model_1, game.model_2, outcome.points_of_model_1)
                for game, outcome, _ in compared
            ],
            models=work.models,
        ),
        "counts": {
            "expected": expected,
            "judged": judged,
            "failed": failed,
            "pending": pending,
            "reasks": reasks,
            "answers": len(answers),
            "pairs": {
                "expected": len(played),
                "compared": len(compared),
                "inconsistent": inconsistent,
                "excluded": excluded_pairs,
                "pending": pending_pairs,
            },
        },
        "parse_failures": failures,
        **_pairwise_trust(work, config, view, compared),
    }


def _pairwise_trust(
    work: Work,
    config: RunConfig,
    view: LogView,
    compared: list[tuple[Game, PairOutcome, tuple[str, str]]],
) -> dict[str, Any]:
    """Panel, length and injection keys of pairwise results."""
    extra: dict[str, Any] = {}
    if len(config.judges) > 1:
        extra["by_judge"] = {}
        for judge in config.judges:
            alone = pairwise_results(work, config.model_copy(update={"judges": [judge]}), view)
            extra["by_judge"][judge.id] = {
                k: alone[k]
                for k in ("position_consistency", "first_position_win_share", "verdicts", "models")
            }
        table: dict[str, list[str | None]] = {judge.id: [] for judge in config.judges}
        for game in work.games():
            for judge_id, records in game_cells(work, config, view, game).items():
                table[judge_id].append(judge_verdict(records))
        extra["judge_agreement"] = trust.label_agreement(table, "verdicts")
    if config.judge_repeats > 1:
        repeated = varying = 0
        for game in work.games():
            for records in game_cells(work, config, view, game).values():
                verdicts = [r.verdict for r in records if r is not None and r.verdict]
                if len(verdicts) >= 2:
                    repeated += 1
                    varying += len(set(verdicts)) > 1
        extra["repeats"] = {
            "k": config.judge_repeats,
            "games": repeated,
            "games_varying": varying,
            "share_varying": varying / repeated if repeated else None,
        }
    decisive = longer_won = 0
    for game, outcome, _ in compared:
        if outcome.winner == "tie":
            continue
        lengths = [
            view.answer_length_lookup(m)(game.sample.id, game.turn)
            for m in (game.model_1, game.model_2)
        ]
        if lengths[0] is None or lengths[1] is None or lengths[0] == lengths[1]:
            continue
        decisive += 1
        longer = "model_1" if lengths[0] > lengths[1] else "model_2"
        longer_won += outcome.winner == longer
    extra["length"] = {
        "decisive_pairs": decisive,
        "longer_answer_win_share": longer_won / decisive if decisive else None,
    }
    planned = [(s, t) for s in work.benchmark.samples for t in s.judged_turns()]
    extra["flagged_answers"] = [
        row
        for model in work.models
        for row in trust.flagged_answers(work.benchmark, planned, view.answer_lookup(model), model)
    ]
    return extra


def _pairwise_rows(
    work: Work, compared: list[tuple[Game, PairOutcome, tuple[str, str]]]
) -> dict[str, Any]:
    benchmark = work.benchmark
    groups = list(dict.fromkeys(s.group for s in benchmark.samples if s.group is not None))
    turns = sorted({str(t) for s in benchmark.samples for t in s.judged_turns()}, key=int)
    overall: dict[str, Tally] = defaultdict(Tally)
    by_turn: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    by_group: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    versus: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    for game, outcome, _ in compared:
        sides: tuple[tuple[str, Literal["model_1", "model_2"], str], ...] = (
            (game.model_1, "model_1", game.model_2),
            (game.model_2, "model_2", game.model_1),
        )
        for model, side, opponent in sides:
            overall[model].add(outcome, side)
            by_turn[model][str(game.turn)].add(outcome, side)
            if game.sample.group is not None:
                by_group[model][game.sample.group].add(outcome, side)
            versus[model][opponent].add(outcome, side)
    rows = {}
    for model in work.models:
        if work.judging == "pairwise" and model == work.baseline:
            continue
        opponents = (
            [work.baseline or ""]
            if work.judging == "pairwise"
            else [m for m in work.models if m != model]
        )
        rows[model] = {
            "model": model,
            **overall[model].as_dict(),
            "by_turn": {t: by_turn[model][t].as_dict() for t in turns},
            f"by_{benchmark.group_kind}": {g: by_group[model][g].as_dict() for g in groups},
            "versus": {o: versus[model][o].as_dict() for o in opponents},
        }
    return rows
