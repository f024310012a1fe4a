"""The only turn loop: what one invocation asks of the model and the judges, for any benchmark.

Three kinds of work, all built from a benchmark's declarations:
- `run`: the model answers the benchmark's turns and every judged answer is judged. With
  `self` history a sample's turns run in order (turn k's request holds the model's own answer
  to turn k-1, and a failed answer is never sent onward); with `golden` history every judged
  turn is independent and all of them run concurrently.
- `judge`: answers read from files (or an earlier run) are recorded in the log, then judged
  exactly as generated answers would be.
- `pairwise` / `pairwise-all`: two models' answers to the same turn are compared by the
  judge in both orders (two games, each its own log record).

Every request goes through `RunContext`, which returns the logged record when its key is
already done, so running the same jobs again after a crash resumes exactly where the log
ends. Estimates for `--dry-run` render the same requests without sending them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from turnbench.engine.costs import CHARS_PER_TOKEN
from turnbench.engine.guarded import guarded_judge_tasks, guarded_pair_task
from turnbench.engine.rules import BenchmarkRules
from turnbench.engine.runner import RunContext
from turnbench.errors import UserError
from turnbench.journal.logindex import AnswerDone, UserTurnDone
from turnbench.judging.cleaning import UNCLOSED_THINK
from turnbench.judging.guard import guarded_format
from turnbench.judging.judge import Judge, JudgeSettings
from turnbench.judging.pairwise import ORDERS, Order, shown_as
from turnbench.perturb.arms import Arm
from turnbench.record_keys import answer_key, game_key, judgment_key, user_turn_key
from turnbench.samples import AnswerSet, Pair, Sample, UserAsk
from turnbench.types import AnswerRecord, UserTurnRecord

Job = Callable[[], Awaitable[None]]
Mode = Literal["run", "judge"]
Judging = Literal["single", "pairwise", "pairwise-all"]
PAIRWISE_MODES = ("pairwise", "pairwise-all")


def earlier_pairs(sample: Sample, turn: int, history: str, own: Mapping[int, str]) -> list[Pair]:
    """The (user, assistant) turns before `turn`: the dataset's answers for golden history and
    for turns the model is not asked; the model's own (cleaned) answers otherwise."""
    pairs: list[Pair] = []
    for number in range(1, turn):
        spec = sample.turns[number - 1]
        if history == "golden" or not spec.asked:
            pairs.append((spec.user, spec.golden or ""))
        else:
            pairs.append((spec.user, own[number]))
    return pairs


def cut_off(record: AnswerRecord | AnswerDone) -> bool:
    """Whether an answer ended inside an unclosed <think> block: it has no answer to judge."""
    if isinstance(record, AnswerDone):
        return record.unclosed_think
    return bool(record.meta.get(UNCLOSED_THINK))


def with_user_turns(sample: Sample, texts: Sequence[str]) -> Sample:
    """`sample` as a simulated conversation has it so far: its first turns carry the user
    messages made at run time (`texts`), so the benchmark's request and judge prompts read
    them where they read any user turn."""
    turns = tuple(
        replace(spec, user=texts[number]) if number < len(texts) else spec
        for number, spec in enumerate(sample.turns)
    )
    return replace(sample, turns=turns)


async def _together(steps: list[Coroutine[Any, Any, Any]]) -> None:
    """Await `steps` side by side; a single one directly (no task around it: there are
    thousands of them in a large run, and a task costs more than the step's own code)."""
    if len(steps) == 1:
        await steps[0]
    elif steps:
        await asyncio.gather(*steps)


@dataclass(frozen=True)
class Game:
    sample: Sample
    turn: int
    model_1: str
    model_2: str
    order: Order


@dataclass
class Estimate:
    answers: int = 0
    judgments: int = 0
    answer_prompt_tokens: int = 0
    answer_completion_tokens: int = 0
    judge_prompt_tokens: int = 0
    judge_completion_tokens: int = 0
    #: requests to the user model of simulated conversations (--user-model)
    user_turns: int = 0
    user_prompt_tokens: int = 0
    user_completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)


