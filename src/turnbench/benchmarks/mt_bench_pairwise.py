"""MT-Bench pairwise judging: plan both games of every comparison, then tally them from the log.

Modes follow FastChat: `pairwise` compares every model with one baseline (model_1 = the
model, model_2 = the baseline; the baseline gets no row of its own in the results), and
`pairwise-all` compares every pair of models once (model_1 before model_2 in answer order).
Each comparison is one question and one turn, judged twice (order "AB" shows model_1 as
assistant A, "BA" swaps them), each game its own log record, so resuming never repeats a
finished game and the raw verdicts stay inspectable. Results are rebuilt from the log with
the combination rule in `turnbench.judging.pairwise`.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from turnbench.benchmarks.base import CHARS_PER_TOKEN, AnswerSet, Benchmark, Job, PlanEstimate
from turnbench.benchmarks.mt_bench import (
    REFERENCE_CATEGORIES,
    MTBench,
    answer_key,
)
from turnbench.benchmarks.mt_bench_data import Question
from turnbench.config import RunConfig
from turnbench.errors import UserError
from turnbench.judging.pairwise import (
    ORDERS,
    PARSER_NAMES,
    Order,
    PairOutcome,
    Tally,
    combine_games,
    game_key,
    game_winner,
    pair_prompt_name,
    render_pairwise_judgment,
    shown_as,
)
from turnbench.judging.reask import Followup, followup
from turnbench.ratings import Battle, bradley_terry
from turnbench.runner import RunContext
from turnbench.types import AnswerRecord, JudgmentRecord, LogRecord

PAIRWISE_MODES = ("pairwise", "pairwise-all")
Side = Literal["model_1", "model_2"]


@dataclass(frozen=True)
class Game:
    question: Question
    turn: int
    model_1: str
    model_2: str
    order: Order


@dataclass(frozen=True)
class ComparedPair:
    question: Question
    turn: int
    model_1: str
    model_2: str
    outcome: PairOutcome
    verdicts: tuple[str, str]  # the raw positional verdicts of the AB and BA games


class MTBenchPairwise:
    """The pairwise plan of one run: which games to play, and their results."""

    def __init__(
        self,
        benchmark: MTBench,
        mode: str,
        baseline: str | None,
        models: list[str],
        answer_sets: list[AnswerSet] | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.mode = mode
        self.baseline = baseline
        self.models = list(models)
        self.answer_sets = answer_sets or []

    # -- settings --------------------------------------------------------------------------
    @property
    def parser_name(self) -> str:
        return PARSER_NAMES[self.benchmark.settings.parser]

    def verdict_followup(self) -> Followup:
        return followup("verdict")

    def pairs(self) -> list[tuple[str, str]]:
        if self.mode == "pairwise":
            baseline = self.baseline or ""
            return [(model, baseline) for model in self.models if model != baseline]
        return [
            (first, second)
            for index, first in enumerate(self.models)
            for second in self.models[index + 1 :]
        ]

    def games(self) -> list[Game]:
        return [
            Game(question, turn, model_1, model_2, order)
            for question in self.benchmark.planned
            for turn in range(1, len(question.turns) + 1)
            for model_1, model_2 in self.pairs()
            for order in ORDERS
        ]

    def key(self, judge: str, game: Game) -> str:
        return game_key(
            judge, game.model_1, game.model_2, game.question.question_id, game.turn, game.order
        )

    def prompt_name(self, question: Question, turn: int) -> str:
        return pair_prompt_name(question.category in REFERENCE_CATEGORIES, turn)

    def prompt_versions(self) -> dict[str, str]:
        names = sorted(
            {self.prompt_name(q, t) for q in self.benchmark.planned for t in range(1, 3)}
        )
        versions = {"judge_prompts": "fastchat:" + ",".join(names), "parser": self.parser_name}
        settings = self.benchmark.settings
        if settings.parser == "strict" and settings.max_reasks > 0:
            versions["reask"] = self.verdict_followup().label
        return versions

    def config_options(self) -> dict[str, Any]:
        return {"baseline": self.baseline} if self.mode == "pairwise" else {}

    def planned_keys(self) -> dict[str, set[str]]:
        judge = self.benchmark.settings.judge
        return {"judgments": {self.key(judge, game) for game in self.games()}}

    # -- work ------------------------------------------------------------------------------
    async def _play(self, ctx: RunContext, game: Game, answers: dict[str, list[str]]) -> None:
        settings = self.benchmark.settings
        model_a, model_b = shown_as(game.model_1, game.model_2, game.order)
        name = self.prompt_name(game.question, game.turn)
        messages = render_pairwise_judgment(
            self.benchmark.prompts[name],
            game.question,
            answers[model_a],
            answers[model_b],
            self.benchmark._references_for(game.question),
            game.turn,
        )
        await ctx.judgment(
            key=self.key(settings.judge, game),
            judge=settings.judge,
            model=model_a,
            sample_id=game.question.question_id,
            turn=game.turn,
            prompt_name=name,
            messages=messages,
            params=settings.judge_params("verdict"),
            parser=self.parser_name,
            max_reasks=settings.max_reasks,
            followup=self.verdict_followup(),
            reask_params=settings.reask_params("verdict"),
            meta={
                "category": game.question.category,
                "pair": [game.model_1, game.model_2],
                "order": game.order,
                "model_a": model_a,
                "model_b": model_b,
            },
        )

    def jobs(self, ctx: RunContext) -> list[Job]:
        by_model = {s.model: s for s in self.answer_sets}
        games_of: dict[int, list[Game]] = defaultdict(list)
        for game in self.games():
            games_of[game.question.question_id].append(game)

        async def one(question: Question) -> None:
            answers: dict[str, list[str]] = {}
            for model in self.models:
                answers[model] = by_model[model].answers[question.question_id]
                for turn, text in enumerate(answers[model], start=1):
                    ctx.import_answer(
                        key=answer_key(model, question.question_id, turn),
                        model=model,
                        sample_id=question.question_id,
                        turn=turn,
                        text=text,
                        meta={"category": question.category},
                    )
            await asyncio.gather(
                *(self._play(ctx, game, answers) for game in games_of[question.question_id])
            )

        return [lambda q=q: one(q) for q in self.benchmark.planned]

    def estimate(self) -> PlanEstimate:
        """Request count and token estimate from the real answer lengths (nothing is sent)."""
        by_model = {s.model: s.answers for s in self.answer_sets}
        prompt_chars = 0
        games = self.games()
        for game in games:
            question = game.question
            prompt = self.benchmark.prompts[self.prompt_name(question, game.turn)]
            size = len(prompt.system_prompt) + len(prompt.prompt_template)
            size += sum(len(t) for t in question.turns[: game.turn])
            for model in (game.model_1, game.model_2):
                size += sum(len(t) for t in by_model[model][question.question_id][: game.turn])
            references = self.benchmark._references_for(question)
            if references is not None:
                size += sum(len(r) for r in references[: game.turn])
            prompt_chars += size
        settings = self.benchmark.settings
        estimate = PlanEstimate(
            answers=0,
            judgments=len(games),
            answer_prompt_tokens=0,
            answer_completion_tokens=0,
            judge_prompt_tokens=prompt_chars // CHARS_PER_TOKEN,
            judge_completion_tokens=len(games) * settings.judge_sampling.max_tokens,
        )
        estimate.notes.append(
            f"{len(self.benchmark.planned)} questions x 2 turns x {len(self.pairs())} pair(s) "
            f"x 2 orders ({self.mode}); re-asks (at most {settings.max_reasks} per game) are "
            "not counted."
        )
        return estimate

    # -- results ---------------------------------------------------------------------------
    def results(self, records: list[LogRecord], judge: str) -> dict[str, Any]:
        latest: dict[str, JudgmentRecord] = {}
        for record in records:
            if isinstance(record, JudgmentRecord) and record.judge == judge:
                latest[record.key] = record
        played: dict[tuple[int, int, str, str], dict[Order, JudgmentRecord | None]] = {}
        for game in self.games():
            pair = (game.question.question_id, game.turn, game.model_1, game.model_2)
            played.setdefault(pair, {})[game.order] = latest.get(self.key(judge, game))
        compared: list[ComparedPair] = []
        failures: list[dict[str, Any]] = []
        pending_pairs = excluded_pairs = 0
        judged = failed = reasks = 0
        for (question_id, turn, model_1, model_2), games in played.items():
            done = [record for record in games.values() if record is not None]
            reasks += sum(record.reasks for record in done)
            judged += sum(record.status == "scored" for record in done)
            for order, record in games.items():
                if record is not None and record.status != "scored":
                    failed += 1
                    failures.append(
                        {
                            "question_id": question_id,
                            "turn": turn,
                            "model_a": record.meta.get("model_a"),
                            "model_b": record.meta.get("model_b"),
                            "order": order,
                            "reason": record.parse_error,
                        }
                    )
            if len(done) < len(games):
                pending_pairs += 1
            elif any(record.status != "scored" or record.verdict is None for record in done):
                excluded_pairs += 1
            else:
                ab, ba = games["AB"], games["BA"]
                assert ab is not None and ba is not None
                assert ab.verdict is not None and ba.verdict is not None
                outcome = combine_games(
                    game_winner(ab.verdict, "AB"), game_winner(ba.verdict, "BA")
                )
                compared.append(
                    ComparedPair(
                        self.benchmark.by_id[question_id],
                        turn,
                        model_1,
                        model_2,
                        outcome,
                        (ab.verdict, ba.verdict),
                    )
                )
        expected = 2 * len(played)
        pending = expected - judged - failed
        inconsistent = sum(pair.outcome.inconsistent for pair in compared)
        verdicts = {"A": 0, "B": 0, "tie": 0}
        for pair in compared:
            for verdict in pair.verdicts:
                verdicts[verdict] += 1
        decisive = verdicts["A"] + verdicts["B"]
        answers = {r.key for r in records if isinstance(r, AnswerRecord) and r.model in self.models}
        return {
            "benchmark": self.benchmark.name,
            "judge": judge,
            "mode": self.mode,
            "baseline": self.baseline,
            "complete": pending == 0,
            "models": self._model_rows(compared),
            "position_consistency": 1 - inconsistent / len(compared) if compared else None,
            "first_position_win_share": verdicts["A"] / decisive if decisive else None,
            "verdicts": verdicts,
            "ratings": bradley_terry(
                [
                    Battle(
                        pair.question.question_id,
                        pair.model_1,
                        pair.model_2,
                        pair.outcome.points_of_model_1,
                    )
                    for pair in compared
                ],
                models=self.models,
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
        }

    def _model_rows(self, compared: list[ComparedPair]) -> dict[str, Any]:
        categories = list(dict.fromkeys(q.category for q in self.benchmark.planned))
        overall: dict[str, Tally] = defaultdict(Tally)
        by_turn: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
        by_category: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
        versus: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
        for pair in compared:
            sides: tuple[tuple[str, Side, str], ...] = (
                (pair.model_1, "model_1", pair.model_2),
                (pair.model_2, "model_2", pair.model_1),
            )
            for model, side, opponent in sides:
                overall[model].add(pair.outcome, side)
                by_turn[model][str(pair.turn)].add(pair.outcome, side)
                by_category[model][pair.question.category].add(pair.outcome, side)
                versus[model][opponent].add(pair.outcome, side)
        rows = {}
        for model in self.models:
            if self.mode == "pairwise" and model == self.baseline:
                continue
            opponents = (
                [self.baseline or ""]
                if self.mode == "pairwise"
                else [m for m in self.models if m != model]
            )
            rows[model] = {
                "model": model,
                **overall[model].as_dict(),
                "by_turn": {t: by_turn[model][t].as_dict() for t in ("1", "2")},
                "by_category": {c: by_category[model][c].as_dict() for c in categories},
                "versus": {o: versus[model][o].as_dict() for o in opponents},
            }
        return rows


def pairwise_plan(
    benchmark: Benchmark, mode: str, baseline: str | None, answer_sets: list[AnswerSet]
) -> MTBenchPairwise:
    """Validate a pairwise request before anything is written."""
    if not isinstance(benchmark, MTBench):
        raise UserError(f"--mode {mode} is only available for --benchmark mt-bench")
    names = [s.model for s in answer_sets]
    if len(names) < 2:
        shown = ", ".join(names) or "none"
        raise UserError(
            f"--mode {mode} compares models, so --answers must hold answers of at least 2 "
            f"models (found {len(names)}: {shown})"
        )
    if mode == "pairwise":
        if baseline is None:
            raise UserError("--mode pairwise needs --baseline NAME (a model of --answers)")
        if baseline not in names:
            raise UserError(
                f"--baseline {baseline} is not one of the models in --answers ({', '.join(names)})"
            )
    elif baseline is not None:
        raise UserError("--baseline is only used with --mode pairwise")
    plan = MTBenchPairwise(benchmark, mode, baseline, names, answer_sets)
    for question in benchmark.planned:
        for turn in range(1, len(question.turns) + 1):
            name = plan.prompt_name(question, turn)
            if name not in benchmark.prompts:
                raise UserError(f"the MT-Bench judge prompts file has no prompt {name!r}")
    return plan


def pairwise_results(
    benchmark: Benchmark, config: RunConfig, records: list[LogRecord]
) -> dict[str, Any]:
    """results.json of a pairwise run, rebuilt from the log and the run's configuration."""
    assert isinstance(benchmark, MTBench)
    plan = MTBenchPairwise(benchmark, config.judging, config.options.get("baseline"), config.models)
    return plan.results(records, config.judge)


