"""Judgments: each judge is a role (its id is its name) asked on the one path, its re-asks
its own policy (`judging.reask.JudgeReasks`), every judgment logged with its raw replies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from turnbench.engine.judgment_records import judge_requests, judgment_record
from turnbench.engine.requests import About, FirstViaBatch, RequestPath, Role
from turnbench.journal.logindex import JudgmentDone
from turnbench.judging.reask import JudgeOutcome, JudgeReasks
from turnbench.judging.weighted import expected_rating
from turnbench.types import JudgmentRecord

if TYPE_CHECKING:
    from turnbench.judging.formats import ReplyFormat
    from turnbench.judging.judge import Judge
    from turnbench.samples import JudgeTask, Sample


class Judgments(RequestPath):
    """The judges' judgments (`RunContext` is one)."""

    #: judgment keys not requested because the answer ended inside <think> (results
    #: count those turns as failed; nothing is logged, so a resume skips them again)
    not_judged: set[str]
    _fallback_said: bool = False

    def skip_judgments(self, keys: Sequence[str]) -> None:
        """Judgments that are not requested: the answer was cut off inside <think>."""
        for key in keys:
            if key not in self.not_judged:
                self.not_judged.add(key)
                self.progress.advance("judgments", "not judged")

    async def judgment(
        self,
        judge: Judge,
        task: JudgeTask,
        reply: ReplyFormat,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        pair: tuple[str, str] | None = None,
        order: Literal["AB", "BA"] | None = None,
        repeat: int = 0,
        meta: Mapping[str, object] | None = None,
        arm: str | None = None,
    ) -> JudgmentRecord | JudgmentDone | None:
        """One judgment (the logged one when `key` is done); `meta` is kept in the record
        (e.g. the guard's boundary, so the request can be rebuilt)."""
        cached = self.done.get(key)
        if isinstance(cached, JudgmentDone):
            return cached
        role = self.roles.get(judge.id)
        if role is None:
            role = self.roles[judge.id] = Role(judge.id, judge.backend)
        queue = role.batch
        batched = FirstViaBatch(queue, key, judge.backend) if queue is not None else None
        worst = self.costs.worst_judgment(judge, task.messages, reply) if self.costs else 0.0
        about = About(model, sample, turn, judge=judge.id, pair=pair, arm=arm)
        params, reask_params = judge.request_params(reply)
        policy = JudgeReasks(task.messages, params, reply, judge.settings.max_reasks, reask_params)
        self.counters.judgments_requested += 1
        asked = await self.exchange(
            judge.id, task.messages, params, key=key, stage="judgment", about=about,
            worst=worst, policy=policy, through=batched,
        )  # fmt: skip
        if asked is None:
            return None
        outcome = policy.outcome(asked)
        if judge.settings.scoring == "weighted" and reply.weighted and outcome.result.ok:
            logprobs = outcome.last.logprobs if outcome.last is not None else None
            outcome.weighted = expected_rating(logprobs or [])
        self.counters.reasks += len(outcome.outputs) - 1
        if not outcome.result.ok:
            self.counters.parse_failures += 1
        record = judgment_record(
            judge, task, reply, outcome,
            key=key, model=model, sample=sample, turn=turn, pair=pair, order=order,
            repeat=repeat, meta=meta, arm=arm,
            scoring=self._scoring(judge, reply, outcome),
            batched=(batched.batch_id, batched.usage) if batched is not None else None,
        )  # fmt: skip
        tokens = None
        if self.budget.max_tokens is not None:
            tokens = self.ledger.budget_tokens(judge.id, judge_requests(task, reply, outcome))
        self.ledger.commit(record, judge.id, record.usage, record.batch_usage, tokens)
        self.progress.advance("judgments", "ok" if outcome.result.ok else "unparseable")
        return record

    def _scoring(self, judge: Judge, reply: ReplyFormat, outcome: JudgeOutcome) -> str | None:
        """How the score was made under --judge-scoring weighted (None otherwise); the first
        fall-back to the parsed rating (no logprobs from the server) is said once."""
        if judge.settings.scoring != "weighted" or not reply.weighted or not outcome.result.ok:
            return None
        if outcome.weighted is not None:
            return "weighted"
        if not self._fallback_said:
            self._fallback_said = True
            self.warn(
                f"{judge.id} returned no usable logprobs: its ratings fall back to the parsed "
                "ones (counted in results as weighted_fallbacks)"
            )
        return "parsed-fallback"