def _chars(messages: Sequence[Mapping[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


@dataclass
class Work:
    """What one invocation does: the benchmark, the judges, and the models' answers."""

    benchmark: BenchmarkRules
    judges: list[JudgeSettings]
    mode: Mode
    judging: Judging = "single"
    model: str | None = None
    answer_sets: list[AnswerSet] = field(default_factory=list)
    baseline: str | None = None
    _criteria_of: dict[tuple[object, int], list[str | None]] = field(
        default_factory=dict, init=False, repr=False
    )
    #: --judge-repeats: every item is judged this many times by every judge (keys carry the
    #: repeat index, so raising it on a resume only adds the missing repeats)
    repeats: int = 1
    #: --perturb: stress arms (`turnbench.perturb`), each answering and judging the turns
    #: with history again, that history perturbed; their keys carry the arm's kind
    arms: Sequence[Arm] = ()
    #: the seed of the job order when there are arms (the judge's queue mixes the arms)
    shuffle_seed: int = 0

    def __post_init__(self) -> None:
        if self.repeats < 1:
            raise UserError("--judge-repeats must be at least 1")
        if self.arms and (self.mode != "run" or self.judging != "single"):
            raise UserError("--perturb is only available for turnbench run")
        if self.mode == "run" and not self.model:
            raise UserError("--model is required")
        if self.judging in PAIRWISE_MODES:
            self._check_pairwise()

    # -- shape -----------------------------------------------------------------------------
    @property
    def models(self) -> list[str]:
        if self.mode == "run":
            assert self.model is not None
            return [self.model]
        return [answer_set.model for answer_set in self.answer_sets]

    @property
    def pairwise(self) -> bool:
        return self.judging in PAIRWISE_MODES

    def _check_pairwise(self) -> None:
        mode = self.judging
        if self.mode != "judge":
            raise UserError(f"--mode {mode} is only available for turnbench judge")
        self.benchmark.check_pairwise()
        names = self.models
        if len(names) < 2:
            shown = ", ".join(names) or "none"
            raise UserError(
                f"--mode {mode} compares models, so --answers must hold answers of at least 2 "
                f"models (found {len(names)}: {shown})"
            )
        if mode == "pairwise":
            if self.baseline is None:
                raise UserError("--mode pairwise needs --baseline NAME (a model of --answers)")
            if self.baseline not in names:
                raise UserError(
                    f"--baseline {self.baseline} is not one of the models in --answers "
                    f"({', '.join(names)})"
                )
        elif self.baseline is not None:
            raise UserError("--baseline is only used with --mode pairwise")

    def pairs(self) -> list[tuple[str, str]]:
        """(model_1, model_2) compared: every model against the baseline, or every pair."""
        if self.judging == "pairwise":
            baseline = self.baseline or ""
            return [(model, baseline) for model in self.models if model != baseline]
        models = self.models
        return [(a, b) for index, a in enumerate(models) for b in models[index + 1 :]]

    def games(self) -> list[Game]:
        return [
            Game(sample, turn, model_1, model_2, order)
            for sample in self.benchmark.samples
            for turn in sample.judged_turns()
            for model_1, model_2 in self.pairs()
            for order in ORDERS
        ]

    def answered_turns(self, sample: Sample) -> list[int]:
        """Turns the model is asked in a `run`: all asked turns with self history (later
        turns need them), only the judged ones with golden history."""
        if self.benchmark.history in ("self", "simulated"):
            return sample.asked_turns()
        return sample.judged_turns()

    # -- identity --------------------------------------------------------------------------
    def prompt_versions(self) -> dict[str, str]:
        if self.pairwise:
            return self.benchmark.pairwise_prompt_versions()
        return self.benchmark.prompt_versions()

    def config_options(self) -> dict[str, object]:
        options = dict(self.benchmark.config_options())
        if self.judging == "pairwise":
            options["baseline"] = self.baseline
        return options

    # -- keys ------------------------------------------------------------------------------
    def planned_keys(self) -> dict[str, set[str]]:
        """Log keys of the planned work per stage ("answers", "judgments")."""
        keys: dict[str, set[str]] = {"judgments": set()}
        if self.pairwise:
            keys["judgments"] = {
                game_key(judge.id, g.model_1, g.model_2, g.sample.id, g.turn, g.order, repeat=r)
                for judge in self.judges
                for g in self.games()
                for r in range(self.repeats)
            }
            return keys
        for model in self.models:
            for sample in self.benchmark.samples:
                for turn in sample.judged_turns():
                    for criterion in self._criteria(sample, turn):
                        for judge in self.judges:
                            keys["judgments"].update(
                                judgment_key(
                                    judge.id, model, sample.id, turn, criterion=criterion, repeat=r
                                )
                                for r in range(self.repeats)
                            )
        if self.mode == "run":
            keys["answers"] = {
                answer_key(model, sample.id, turn)
                for model in self.models
                for sample in self.benchmark.samples
                for turn in self.answered_turns(sample)
            }
            for arm in self.arms:
                self._arm_keys(arm, keys)
        return keys

    def _arm_keys(self, arm: Arm, keys: dict[str, set[str]]) -> None:
        """Add a stress arm's planned answers and judgments to `keys`."""
        model = self.model
        assert model is not None
        for sample in self.benchmark.samples:
            keys["answers"].update(
                answer_key(model, sample.id, turn, arm.kind) for turn in arm.answered(sample)
            )
            keys["judgments"].update(
                judgment_key(judge.id, model, sample.id, turn, criterion=c, repeat=r, arm=arm.kind)
                for turn in arm.items(sample)
                for c in self._criteria(sample, turn)
                for judge in self.judges
                for r in range(self.repeats)
            )

    def _criteria(self, sample: Sample, turn: int) -> list[str | None]:
        """The criteria of a judged turn's judge requests (rendered once per turn with a
        stand-in answer: which requests a turn gets never depends on the answer's text)."""
        found = self._criteria_of.get((sample.id, turn))
        if found is None:
            earlier = earlier_pairs(sample, turn, "golden", {})
            tasks = self.benchmark.judge_tasks(sample, turn, earlier, "")
            found = self._criteria_of[(sample.id, turn)] = [task.criterion for task in tasks]
        return found

    # -- jobs ------------------------------------------------------------------------------
    def jobs(self, ctx: RunContext, judges: Sequence[Judge]) -> list[Job]:
        if self.pairwise:
            return self._pairwise_jobs(ctx, judges)
        if self.mode == "run":
            return self._run_jobs(ctx, judges)
        return self._judge_jobs(ctx, judges)

    def _judged(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        model: str,
        sample: Sample,
        turn: int,
        arm: str | None = None,
    ) -> bool:
        """Whether every judgment of this turn is in the log already (a resume)."""
        done = ctx.done
        return all(
            judgment_key(
                judge.id, model, sample.id, turn, criterion=criterion, repeat=repeat, arm=arm
            )
            in done
            for criterion in self._criteria(sample, turn)
            for judge in judges
            for repeat in range(self.repeats)
        )

    async def _judge_answer(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        model: str,
        sample: Sample,
        turn: int,
        earlier: Sequence[Pair],
        answer: str,
        cut: bool = False,
        arm: str | None = None,
    ) -> None:
        """Every judgment of one answered turn, side by side (callers skip a turn whose
        judgments are all in the log already: `_judged`). An answer cut off inside <think>
        is not judged (`cut_off`): results count the turn as failed, with the reason.
        `arm`: the stress arm the answer was given in (only the keys tell it apart)."""
        if cut:
            ctx.skip_judgments(
                judgment_key(
                    judge.id, model, sample.id, turn, criterion=criterion, repeat=r, arm=arm
                )
                for criterion in self._criteria(sample, turn)
                for judge in judges
                for r in range(self.repeats)
            )
            return
        benchmark = self.benchmark
        plain = benchmark.judge_tasks(sample, turn, earlier, answer)
        requests = []
        for judge in judges:
            for repeat in range(self.repeats):
                tasks, boundary = plain, None
                if judge.settings.guard:  # a fresh boundary for every request
                    tasks, boundary = guarded_judge_tasks(
                        benchmark, sample, turn, earlier, answer, plain=plain
                    )
                for task in tasks:
                    reply = benchmark.reply_format(task)
                    requests.append(
                        ctx.judgment(
                            judge,
                            task,
                            reply if boundary is None else guarded_format(reply, boundary),
                            key=judgment_key(
                                judge.id,
                                model,
                                sample.id,
                                turn,
                                criterion=task.criterion,
                                repeat=repeat,
                                arm=arm,
                            ),
                            model=model,
                            sample=sample,
                            turn=turn,
                            repeat=repeat,
                            meta=None if boundary is None else {"guard": boundary.record()},
                            arm=arm,
                        )
                    )
        await _together(requests)

    async def _answer(
        self,
        ctx: RunContext,
        model: str,
        sample: Sample,
        turn: int,
        own: Mapping[int, str],
        arm: Arm | None = None,
        given: Mapping[tuple[object, int], str] | None = None,
    ) -> tuple[list[Pair], str, bool] | None:
        """Ask the model for one turn; (the conversation before it as the judge is shown
        it, the cleaned answer, whether it was cut off inside <think>). With a stress `arm`
        the model is asked with the arm's history (`given`: the answers it needs)."""
        benchmark = self.benchmark
        earlier = shown = earlier_pairs(sample, turn, benchmark.history, own)
        if arm is not None:
            earlier, shown = arm.histories(sample, turn, earlier, given or {})
        record = await ctx.answer(
            key=answer_key(model, sample.id, turn, None if arm is None else arm.kind),
            model=model,
            sample=sample,
            turn=turn,
            messages=benchmark.answer_messages(sample, turn, earlier),
            params=benchmark.answer_params(sample),
            arm=None if arm is None else arm.kind,
            meta=None if arm is None else {"perturbation": arm.record(sample)},
        )
        return None if record is None else (shown, record.text, cut_off(record))

    async def _needed(
        self, ctx: RunContext, model: str, arm: Arm, sample: Sample
    ) -> dict[tuple[object, int], str] | None:
        """The unperturbed answers a stress arm's history holds (another sample's first
        answer, for a distractor), asked as that sample's job asks them (one request
        either way); None when one of them failed."""
        given: dict[tuple[object, int], str] = {}
        for other, turn in arm.needs(sample):
            answered = await self._answer(ctx, model, other, turn, {})
            if answered is None:
                return None
            given[(other.id, turn)] = answered[1]
        return given

    def _run_jobs(self, ctx: RunContext, judges: Sequence[Judge]) -> list[Job]:
        model = self.model
        assert model is not None

        async def in_order(
            sample: Sample, arm: Arm | None = None, before: Mapping[int, str] | None = None
        ) -> None:
            # a stress arm's dialogue forks from the unperturbed one (`before`: its answers
            # up to the arm's first turn) and goes on in order under the arm
            own: dict[int, str] = dict(before or {})
            judging: list[asyncio.Task[None]] = []
            judged = set(sample.judged_turns() if arm is None else arm.items(sample))
            kind = None if arm is None else arm.kind
            given = None if arm is None else await self._needed(ctx, model, arm, sample)
            if arm is not None and given is None:
                return  # what its history needs failed: pending, asked again on resume
            try:
                for turn in sample.asked_turns():
                    if turn in own:
                        continue
                    if arm is None:
                        judging.extend(
                            asyncio.create_task(in_order(sample, fork, dict(own)))
                            for fork in self.arms
                            if fork.items(sample) and fork.answered(sample)[0] == turn
                        )
                    answered = await self._answer(ctx, model, sample, turn, own, arm, given)
                    if answered is None:  # never send a failed answer onward
                        break
                    earlier, text, cut = answered
                    own[turn] = text
                    if turn in judged and not self._judged(ctx, judges, model, sample, turn, kind):
                        judging.append(
                            asyncio.create_task(
                                self._judge_answer(
                                    ctx, judges, model, sample, turn, earlier, text, cut, kind
                                )
                            )
                        )
                await asyncio.gather(*judging)
            finally:
                for task in judging:
                    task.cancel()

        async def one_turn(sample: Sample, turn: int, arm: Arm | None = None) -> None:
            kind = None if arm is None else arm.kind
            given = None if arm is None else await self._needed(ctx, model, arm, sample)
            if arm is not None and given is None:
                return
            answered = await self._answer(ctx, model, sample, turn, {}, arm, given)
            if answered is not None and not self._judged(ctx, judges, model, sample, turn, kind):
                await self._judge_answer(ctx, judges, model, sample, turn, *answered, kind)

        if self.benchmark.history == "simulated":  # stress arms need a fixed history
            return [
                lambda s=s: self._simulated(ctx, judges, model, s) for s in self.benchmark.samples
            ]
        jobs: list[Job]
        if self.benchmark.history == "self":
            jobs = [lambda s=s: in_order(s) for s in self.benchmark.samples]
        else:
            jobs = [
                lambda s=s, t=t, a=a: one_turn(s, t, a)
                for a in (None, *self.arms)
                for s in self.benchmark.samples
                for t in (s.judged_turns() if a is None else a.items(s))
            ]
        if self.arms:  # the judge's queue mixes the arms (seeded: a resume asks in order)
            random.Random(self.shuffle_seed).shuffle(jobs)
        return jobs

    async def _user_turn(
        self, ctx: RunContext, model: str, sample: Sample, turn: int, earlier: Sequence[Pair]
    ) -> UserTurnDone | UserTurnRecord | None:
        """The user's message of one turn of a simulated conversation: the logged one, else
        made now from the conversation so far and logged at once; None: the conversation
        has ended."""
        key = user_turn_key(model, sample.id, turn)
        logged = ctx.logged_user_turn(key)
        if logged is not None:
            return logged
        made = self.benchmark.user_turn(sample, turn, earlier)
        if made is None:
            return None
        if isinstance(made, UserAsk):  # the user model writes it
            return await ctx.ask_user(key=key, model=model, sample=sample, turn=turn, ask=made)
        return ctx.record_user_turn(key=key, model=model, sample=sample, turn=turn, made=made)

    async def _simulated(
        self, ctx: RunContext, judges: Sequence[Judge], model: str, sample: Sample
    ) -> None:
        """One simulated conversation: each user turn is made from what happened so far,
        logged, then answered by the model (its own earlier answers in the request), and
        every judged answer is judged while the conversation goes on. A resume reads the
        logged turns back and pays only for what the log does not hold."""
        benchmark = self.benchmark
        pairs: list[Pair] = []
        texts: list[str] = []
        judging: list[asyncio.Task[None]] = []
        judged = set(sample.judged_turns())
        ended = False  # the user ended the conversation (an end marker)
        last: AnswerRecord | AnswerDone | None = None
        try:
            for turn in sample.asked_turns():
                user = await self._user_turn(ctx, model, sample, turn, pairs)
                if user is None:
                    break
                if user.ended and not user.text.strip():
                    ended = True
                    break  # (a reply that is only the end marker is not sent)
                texts.append(user.text)
                live = with_user_turns(sample, texts)
                record = await ctx.answer(
                    key=answer_key(model, sample.id, turn),
                    model=model,
                    sample=live,
                    turn=turn,
                    messages=benchmark.answer_messages(live, turn, pairs),
                    params=benchmark.answer_params(sample),
                )
                if record is None:  # never send a failed answer onward
                    break
                last = record
                earlier = list(pairs)
                pairs.append((user.text, record.text))
                if turn in judged and not self._judged(ctx, judges, model, sample, turn):
                    cut = cut_off(record)
                    judging.append(
                        asyncio.create_task(
                            self._judge_answer(
                                ctx, judges, model, live, turn, earlier, record.text, cut
                            )
                        )
                    )
                if user.ended:
                    ended = True
                    break
            if ended and last is not None:
                judging += self._judge_at_end(ctx, judges, model, sample, pairs, last)
            await asyncio.gather(*judging)
        finally:
            for task in judging:
                task.cancel()

    def _judge_at_end(
        self,
        ctx: RunContext,
        judges: Sequence[Judge],
        model: str,
        sample: Sample,
        pairs: Sequence[Pair],
        last: AnswerRecord | AnswerDone,
    ) -> list[asyncio.Task[None]]:
        """A conversation the user ended before a judged turn: that turn (a scenario's
        slot, its last) is judged on the conversation as it ended, its final exchange in
        the judged turn's place. Results read the same final answer for it."""
        answered = len(pairs)
        tasks = []
        for slot in sample.judged_turns():
            if slot <= answered or self._judged(ctx, judges, model, sample, slot):
                continue
            texts = [said for said, _ in pairs[:-1]]
            texts += [""] * (slot - 1 - len(texts)) + [pairs[-1][0]]
            final = with_user_turns(sample, texts)
            tasks.append(
                asyncio.create_task(
                    self._judge_answer(
                        ctx, judges, model, final, slot, pairs[:-1], pairs[-1][1], cut_off(last)
                    )
                )
            )
        return tasks

    def _estimate_user_turns(
        self, estimate: Estimate, sample: Sample, answer_limit: int, user_limit: int | None
    ) -> None:
        """The user model's requests of one simulated conversation that runs to its last
        turn, every answer and user message at its token limit (prompt sizes summed in
        characters). Turns the benchmark writes itself (templates) cost nothing."""
        answer = "x" * (answer_limit * CHARS_PER_TOKEN)
        said = "x" * ((user_limit or 0) * CHARS_PER_TOKEN)
        pairs: list[Pair] = []
        for turn in sample.asked_turns():
            made = self.benchmark.user_turn(sample, turn, pairs)
            if made is None:
                break
            if isinstance(made, UserAsk):
                estimate.user_turns += 1
                estimate.user_prompt_tokens += _chars(made.messages)
                estimate.user_completion_tokens += user_limit or 0
                pairs.append((said, answer))
            else:
                pairs.append((made.text, answer))

    def _import(
        self, ctx: RunContext, answer_set: AnswerSet, sample: Sample, cut: set[int]
    ) -> dict[int, str]:
        """Record a sample's answers from a file; returns the recorded (cleaned) texts, and
        adds to `cut` the turns whose answer was cut off inside <think>."""
        own: dict[int, str] = {}
        for turn, text in sorted(answer_set.turns.get(sample.id, {}).items()):
            record = ctx.import_answer(
                key=answer_key(answer_set.model, sample.id, turn),
                model=answer_set.model,
                sample=sample,
                turn=turn,
                text=text,
            )
            own[turn] = record.text
            if cut_off(record):
                cut.add(turn)
        return own

    def _judge_jobs(self, ctx: RunContext, judges: Sequence[Judge]) -> list[Job]:
        history = self.benchmark.history

        async def one(answer_set: AnswerSet, sample: Sample) -> None:
            cut: set[int] = set()
            own = self._import(ctx, answer_set, sample, cut)
            model = answer_set.model
            # (turns judged already get no task: a resume of a large run has tens of thousands)
            pending = [
                turn
                for turn in sample.judged_turns()
                if not self._judged(ctx, judges, model, sample, turn)
            ]
            await _together(
                [
                    self._judge_answer(
                        ctx,
                        judges,
                        model,
                        sample,
                        turn,
                        earlier_pairs(sample, turn, history, own),
                        own[turn],
                        turn in cut,
                    )
                    for turn in pending
                ]
            )

        return [
            lambda a=a, s=s: one(a, s) for a in self.answer_sets for s in self.benchmark.samples
        ]

    def _pairwise_jobs(self, ctx: RunContext, judges: Sequence[Judge]) -> list[Job]:
        by_model = {answer_set.model: answer_set for answer_set in self.answer_sets}
        games_of: dict[object, list[Game]] = {}
        for game in self.games():
            games_of.setdefault(game.sample.id, []).append(game)
        history = self.benchmark.history

        async def play(game: Game, own: Mapping[str, Mapping[int, str]]) -> None:
            model_a, model_b = shown_as(game.model_1, game.model_2, game.order)
            conversations = [
                (earlier_pairs(game.sample, game.turn, history, own[m]), own[m][game.turn])
                for m in (model_a, model_b)
            ]
            benchmark = self.benchmark
            plain = benchmark.pair_task(game.sample, game.turn, *conversations)
            requests = []
            for judge in judges:
                for repeat in range(self.repeats):
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
            await _together(requests)

        async def one(sample: Sample) -> None:
            # (pairwise games judge cut-off answers as recorded: empty)
            own = {m: self._import(ctx, by_model[m], sample, set()) for m in self.models}
            await asyncio.gather(*(play(game, own) for game in games_of.get(sample.id, [])))

        return [lambda s=s: one(s) for s in self.benchmark.samples]

    # -- estimate --------------------------------------------------------------------------
    def estimate(self, user_max_tokens: int | None = None) -> Estimate:
        """Request counts and token estimates; nothing is sent. Prompt sizes use the real
        answers in judge-only runs and assume every answer uses its whole token limit in a
        `run`; re-asks are not counted. `user_max_tokens`: the user model's token limit, for
        the user turns of simulated conversations (each assumed to run to its last turn)."""
        benchmark = self.benchmark
        sampling = benchmark.settings.answer
        answer_limit = sampling.max_tokens if sampling is not None else 0
        filler = "x" * (answer_limit * CHARS_PER_TOKEN)
        judge_completion = sum(judge.sampling.max_tokens for judge in self.judges)
        estimate = Estimate()
        answer_chars = judge_chars = 0
        requests_per_item = len(self.judges) * self.repeats
        for model in self.models:
            texts = {s.model: s.turns for s in self.answer_sets}.get(model, {})
            for sample in benchmark.samples:
                own = texts.get(sample.id) or {t: filler for t in range(1, len(sample.turns) + 1)}
                if self.mode == "run" and benchmark.history == "simulated":
                    self._estimate_user_turns(estimate, sample, answer_limit, user_max_tokens)
                if self.mode == "run":
                    for turn in self.answered_turns(sample):
                        earlier = earlier_pairs(sample, turn, benchmark.history, own)
                        answer_chars += _chars(benchmark.answer_messages(sample, turn, earlier))
                        estimate.answers += 1
                if self.pairwise:
                    continue
                for turn in sample.judged_turns():
                    earlier = earlier_pairs(sample, turn, benchmark.history, own)
                    for task in benchmark.judge_tasks(sample, turn, earlier, own[turn]):
                        judge_chars += _chars(task.messages) * requests_per_item
                        estimate.judgments += requests_per_item
        for arm in self.arms:  # (sized as the unperturbed requests: close enough)
            for sample in benchmark.samples:
                own = {t: filler for t in range(1, len(sample.turns) + 1)}
                for turn in arm.answered(sample):
                    earlier = earlier_pairs(sample, turn, benchmark.history, own)
                    answer_chars += _chars(benchmark.answer_messages(sample, turn, earlier))
                    estimate.answers += 1
                for turn in arm.items(sample):
                    earlier = earlier_pairs(sample, turn, benchmark.history, own)
                    for task in benchmark.judge_tasks(sample, turn, earlier, own[turn]):
                        judge_chars += _chars(task.messages) * requests_per_item
                        estimate.judgments += requests_per_item
        if self.pairwise:
            texts_of = {s.model: s.turns for s in self.answer_sets}
            for game in self.games():
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
                task = benchmark.pair_task(game.sample, game.turn, *conversations)
                judge_chars += _chars(task.messages) * requests_per_item
                estimate.judgments += requests_per_item
        estimate.answer_prompt_tokens = answer_chars // CHARS_PER_TOKEN
        estimate.answer_completion_tokens = estimate.answers * answer_limit
        estimate.judge_prompt_tokens = judge_chars // CHARS_PER_TOKEN
        estimate.user_prompt_tokens //= CHARS_PER_TOKEN  # (summed in characters)
        estimate.judge_completion_tokens = (
            estimate.judgments // max(1, requests_per_item) * judge_completion * self.repeats
        )
        samples = benchmark.samples
        turns = sum(len(s.judged_turns()) for s in samples)
        what = (
            f"{len(self.pairs())} pair(s) x 2 orders ({self.judging})"
            if self.pairwise
            else f"{len(self.models)} model(s)"
        )
        if self.repeats > 1:
            what += f" x {self.repeats} repeats"
        if self.arms:
            what += f", with the stress arms {', '.join(arm.kind for arm in self.arms)}"
        if estimate.user_turns:
            what += f", {estimate.user_turns} user turns written by the user model"
        estimate.notes.append(
            f"{len(samples)} {benchmark.sample_noun}, {turns} judged turns x {what}; "
            + (
                "prompt sizes assume every answer uses its whole token limit; "
                if self.mode == "run"
                else "prompt sizes from the answers given; "
            )
            + "re-asks (at most "
            + f"{max((j.max_reasks for j in self.judges), default=0)} per judgment) are not "
            "counted."
        )
        return estimate
