"""Pairwise judging: two models' answers to the same turn, compared by the judge in both orders.

Each comparison is two games (A/B and B/A), each its own log record, so position bias is
measured rather than hidden. One job per sample plays every game of that sample.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.drivers.judge_only import record_answers
from turnbench.engine.estimate import Sizing
from turnbench.engine.guarded import guarded_pair_task
from turnbench.engine.history import earlier_pairs
from turnbench.engine.plan import Game, Plan, PlannedJob
from turnbench.engine.turn_judging import together
from turnbench.judging.guard import guarded_format
from turnbench.judging.judge import Judge
from turnbench.judging.pairwise import ORDERS, shown_as
from turnbench.record_keys import game_key


class PairwiseJudging:
    """Compare the given answers of pairs of models, every judged turn, both orders."""

    def __init__(self, work: WorkSpec) -> None:
        self.work = work

    def games(self) -> list[Game]:
        work = self.work
        return [
            Game(sample, turn, model_1, model_2, order)
            for sample in work.benchmark.samples
            for turn in sample.judged_turns()
            for model_1, model_2 in work.pairs()
            for order in ORDERS
        ]

    def plan(self) -> Plan:
        work = self.work
        games = self.games()
        plan = Plan(games=games)
        plan.keys["judgments"] = {
            game_key(judge.id, g.model_1, g.model_2, g.sample.id, g.turn, g.order, repeat=r)
            for judge in work.judges
            for g in games
            for r in range(work.repeats)
        }
        of_sample: dict[object, list[Game]] = {}
        for game in games:
            of_sample.setdefault(game.sample.id, []).append(game)
        plan.jobs = [
            PlannedJob(sample, games=tuple(of_sample.get(sample.id, ())))
            for sample in work.benchmark.samples
        ]
        return plan

    async def run(self, job: PlannedJob, ctx: RunContext) -> None:
        judges = ctx.judges
        by_model = {answer_set.model: answer_set for answer_set in self.work.answer_sets}
        # (pairwise games judge cut-off answers as recorded: empty)
        own = {m: record_answers(ctx, by_model[m], job.sample, set()) for m in self.work.models}
        await asyncio.gather(*(self._play(ctx, judges, game, own) for game in job.games))

    async def _play(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        game: Game,
        own: Mapping[str, Mapping[int, str]],
    ) -> None:
        work = self.work
        benchmark = work.benchmark
        history = benchmark.history
        model_a, model_b = shown_as(game.model_1, game.model_2, game.order)
        conversations = [
            (earlier_pairs(game.sample, game.turn, history, own[m]), own[m][game.turn])
            for m in (model_a, model_b)
        ]
        plain = benchmark.pair_task(game.sample, game.turn, *conversations)
        requests = []
        for judge in judges:
            for repeat in range(work.repeats):
                task, boundary = plain, None
                if judge.settings.guard:
                    task, boundary = guarded_pair_task(
                        benchmark, game.sample, game.turn, *conversations, plain=plain
                    )
                reply = benchmark.reply_format(task)
                requests.append(
                    ctx.judgment(
                        judge,
                        task,
                        reply if boundary is None else guarded_format(reply, boundary),
                        key=game_key(
                            judge.id,
                            game.model_1,
                            game.model_2,
                            game.sample.id,
                            game.turn,
                            game.order,
                            repeat=repeat,
                        ),
                        model=model_a,
                        sample=game.sample,
                        turn=game.turn,
                        pair=(game.model_1, game.model_2),
                        order=game.order,
                        repeat=repeat,
                        meta=None if boundary is None else {"guard": boundary.record()},
                    )
                )
        await together(requests)

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        """Prompt sizes from the answers given."""
        benchmark = self.work.benchmark
        texts_of = {s.model: s.turns for s in self.work.answer_sets}
        for game in plan.games:
            a, b = shown_as(game.model_1, game.model_2, game.order)
            conversations = [
                (
                    earlier_pairs(
                        game.sample, game.turn, benchmark.history, texts_of[m][game.sample.id]
                    ),
                    texts_of[m][game.sample.id][game.turn],
                )
                for m in (a, b)
            ]
            sizing.judgment(benchmark.pair_task(game.sample, game.turn, *conversations).messages)

    def notes(self) -> list[str]:
        return []
