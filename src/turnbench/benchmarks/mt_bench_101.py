"""MT-Bench-101 (Bai et al. 2024): 1388 golden dialogues in 13 tasks, every turn judged 1-10.

Rules follow OpenCompass's port (see docs/BENCHMARKS.md in the shared folder): golden
context (the model answers turn k after the dataset's turns 1..k-1, so every judged turn is
an independent request), the first turn of six tasks neither answered nor judged, the
official judge texts, OpenCompass's `[digits]` rating regex as the `compat` parser, and
dialogue score = minimum over its turns. turnbench adds `--context self` (the model sees its
own earlier answers), a `golden-answer` reference mode for MR/GR, strict parsing with
bounded re-asks, and dialogues with an unscored turn reported instead of silently scored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

from turnbench.benchmarks.base import (
    CHARS_PER_TOKEN,
    AnswerSet,
    Benchmark,
    Job,
    PlanEstimate,
    Settings,
    final_judgments,
    require_distinct_models,
)
from turnbench.benchmarks.mt_bench_101_data import (
    DIALOGUES,
    JUDGE_PROMPTS,
    Dialogue,
    DialogueAnswerSet,
    judged_turns,
    load_answer_set,
    load_dialogues,
    load_judge_texts,
    load_run_answer_sets,
)
from turnbench.benchmarks.mt_bench_101_prompts import (
    Pair,
    ReferenceMode,
    answer_messages,
    earlier_pairs,
    judge_messages,
    judge_system_prompt,
    reference_text,
    render_history,
)
from turnbench.benchmarks.mt_bench_101_scoring import (
    TASK_CODES,
    TASK_INFO,
    TurnOutcome,
    score_tables,
    stratified_bootstrap_ci,
)
from turnbench.benchmarks.run_answers import answer_sources, is_run_dir
from turnbench.cleaning import strip_reasoning
from turnbench.config import RunConfig
from turnbench.errors import UserError
from turnbench.runner import RunContext
from turnbench.types import AnswerRecord, LogRecord, Message, RequestParams

PARSER_NAMES = {"strict": "rating-strict", "compat": "rating-opencompass"}
CONTEXTS = ("golden", "self")
REFERENCE_MODES = ("compat", "golden-answer")
ANSWER_TEMPERATURE = 0.0  # the paper generates answers greedily
Context = Literal["golden", "self"]


def answer_key(model: str, dialogue_id: int, turn: int) -> str:
    return f"answer|{model}|{dialogue_id}|{turn}"


def judgment_key(judge: str, model: str, dialogue_id: int, turn: int) -> str:
    return f"judgment|{judge}|{model}|{dialogue_id}|{turn}"


def select_dialogues(dialogues: list[Dialogue], limit: int | None) -> list[Dialogue]:
    """The `limit` lowest-id dialogues of every task (all of them without a limit)."""
    ordered = sorted(dialogues, key=lambda d: d.id)
    if limit is None:
        return ordered
    taken: dict[str, int] = {}
    chosen = []
    for dialogue in ordered:
        if taken.get(dialogue.task, 0) < limit:
            taken[dialogue.task] = taken.get(dialogue.task, 0) + 1
            chosen.append(dialogue)
    return chosen


def _option(options: Mapping[str, Any], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = options.get(name, default)
    if value not in allowed:
        flag = "--" + name.replace("_", "-")
        raise UserError(f"{flag} {value!r} is not one of: {', '.join(allowed)}")
    return str(value)


class MTBench101(Benchmark):
    name = "mt-bench-101"
    PARSERS = PARSER_NAMES
    dataset = "mt-bench-101"
    description = (
        "MT-Bench-101: 1388 golden dialogues in 13 multi-turn tasks, every turn graded 1-10"
    )

    def __init__(self, files: dict[str, Path], settings: Settings) -> None:
        super().__init__(files, settings)
        unknown = sorted(set(settings.options) - {"context", "reference_mode"})
        if unknown:
            raise UserError(
                f"mt-bench-101 has no option {', '.join(unknown)} (pairwise judging is "
                "MT-Bench only)"
            )
        self.context = cast(Context, _option(settings.options, "context", "golden", CONTEXTS))
        self.reference_mode = cast(
            ReferenceMode,
            _option(settings.options, "reference_mode", "compat", REFERENCE_MODES),
        )
        if settings.parser not in PARSER_NAMES:
            raise UserError(f"unknown parser {settings.parser!r} (use strict or compat)")
        self.texts = load_judge_texts(files[JUDGE_PROMPTS])
        self.dialogues = load_dialogues(files[DIALOGUES])
        self.by_id = {d.id: d for d in self.dialogues}
        self.skip_first = frozenset(self.texts.skip_first_turn_tasks)
        self.reference_tasks = frozenset(self.texts.reference_tasks)
        for dialogue in self.dialogues:
            if dialogue.task not in TASK_INFO:
                raise UserError(
                    f"{files[DIALOGUES]}: dialogue {dialogue.id} has unknown task {dialogue.task!r}"
                )
            if dialogue.task not in self.texts.task_rubrics:
                raise UserError(f"{files[JUDGE_PROMPTS]}: no rubric for task {dialogue.task!r}")
        self.planned = select_dialogues(self.dialogues, settings.limit)
        self.turns: list[tuple[Dialogue, int]] = [
            (d, t) for d in self.planned for t in judged_turns(d, self.skip_first)
        ]
        self.tasks = [code for code in TASK_CODES if any(d.task == code for d in self.planned)]

    # -- settings --------------------------------------------------------------------------
    def prompt_versions(self) -> dict[str, str]:
        commit = str(self.texts.source.get("commit", "unknown"))[:12]
        versions = {
            "judge_prompts": f"opencompass-mtbench101@{commit}",
            "parser": self.parser_name,
        }
        if self.settings.parser == "strict" and self.settings.max_reasks > 0:
            versions["reask"] = self.rating_followup().label
        return versions

    def config_options(self) -> dict[str, Any]:
        return {"context": self.context, "reference_mode": self.reference_mode}

    def answer_params(self) -> RequestParams:
        sampling = self.settings.answer_sampling
        assert sampling is not None
        temperature = (
            sampling.temperature if sampling.temperature is not None else ANSWER_TEMPERATURE
        )
        return RequestParams(
            temperature=temperature, max_tokens=sampling.max_tokens, n=1, extra=sampling.extra
        )

    def _earlier(self, dialogue: Dialogue, turn: int, own: Mapping[int, str]) -> list[Pair]:
        """What precedes `turn` for this run's context (own answers only with `self`)."""
        return earlier_pairs(
            dialogue,
            turn,
            own if self.context == "self" else None,
            keep_golden_first=dialogue.task in self.skip_first,
        )

    def _reference(self, dialogue: Dialogue, turn: int) -> str | None:
        if dialogue.task not in self.reference_tasks:
            return None
        return reference_text(dialogue, turn, self.reference_mode)

    def answer_request(
        self, dialogue: Dialogue, turn: int, own: Mapping[int, str]
    ) -> list[Message]:
        """The model's request for `turn`; `own` (its earlier answers) is used with `self`."""
        sampling = self.settings.answer_sampling
        return answer_messages(
            sampling.system_prompt if sampling else None,
            self._earlier(dialogue, turn, own),
            dialogue.history[turn - 1].user,
        )

    def judge_request(
        self, dialogue: Dialogue, turn: int, answer: str, own: Mapping[int, str]
    ) -> tuple[str, list[Message]]:
        """(prompt name, messages) judging `answer` in the conversation it answered."""
        reference = self._reference(dialogue, turn)
        messages = judge_messages(
            self.texts,
            dialogue.task,
            self._earlier(dialogue, turn, own),
            dialogue.history[turn - 1].user,
            answer,
            reference,
        )
        name = f"mtbench101-{dialogue.task}"
        if reference is not None:
            name += f"+ref-{self.reference_mode}"
        return name, messages

    # -- work ------------------------------------------------------------------------------
    async def _judge_turn(
        self,
        ctx: RunContext,
        model: str,
        dialogue: Dialogue,
        turn: int,
        answer: str,
        own: Mapping[int, str],
    ) -> None:
        prompt_name, messages = self.judge_request(dialogue, turn, answer, own)
        await self.rate(
            ctx,
            key=judgment_key(self.settings.judge, model, dialogue.id, turn),
            model=model,
            sample_id=dialogue.id,
            turn=turn,
            prompt_name=prompt_name,
            messages=messages,
            meta={"task": dialogue.task},
        )

    async def _answer_turn(
        self, ctx: RunContext, model: str, dialogue: Dialogue, turn: int, own: Mapping[int, str]
    ) -> AnswerRecord | None:
        return await ctx.answer(
            key=answer_key(model, dialogue.id, turn),
            model=model,
            sample_id=dialogue.id,
            turn=turn,
            messages=self.answer_request(dialogue, turn, own),
            params=self.answer_params(),
            meta={"task": dialogue.task, "context": self.context},
        )

    def run_jobs(self, ctx: RunContext, model: str) -> list[Job]:
        async def golden_turn(dialogue: Dialogue, turn: int) -> None:
            record = await self._answer_turn(ctx, model, dialogue, turn, {})
            if record is not None:
                await self._judge_turn(ctx, model, dialogue, turn, record.text, {})

        async def self_dialogue(dialogue: Dialogue) -> None:
            own: dict[int, str] = {}
            judging: list[asyncio.Task[None]] = []
            try:
                for turn in judged_turns(dialogue, self.skip_first):
                    record = await self._answer_turn(ctx, model, dialogue, turn, own)
                    if record is None:  # never send a failed answer onward
                        break
                    judging.append(
                        asyncio.create_task(
                            self._judge_turn(ctx, model, dialogue, turn, record.text, dict(own))
                        )
                    )
                    own[turn] = record.text
                await asyncio.gather(*judging)
            finally:
                for task in judging:
                    task.cancel()

        if self.context == "self":
            return [lambda d=d: self_dialogue(d) for d in self.planned]
        return [lambda d=d, t=t: golden_turn(d, t) for d, t in self.turns]

    def judge_jobs(self, ctx: RunContext, answer_sets: list[AnswerSet]) -> list[Job]:
        async def one(answer_set: DialogueAnswerSet, dialogue: Dialogue, turn: int) -> None:
            own = answer_set.turns[dialogue.id]
            record = ctx.import_answer(
                key=answer_key(answer_set.model, dialogue.id, turn),
                model=answer_set.model,
                sample_id=dialogue.id,
                turn=turn,
                text=own[turn],
                meta={"task": dialogue.task},
            )
            if self.context == "self":  # earlier answers as the judge will see them
                own = {t: strip_reasoning(text) for t, text in own.items() if t < turn}
            # the judged text is the recorded one (cleaned as generated answers are)
            await self._judge_turn(ctx, answer_set.model, dialogue, turn, record.text, own)

        sets = [cast(DialogueAnswerSet, s) for s in answer_sets]
        return [lambda s=s, d=d, t=t: one(s, d, t) for s in sets for d, t in self.turns]

    def planned_keys(self, mode: str, models: list[str]) -> dict[str, set[str]]:
        judge = self.settings.judge
        keys = {
            "judgments": {judgment_key(judge, m, d.id, t) for m in models for d, t in self.turns}
        }
        if mode == "run":
            keys["answers"] = {answer_key(m, d.id, t) for m in models for d, t in self.turns}
        return keys

    def estimate(self, mode: str, models: int) -> PlanEstimate:
        sampling = self.settings.answer_sampling
        answer_limit = sampling.max_tokens if sampling else 0
        answer_chars = answer_limit * CHARS_PER_TOKEN
        generating = mode == "run"
        answer_prompt = judge_prompt = 0
        for dialogue, turn in self.turns:
            own = {t: "x" * answer_chars for t in range(1, turn)} if self.context == "self" else {}
            earlier = self._earlier(dialogue, turn, own)
            user = dialogue.history[turn - 1].user
            if generating:
                answer_prompt += sum(len(q) + len(a) for q, a in earlier) + len(user)
            judge_prompt += len(judge_system_prompt(self.texts, dialogue.task))
            judge_prompt += len(self.texts.user_prompt_template_with_reference)
            judge_prompt += len(render_history(earlier, user)) + answer_chars
            reference = self._reference(dialogue, turn)
            judge_prompt += len(reference) if reference is not None else 0
        turns = len(self.turns) * models
        estimate = PlanEstimate(
            answers=turns if generating else 0,
            judgments=turns,
            answer_prompt_tokens=answer_prompt * models // CHARS_PER_TOKEN,
            answer_completion_tokens=turns * answer_limit if generating else 0,
            judge_prompt_tokens=judge_prompt * models // CHARS_PER_TOKEN,
            judge_completion_tokens=turns * self.settings.judge_sampling.max_tokens,
        )
        estimate.notes.append(
            f"{len(self.planned)} dialogues, {len(self.turns)} judged turns x {models} "
            f"model(s); {self.context} context, reference mode {self.reference_mode}; prompt "
            "sizes assume every answer uses its whole token limit; re-asks (at most "
            f"{self.settings.max_reasks} per judgment) are not counted."
        )
        return estimate

    def load_answers(self, path: Path) -> list[AnswerSet]:
        """JSONL answer files and/or earlier turnbench run directories (one model each)."""
        planned = [(d.id, t) for d, t in self.turns]
        sets: list[AnswerSet] = []
        for source in answer_sources(path):
            if is_run_dir(source):
                sets.extend(load_run_answer_sets(source, self.by_id, planned))
            else:
                sets.append(load_answer_set(source, self.by_id, self.skip_first, planned))
        return require_distinct_models(path, sets)

    # -- results ---------------------------------------------------------------------------
    def model_results(
        self, records: list[LogRecord], config: RunConfig, model: str
    ) -> dict[str, Any]:
        judgments = final_judgments(records, config.judge, model)
        outcomes: list[TurnOutcome] = []
        failures: list[dict[str, Any]] = []
        reasks = 0
        for dialogue, turn in self.turns:
            record = judgments.get(judgment_key(config.judge, model, dialogue.id, turn))
            if record is None:
                outcomes.append(TurnOutcome(dialogue.task, dialogue.id, turn, "pending"))
                continue
            reasks += record.reasks
            if record.status == "scored" and record.score is not None:
                outcomes.append(
                    TurnOutcome(dialogue.task, dialogue.id, turn, "scored", record.score)
                )
            else:
                outcomes.append(TurnOutcome(dialogue.task, dialogue.id, turn, "failed"))
                failures.append(
                    {
                        "id": dialogue.id,
                        "task": dialogue.task,
                        "turn": turn,
                        "reason": record.parse_error,
                    }
                )
        mode = cast(Literal["strict", "compat"], config.parser)
        tables, dialogue_scores = score_tables(outcomes, self.tasks, mode)
        interval = None
        if tables["overall"] is not None:
            interval = stratified_bootstrap_ci(
                [list(dialogue_scores.scores[task].values()) for task in self.tasks]
            )
        judged = sum(o.status == "scored" for o in outcomes)
        failed = len(failures)
        pending = len(outcomes) - judged - failed
        answers = {r.key for r in records if isinstance(r, AnswerRecord) and r.model == model}
        options = config.options
        return {
            "benchmark": self.name,
            "model": model,
            "judge": config.judge,
            "complete": pending == 0,
            "context": options.get("context", self.context),
            "reference_mode": options.get("reference_mode", self.reference_mode),
            **tables,
            "overall_ci95": list(interval) if interval else None,
            "counts": {
                "expected": len(outcomes),
                "judged": judged,
                "failed": failed,
                "pending": pending,
                "reasks": reasks,
                "answers": len(answers),
                "dialogues": len(self.planned),
                "dialogues_scored": sum(len(s) for s in dialogue_scores.scores.values()),
                "incomplete_dialogues": len(dialogue_scores.incomplete),
                "dialogues_with_dropped_turns": len(dialogue_scores.dropped),
            },
            "incomplete_dialogue_ids": sorted(dialogue_scores.incomplete),
            "parse_failures": failures,
        }

    def render_table(self, results: dict[str, Any]) -> Any:
        from rich.console import Group

        from turnbench.report.terminal import fmt, score_table

        turn_numbers = [int(t) for t in results["by_turn"]]
        headers = ["task", "score", "avg", *(f"t{t}" for t in turn_numbers)]
        rows: list[list[Any]] = []
        for task, value in results["by_task"].items():
            per_turn = results["by_task_turn"].get(task, {})
            rows.append(
                [
                    f"{task} {TASK_INFO[task].name}",
                    value,
                    results["by_task_mean_over_turns"].get(task),
                    *(per_turn.get(str(t), "") for t in turn_numbers),
                ]
            )
        table = score_table(
            f"MT-Bench-101: {results['model']} ({results['context']} context)", headers, rows
        )
        table.columns[0].no_wrap = True  # narrow terminals shorten names, never numbers
        table.add_section()
        tier1 = {info.tier1 for info in TASK_INFO.values()}
        for name, value in results["by_ability"].items():
            level = 1 if name in tier1 else 2
            table.add_row(f"{name} (tier {level})", fmt(value), *([""] * (len(headers) - 2)))
        table.add_section()
        table.add_row(
            "[bold]overall[/bold]",
            f"[bold]{fmt(results['overall'])}[/bold]",
            fmt(results["overall_mean_over_turns"]),
            *(fmt(results["by_turn"][str(t)]) for t in turn_numbers),
        )
        counts = results["counts"]
        notes = [
            "score = mean of dialogue scores (min over judged turns); avg = mean over "
            f"turns; tN = mean at turn N; {counts['dialogues_scored']}/{counts['dialogues']} "
            "dialogues scored"
        ]
        if counts["incomplete_dialogues"]:
            notes.append(
                f"[yellow]{counts['incomplete_dialogues']} incomplete dialogue(s) not scored"
                "[/yellow]"
            )
        if counts["dialogues_with_dropped_turns"]:
            notes.append(
                f"[yellow]{counts['dialogues_with_dropped_turns']} dialogue(s) scored without "
                "their unparseable turns (compat)[/yellow]"
            )
        return Group(table, " · ".join(notes))