def render_pairwise(results: dict[str, Any]) -> list[Any]:
    """Rich renderables of a pairwise results object (rounded for display only)."""
    from rich.table import Table

    from turnbench.report.terminal import fmt

    versus = f" vs {results['baseline']}" if results.get("baseline") else " (all pairs)"
    table = Table(
        title=f"MT-Bench pairwise{versus}, judge {results['judge']}", title_justify="left"
    )
    for column in ("model", "win", "loss", "tie", "inconsistent", "win rate", "adjusted"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for name, row in results["models"].items():
        table.add_row(
            name,
            str(row["win"]),
            str(row["loss"]),
            str(row["tie"]),
            str(row["inconsistent"]),
            fmt(row["win_rate"], 3),
            fmt(row["win_rate_adjusted"], 3),
        )
    from turnbench.ratings import ratings_table

    counts = results["counts"]
    pairs = counts["pairs"]
    parts = [
        f"judged {counts['judged']}/{counts['expected']} games",
        f"position consistency {fmt(results['position_consistency'], 3)} "
        f"({pairs['compared'] - pairs['inconsistent']}/{pairs['compared']} pairs agree in both "
        "orders)",
        f"first-position win share {fmt(results['first_position_win_share'], 3)}",
    ]
    if counts["failed"]:
        parts.append(
            f"[yellow]unparseable {counts['failed']}[/yellow] games; "
            f"{pairs['excluded']} pair(s) left out"
        )
    if counts["pending"]:
        parts.append(
            f"[red]pending {counts['pending']}[/red] games (not finished: a request failed "
            "or the run stopped early; re-run the same command to finish them)"
        )
    return [table, " · ".join(parts), ratings_table(results["ratings"])]
