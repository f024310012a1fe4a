"""MT-Bench (Zheng et al. 2023): 80 two-turn questions, single-answer grading by a judge.

Rules follow FastChat's llm_judge exactly (see docs/BENCHMARKS.md in the shared folder):
per-category answer temperatures, self-generated history, the official judge prompts chosen
by name, reference answers for math/reasoning/coding, and FastChat's rating regexes as the
`compat` parser. turnbench's defaults differ only where FastChat is known to be wrong: no
name-matched system prompt, strict parsing with bounded re-asks, failures counted.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path
from typing import Any

from turnbench.benchmarks.base import (
    CHARS_PER_TOKEN,
    AnswerSet,
    Benchmark,
    Job,
    PlanEstimate,
    final_judgments,
    require_distinct_models,
)
from turnbench.benchmarks.mt_bench_data import (
    JUDGE_PROMPTS,
    QUESTIONS,
    REFERENCES,
    JudgePrompt,
    Question,
    load_answer_set,
    load_judge_prompts,
    load_questions,
    load_references,
)
from turnbench.benchmarks.run_answers import (
    answer_sources,
    is_run_dir,
    load_run_answer_sets,
)
from turnbench.config import RunConfig
from turnbench.data import sha256_file
from turnbench.errors import UserError
from turnbench.judging.fastchat_prompts import judge_request, reference_fields
from turnbench.runner import RunContext
from turnbench.scoring import bootstrap_group_cis, bootstrap_mean_ci, mean
from turnbench.types import AnswerRecord, LogRecord, Message, RequestParams

CATEGORY_TEMPERATURE = {
    "writing": 0.7,
    "roleplay": 0.7,
    "reasoning": 0.0,
    "math": 0.0,
    "coding": 0.0,
    "extraction": 0.0,
    "stem": 0.1,
    "humanities": 0.1,
}
DEFAULT_TEMPERATURE = 0.7  # FastChat's value for a category it does not know
REFERENCE_CATEGORIES = frozenset({"math", "reasoning", "coding"})
PARSER_NAMES = {"strict": "rating-strict", "compat": "rating-fastchat"}


def answer_temperature(category: str) -> float:
    return CATEGORY_TEMPERATURE.get(category, DEFAULT_TEMPERATURE)


def judge_prompt_name(category: str, turn: int) -> str:
    base = "single-math-v1" if category in REFERENCE_CATEGORIES else "single-v1"
    return base if turn == 1 else f"{base}-multi-turn"


def render_single_judgment(
    prompt: JudgePrompt,
    question: Question,
    answers: list[str],
    references: list[str] | None,
    turn: int,
) -> list[Message]:
    """The exact request FastChat sends: [system, user], template filled by str.format."""
    if turn == 1:
        fields = {"question": question.turns[0], "answer": answers[0]}
    else:
        fields = {
            "question_1": question.turns[0],
            "question_2": question.turns[1],
            "answer_1": answers[0],
            "answer_2": answers[1],
        }
    return judge_request(prompt, fields | reference_fields(references, turn))


def answer_messages(
    system_prompt: str | None, question: Question, previous: list[str], turn: int
) -> list[Message]:
    """[system?, q1, a1, ..., q_turn]: the model sees its own earlier answers."""
    messages: list[Message] = []
    if system_prompt is not None:
        messages.append({"role": "system", "content": system_prompt})
    for index in range(turn - 1):
        messages.append({"role": "user", "content": question.turns[index]})
        messages.append({"role": "assistant", "content": previous[index]})
    messages.append({"role": "user", "content": question.turns[turn - 1]})
    return messages


def _as_list(interval: tuple[float, float] | None) -> list[float] | None:
    return list(interval) if interval else None


def answer_key(model: str, question_id: int, turn: int) -> str:
    return f"answer|{model}|{question_id}|{turn}"


def judgment_key(judge: str, model: str, question_id: int, turn: int) -> str:
    return f"judgment|{judge}|{model}|{question_id}|{turn}"


def select_questions(questions: list[Question], limit: int | None) -> list[Question]:
    """The first `limit` questions of every category (file order), or all of them."""
    if limit is None:
        return list(questions)
    taken: dict[str, int] = defaultdict(int)
    chosen = []
    for question in questions:
        if taken[question.category] < limit:
            taken[question.category] += 1
            chosen.append(question)
    return chosen


class MTBench(Benchmark):
    name = "mt-bench"
    PARSERS = PARSER_NAMES
    dataset = "mt-bench"
    description = "MT-Bench: 80 two-turn questions in 8 categories, graded 1-10 by a judge"

    def __init__(self, files: dict[str, Path], settings) -> None:
        super().__init__(files, settings)
        self.questions = load_questions(files[QUESTIONS])
        self.by_id = {q.question_id: q for q in self.questions}
        self.prompts = load_judge_prompts(files[JUDGE_PROMPTS])
        self.references = load_references(files[REFERENCES], self.by_id)
        self._reference_sha: str | None = None
        if settings.reference_file is not None:
            path = Path(settings.reference_file)
            self.references.update(load_references(path, self.by_id))
            self._reference_sha = sha256_file(path)
        self.planned = select_questions(self.questions, settings.limit)
        for question in self.planned:
            for turn in (1, 2):
                name = judge_prompt_name(question.category, turn)
                if name not in self.prompts:
                    raise UserError(f"{files[JUDGE_PROMPTS]}: judge prompt {name!r} missing")
            if (
                question.category in REFERENCE_CATEGORIES
                and question.question_id not in self.references
            ):
                raise UserError(
                    f"no reference answer for question {question.question_id} ({question.category})"
                )
        if settings.parser not in PARSER_NAMES:
            raise UserError(f"unknown parser {settings.parser!r} (use strict or compat)")

    # -- settings --------------------------------------------------------------------------
    def prompt_versions(self) -> dict[str, str]:
        versions = {
            "judge_prompts": "fastchat:"
            + ",".join(
                sorted({judge_prompt_name(q.category, t) for q in self.planned for t in (1, 2)})
            ),
            "parser": self.parser_name,
        }
        if self.settings.parser == "strict" and self.settings.max_reasks > 0:
            versions["reask"] = self.rating_followup().label
        return versions

    def config_options(self) -> dict[str, Any]:
        return {}

    def reference_sha256(self) -> str | None:
        return self._reference_sha

    def answer_params(self, question: Question) -> RequestParams:
        sampling = self.settings.answer_sampling
        assert sampling is not None
        temperature = (
            sampling.temperature
            if sampling.temperature is not None
            else answer_temperature(question.category)
        )
        return RequestParams(
            temperature=temperature, max_tokens=sampling.max_tokens, n=1, extra=sampling.extra
        )

    def _references_for(self, question: Question) -> list[str] | None:
        if question.category in REFERENCE_CATEGORIES:
            return self.references[question.question_id]
        return None

    # -- work ------------------------------------------------------------------------------
    async def _judge_turn(
        self, ctx: RunContext, model: str, question: Question, answers: list[str], turn: int
    ) -> None:
        name = judge_prompt_name(question.category, turn)
        messages = render_single_judgment(
            self.prompts[name], question, answers, self._references_for(question), turn
        )
        await self.rate(
            ctx,
            key=judgment_key(self.settings.judge, model, question.question_id, turn),
            model=model,
            sample_id=question.question_id,
            turn=turn,
            prompt_name=name,
            messages=messages,
            meta={"category": question.category},
        )

    def run_jobs(self, ctx: RunContext, model: str) -> list[Job]:
        sampling = self.settings.answer_sampling
        system_prompt = sampling.system_prompt if sampling else None

        async def one(question: Question) -> None:
            answers: list[str] = []
            judging: list[asyncio.Task] = []
            try:
                for turn in range(1, len(question.turns) + 1):
                    record = await ctx.answer(
                        key=answer_key(model, question.question_id, turn),
                        model=model,
                        sample_id=question.question_id,
                        turn=turn,
                        messages=answer_messages(system_prompt, question, answers, turn),
                        params=self.answer_params(question),
                        meta={"category": question.category},
                    )
                    if record is None:  # never send a failed answer onward
                        break
                    answers.append(record.text)
                    judging.append(
                        asyncio.create_task(
                            self._judge_turn(ctx, model, question, list(answers), turn)
                        )
                    )
                await asyncio.gather(*judging)
            finally:
                for task in judging:
                    task.cancel()

        return [lambda q=q: one(q) for q in self.planned]

    def judge_jobs(self, ctx: RunContext, answer_sets: list[AnswerSet]) -> list[Job]:
        async def one(answer_set: AnswerSet, question: Question) -> None:
            answers = answer_set.answers[question.question_id]
            for turn, text in enumerate(answers, start=1):
                ctx.import_answer(
                    key=answer_key(answer_set.model, question.question_id, turn),
                    model=answer_set.model,
                    sample_id=question.question_id,
                    turn=turn,
                    text=text,
                    meta={"category": question.category},
                )
            await asyncio.gather(
                *(
                    self._judge_turn(ctx, answer_set.model, question, answers, turn)
                    for turn in range(1, len(answers) + 1)
                )
            )

        return [lambda s=s, q=q: one(s, q) for s in answer_sets for q in self.planned]

    def planned_keys(self, mode: str, models: list[str]) -> dict[str, set[str]]:
        turns = [(q.question_id, t) for q in self.planned for t in range(1, len(q.turns) + 1)]
        judge = self.settings.judge
        keys = {"judgments": {judgment_key(judge, m, q, t) for m in models for q, t in turns}}
        if mode == "run":
            keys["answers"] = {answer_key(m, q, t) for m in models for q, t in turns}
        return keys

    def estimate(self, mode: str, models: int) -> PlanEstimate:
        sampling = self.settings.answer_sampling
        answer_limit = sampling.max_tokens if sampling else 0
        answer_chars = answer_limit * CHARS_PER_TOKEN
        answer_prompt = judge_prompt = 0
        for question in self.planned:
            q1, q2 = (len(t) for t in question.turns[:2])
            answer_prompt += q1 + (q1 + answer_chars + q2)
            refs = self._references_for(question)
            for turn in (1, 2):
                prompt = self.prompts[judge_prompt_name(question.category, turn)]
                size = len(prompt.system_prompt) + len(prompt.prompt_template)
                size += (q1 + answer_chars) if turn == 1 else (q1 + q2 + 2 * answer_chars)
                if refs is not None:
                    size += sum(len(r) for r in refs[:turn])
                judge_prompt += size
        turns = 2 * len(self.planned) * models
        generating = mode == "run"
        estimate = PlanEstimate(
            answers=turns if generating else 0,
            judgments=turns,
            answer_prompt_tokens=answer_prompt * models // CHARS_PER_TOKEN if generating else 0,
            answer_completion_tokens=turns * answer_limit if generating else 0,
            judge_prompt_tokens=judge_prompt * models // CHARS_PER_TOKEN,
            judge_completion_tokens=turns * self.settings.judge_sampling.max_tokens,
        )
        estimate.notes.append(
            f"{len(self.planned)} questions x 2 turns x {models} model(s); prompt sizes assume "
            "every answer uses its whole token limit; re-asks (at most "
            f"{self.settings.max_reasks} per judgment) are not counted."
        )
        return estimate

    def load_answers(self, path: Path) -> list[AnswerSet]:
        """FastChat answer files and/or earlier turnbench run directories."""
        planned = [q.question_id for q in self.planned]
        turns_of = {q.question_id: len(q.turns) for q in self.questions}
        sets: list[AnswerSet] = []
        for source in answer_sources(path):
            if is_run_dir(source):
                sets.extend(load_run_answer_sets(source, turns_of, planned))
            else:
                sets.append(load_answer_set(source, self.by_id, planned))
        return require_distinct_models(path, sets)

    # -- results ---------------------------------------------------------------------------
    def model_results(
        self, records: list[LogRecord], config: RunConfig, model: str
    ) -> dict[str, Any]:
        judgments = final_judgments(records, config.judge, model)
        planned_keys = {
            judgment_key(config.judge, model, q.question_id, turn): q
            for q in self.planned
            for turn in range(1, len(q.turns) + 1)
        }
        scored: list[tuple[Question, int, float]] = []
        failed: list[dict[str, Any]] = []
        reasks = 0
        for key, question in planned_keys.items():
            record = judgments.get(key)
            if record is None:
                continue
            reasks += record.reasks
            if record.status == "scored" and record.score is not None:
                scored.append((question, record.turn, record.score))
            else:
                failed.append(
                    {
                        "question_id": question.question_id,
                        "turn": record.turn,
                        "reason": record.parse_error,
                    }
                )
        expected = len(planned_keys)
        pending = expected - len(scored) - len(failed)
        by_turn = {str(t): mean(s for _, turn, s in scored if turn == t) for t in (1, 2)}
        categories = list(dict.fromkeys(q.category for q in self.planned))
        by_category = {c: mean(s for q, _, s in scored if q.category == c) for c in categories}
        by_category_turn = {
            c: {
                str(t): mean(s for q, turn, s in scored if q.category == c and turn == t)
                for t in (1, 2)
            }
            for c in categories
        }
        per_question: dict[int, list[float]] = defaultdict(list)
        for question, _, score in scored:
            per_question[question.question_id].append(score)
        interval = bootstrap_mean_ci(list(per_question.values()))
        turn_cis = bootstrap_group_cis((str(t), q.question_id, s) for q, t, s in scored)
        category_cis = bootstrap_group_cis((q.category, q.question_id, s) for q, _, s in scored)
        answers = [r for r in records if isinstance(r, AnswerRecord) and r.model == model]
        return {
            "benchmark": self.name,
            "model": model,
            "judge": config.judge,
            "complete": pending == 0,
            "overall": mean(s for _, _, s in scored),
            "overall_ci95": list(interval) if interval else None,
            "by_turn": by_turn,
            "by_turn_ci95": {t: _as_list(turn_cis.get(t)) for t in by_turn},
            "by_category": by_category,
            "by_category_ci95": {c: _as_list(category_cis.get(c)) for c in categories},
            "by_category_turn": by_category_turn,
            "counts": {
                "expected": expected,
                "judged": len(scored),
                "failed": len(failed),
                "pending": pending,
                "reasks": reasks,
                "answers": len({r.key for r in answers}),
            },
            "parse_failures": failed,
        }

    def render_table(self, results: dict[str, Any]):
        from turnbench.report.terminal import score_table

        rows = [
            (
                category,
                results["by_category_turn"][category]["1"],
                results["by_category_turn"][category]["2"],
                value,
            )
            for category, value in results["by_category"].items()
        ]
        totals = ("overall", results["by_turn"]["1"], results["by_turn"]["2"], results["overall"])
        return score_table(
            f"MT-Bench: {results['model']}", ["category", "turn 1", "turn 2", "mean"], rows, totals
        )
