"""Execution: skip what the log already holds, run the rest concurrently, log as we go.

The engine (`turnbench.engine.dialogue`) turns each sample into one coroutine that asks
`RunContext` for answers and judgments in the order the benchmark's rules need (turn 2 after
turn 1's answer, say). `RunContext` returns the logged record when the key is already done,
so re-running the same coroutines after a crash resumes exactly where the log ends and
repays nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from turnbench.backends.attempts import gated
from turnbench.backends.base import Backend
from turnbench.engine.costs import CHARS_PER_TOKEN, CostMeter, attempt_tokens
from turnbench.engine.progress import Progress
from turnbench.errors import (
    AttemptRefusedError,
    BudgetExhaustedError,
    FatalBackendError,
    RequestFailedError,
)
from turnbench.journal.logindex import AnswerDone, JudgmentDone, UserTurnDone
from turnbench.journal.runlog import RunLog
from turnbench.judging.cleaning import UNCLOSED_THINK, clean_answer
from turnbench.types import (
    AnswerRecord,
    AttemptRecord,
    Completion,
    FailureRecord,
    JudgmentRecord,
    Message,
    RequestParams,
    Usage,
    UserTurnRecord,
)

if TYPE_CHECKING:
    from turnbench.engine.batching import BatchQueue
    from turnbench.judging.config import UserSettings
    from turnbench.judging.formats import ReplyFormat
    from turnbench.judging.judge import Judge
    from turnbench.judging.reask import JudgeOutcome
    from turnbench.samples import JudgeTask, Sample, UserAsk, UserTurn

#: `JudgmentRecord.followup` when an unreadable reply was answered by sending the same
#: request again (a reference implementation's retry), not by a re-ask text
SAME_REQUEST = "same-request"
#: jobs started before the event loop gets to connect and send (execute)
START_SLICE = 16
#: --strict-user: re-asks of a user model whose turn broke a rule, before its turn is kept
#: as it is (its problems counted)
MAX_USER_REASKS = 2
#: what a re-ask of the user model says (versioned: the run's identity names it)
USER_REASK = (
    "Your last message broke the rules of your role ({problems}). Write that message again: "
    "only the user's next message, giving exactly what you were told to give, in the "
    "user's voice."
)
USER_REASK_LABEL = "user-reask-v1"


@dataclass
class Budget:
    """Limits of a run: `max_requests` and `max_tokens` of one invocation (a re-run starts
    them afresh), `max_cost` of the whole run, every invocation of it.

    `max_requests` counts answers and judgments started (a judgment's re-asks and any
    request's retries belong to it); `max_tokens` counts the prompt + completion tokens the
    server reported for what this invocation logged, or for a reply whose usage was missing
    or invalid (read as 0 prompt tokens) an estimate of 4 characters a token, as --dry-run
    estimates; `max_cost` the dollars of what the run's log holds (its records, and the worst
    case of every attempt that returned nothing: `AttemptRecord`) plus the worst case of
    every request in flight (the price table's), each retry admitted before it is sent.
    """

    max_requests: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None


@dataclass
class RunCounters:
    answers_requested: int = 0
    judgments_requested: int = 0
    request_failures: int = 0
    reasks: int = 0
    parse_failures: int = 0


class RunContext:
    """What the engine's jobs may do: get answers and judgments, idempotently."""

    def __init__(
        self,
        log: RunLog,
        *,
        model_backend: Backend | None,
        budget: Budget | None = None,
        progress: Progress | None = None,
        warn: Callable[[str], None] | None = None,
        strip_think: bool = True,
        batches: Mapping[str, BatchQueue] | None = None,
        costs: CostMeter | None = None,
        user_backend: Backend | None = None,
        user: UserSettings | None = None,
    ) -> None:
        self.log = log
        self.model_backend = model_backend
        self.user_backend = user_backend  # the simulated user's model, when one plays it
        self.user = user
        self.warn = warn or (lambda _message: None)
        self._fallback_said = False
        self.strip_think = strip_think  # remove <think> blocks before answers are judged
        self.budget = budget or Budget()
        self.progress = progress or Progress()
        self.done = log.index.done  # key -> compact finished work; appends update it
        self.counters = RunCounters()
        self.batches = dict(batches or {})  # role ("model" or a judge id) -> its batch queue
        self.costs = costs
        self._admitted = 0  # answers and judgments started in this invocation
        self._in_flight = 0
        self._tokens = 0  # tokens of the records this invocation logged
        self._estimate_said = False  # the warning that a server's usage is estimated
        self._dollars = 0.0  # what the records this invocation logged cost
        self._unanswered = 0.0  # the worst case of this invocation's unanswered attempts
        self._reserved = 0.0  # the worst-case dollars of the requests in flight
        # what earlier invocations of the run spent: their records, their unanswered attempts
        self._before = _logged_dollars(log, costs) if costs is not None else (0.0, 0.0)
        self._settled: asyncio.Event | None = None
        self._slots: dict[int, asyncio.Semaphore] = {}
        #: judgment keys not requested because the answer ended inside <think> (results
        #: count those turns as failed; nothing is logged, so a resume skips them again)
        self.not_judged: set[str] = set()
        #: answers being requested, by key (a second caller awaits the first one's request)
        self._answering: dict[str, asyncio.Future[AnswerRecord | AnswerDone | None]] = {}

    # -- bookkeeping -----------------------------------------------------------------------
    def _spent(self, worst: float = 0.0) -> str | None:
        """Why the budget allows no new request (whose cost is at most `worst` dollars), or
        None."""
        budget = self.budget
        if budget.max_requests is not None and self._admitted >= budget.max_requests:
            return f"--max-requests {budget.max_requests} reached"
        if budget.max_tokens is not None and self._tokens >= budget.max_tokens:
            return f"--max-tokens-total {budget.max_tokens} reached ({self._tokens} used)"
        return self._over_cost(worst)

    def _over_cost(self, worst: float) -> str | None:
        """Why --max-cost allows no request or attempt costing up to `worst`, or None."""
        limit = self.budget.max_cost
        if limit is None:
            return None
        before = sum(self._before)
        spent = before + self._dollars + self._unanswered
        if spent + self._reserved + worst <= limit:
            return None
        unanswered = self._before[1] + self._unanswered
        parts = [f"${spent:.4f} spent"]
        if before:
            parts.append(
                f"${before:.4f} of it by earlier invocations of this run (they count: raise "
                "--max-cost to continue)"
            )
        if unanswered:
            parts.append(f"${unanswered:.4f} of it at worst on attempts that returned nothing")
        reserved = max(0.0, self._reserved)  # (no "-0.0000" from rounding)
        return (
            f"--max-cost {limit:g} reached: {', '.join(parts)}, ${reserved:.4f} in "
            f"flight at worst, the next request could cost up to ${worst:.4f}"
        )

    @property
    def dollars(self) -> float:
        """What the records this invocation logged cost (with --max-cost or prices known)."""
        return self._dollars

    def _slot(self, backend: Backend) -> asyncio.Semaphore | None:
        """With a token budget, admit no more requests than the backend sends at once.

        Otherwise every waiting sample would pass the token check while usage is still low
        and then queue inside the backend, and the budget would stop nothing. Without a token
        budget the backend alone orders its queue (the local backend reorders it for KV-cache
        reuse).
        """
        if self.budget.max_tokens is None:
            return None
        slot = self._slots.get(id(backend))
        if slot is None:
            slot = asyncio.Semaphore(max(1, int(getattr(backend, "concurrency", 1))))
            self._slots[id(backend)] = slot
        return slot

    async def _stop(self, reason: str) -> None:
        """Let the requests in flight finish and be logged, then stop the run."""
        while self._in_flight:
            if self._settled is None or self._settled.is_set():
                self._settled = asyncio.Event()
            await self._settled.wait()
        raise BudgetExhaustedError(reason)

    @contextlib.asynccontextmanager
    async def _admitted_request(
        self,
        backend: Backend | None,
        worst: float = 0.0,
        *,
        key: str,
        stage: Literal["answer", "judgment", "user_turn"],
        role: str,
    ) -> AsyncIterator[None]:
        """Hold one admitted answer or judgment for the duration of the block.

        Checking and counting happen with no await in between, so concurrent samples cannot
        overshoot --max-requests or --max-cost (`worst`: the most the request can cost,
        reserved while it is in flight). Every retry the backend wants to send after an
        attempt that returned nothing is admitted the same way (`_Attempts`, the block's
        gate). Once the budget is spent, no new request starts; the ones already started
        finish and are logged (nothing paid for is thrown away), and only then does
        BudgetExhaustedError stop the run. `backend` None: the request goes into a provider
        batch (no concurrency slot: a batch holds all of them).
        """
        slot = self._slot(backend) if backend is not None else None
        if slot is not None:
            await slot.acquire()
        reason = self._spent(worst)
        if reason is not None:
            if slot is not None:
                slot.release()
            await self._stop(reason)
        self._admitted += 1
        self._in_flight += 1
        self._reserved += worst
        attempts = _Attempts(self, key=key, stage=stage, role=role, held=worst)
        try:
            with gated(attempts):
                yield
        finally:
            self._reserved -= attempts.held
            self._in_flight -= 1
            if self._in_flight == 0 and self._settled is not None:
                self._settled.set()
            if slot is not None:
                slot.release()

    def _attempt_worst(self, role: str, tokens: Usage) -> float:
        return self.costs.bound(role, tokens) if self.costs is not None else 0.0

    def _fail(
        self,
        key: str,
        stage: Literal["answer", "judgment", "user_turn"],
        error: RequestFailedError,
        *,
        model: str,
        sample: Sample,
        turn: int,
        judge: str | None = None,
        pair: tuple[str, str] | None = None,
        arm: str | None = None,
    ) -> None:
        self.counters.request_failures += 1
        batch_id = getattr(error, "batch_id", None)  # the provider reported the item failed
        self.log.append(
            FailureRecord(
                key=key,
                stage=stage,
                error=error.message,
                attempts=error.attempts,
                model=model,
                sample_id=sample.id,
                turn=turn,
                group=sample.group,
                judge=judge,
                pair=pair,
                meta={"batch": batch_id} if batch_id else {},
                arm=arm,
            )
        )
        self.progress.advance(f"{stage}s", "failed")

    # -- answers ---------------------------------------------------------------------------
    async def answer(
        self,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        messages: list[Message],
        params: RequestParams,
        arm: str | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> AnswerRecord | AnswerDone | None:
        """The answer to one turn: the logged one, else one requested now (live, or in the
        model's provider batch with --model-batch). `.text` is the cleaned answer. `arm`:
        the stress arm it is asked in, `meta` what its record keeps of the arm.

        Two callers asking for the same key at once (a stress arm needs the answer another
        sample's job is asking for) share the one request: the second gets its answer or its
        error; if the first caller is cancelled, the second asks for the answer itself."""
        while True:
            cached = self.done.get(key)
            if isinstance(cached, AnswerDone):
                return cached
            pending = self._answering.get(key)
            if pending is None:
                break
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not pending.cancelled() or (task is not None and task.cancelling()):
                    raise  # this caller was cancelled, not (only) the one it waited for
                # the asking caller was cancelled: its request is gone; ask again
        future: asyncio.Future[AnswerRecord | AnswerDone | None]
        future = asyncio.get_running_loop().create_future()
        self._answering[key] = future
        try:
            record = await self._request_answer(
                key=key,
                model=model,
                sample=sample,
                turn=turn,
                messages=messages,
                params=params,
                arm=arm,
                meta=meta,
            )
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # (retrieved: no warning when nobody else waited for it)
            raise
        finally:
            del self._answering[key]
        future.set_result(record)
        return record

    async def _request_answer(
        self,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        messages: list[Message],
        params: RequestParams,
        arm: str | None,
        meta: Mapping[str, object] | None,
    ) -> AnswerRecord | None:
        if self.model_backend is None:
            raise RuntimeError("this run has no model backend")
        queue = self.batches.get("model")
        worst = self.costs.worst_answer(messages, params) if self.costs else 0.0
        batch_id = None
        refused: str | None = None
        async with self._admitted_request(
            None if queue else self.model_backend, worst, key=key, stage="answer", role="model"
        ):
            self.counters.answers_requested += 1
            try:
                if queue is not None:
                    completion, batch_id = await queue.request(key, messages, params)
                else:
                    completion = await self.model_backend.complete(messages, params)
            except RequestFailedError as error:
                self._fail(key, "answer", error, model=model, sample=sample, turn=turn, arm=arm)
                if not isinstance(error, AttemptRefusedError):
                    return None
                refused = error.reason
        if refused is not None:
            await self._stop(refused)
        cleaned = clean_answer(completion.text, self.strip_think)
        text = cleaned.text
        record = AnswerRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            text=text,
            raw_text=completion.text if text != completion.text else None,
            meta={**(meta or {}), **({UNCLOSED_THINK: True} if cleaned.unclosed_think else {})},
            messages=messages,
            params=completion.sent_params,
            finish_reason=completion.finish_reason,
            usage=completion.usage,
            reported_model=completion.reported_model,
            system_fingerprint=completion.system_fingerprint,
            attempts=completion.attempts,
            latency_s=completion.latency_s,
            batch_id=batch_id,
            batch_usage=completion.usage if batch_id else None,
            endpoints=[completion.endpoint] if completion.endpoint else [],
            arm=arm,
        )
        tokens = None
        if self.budget.max_tokens is not None:
            tokens = self._budget_tokens(self.model_backend.spec, [(_chars(messages), completion)])
        self._commit(record, tokens)
        self.progress.advance("answers")
        return record

    # -- user turns (simulated conversations) ----------------------------------------------
    def logged_user_turn(self, key: str) -> UserTurnDone | None:
        """The user turn the log holds under `key` (a resumed conversation goes on with the
        same words), or None."""
        cached = self.done.get(key)
        return cached if isinstance(cached, UserTurnDone) else None

    def record_user_turn(
        self, *, key: str, model: str, sample: Sample, turn: int, made: UserTurn
    ) -> UserTurnRecord:
        """Log a user turn made by the benchmark's own template the moment it exists, before
        the model is asked to answer it."""
        record = UserTurnRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            origin=made.origin,
            text=made.text,
            revealed=list(made.revealed),
            problems=list(made.problems),
            ended=made.ended,
            meta=dict(made.meta),
        )
        self.log.append(record)
        return record

    async def ask_user(
        self, *, key: str, model: str, sample: Sample, turn: int, ask: UserAsk
    ) -> UserTurnRecord | None:
        """A user turn written by the user model now, logged at once; None when its request
        failed (a failure record; the conversation stops there and a resume asks again).

        With --strict-user a turn that breaks a rule (`UserTurn.problems`) is asked again,
        the reply and the rule it broke in the request, up to MAX_USER_REASKS times; the
        last one is kept either way, with its problems, and every reply is in `outputs`."""
        backend, settings = self.user_backend, self.user
        if backend is None or settings is None:
            raise RuntimeError("this run has no user model")
        sampling = settings.sampling
        extra = dict(sampling.extra)
        if ask.seed is not None:
            extra["seed"] = ask.seed
        params = RequestParams(
            temperature=sampling.temperature, max_tokens=sampling.max_tokens, n=1, extra=extra
        )
        asks = 1 + (MAX_USER_REASKS if settings.strict else 0)
        worst = self.costs.worst_user_turn(ask.messages, params, asks) if self.costs else 0.0
        messages = list(ask.messages)
        completions: list[Completion] = []
        made: UserTurn | None = None
        refused: str | None = None
        async with self._admitted_request(backend, worst, key=key, stage="user_turn", role="user"):
            try:
                while True:
                    completion = await backend.complete(messages, params)
                    completions.append(completion)
                    made = ask.read(completion.text)
                    if not made.problems or len(completions) >= asks:
                        break
                    problems = ", ".join(made.problems)
                    messages = [
                        *messages,
                        {"role": "assistant", "content": completion.text},
                        {"role": "user", "content": USER_REASK.format(problems=problems)},
                    ]
            except RequestFailedError as error:
                self._fail(key, "user_turn", error, model=model, sample=sample, turn=turn)
                if not isinstance(error, AttemptRefusedError):
                    return None
                refused = error.reason
        if refused is not None:
            await self._stop(refused)
        assert made is not None
        usage = Usage()
        for completion in completions:
            usage = usage + completion.usage
        record = UserTurnRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            origin="user-model",
            text=made.text,
            revealed=list(made.revealed),
            user=settings.spec,
            messages=ask.messages,
            outputs=[completion.text for completion in completions],
            problems=list(made.problems),
            ended=made.ended,
            params=completions[-1].sent_params,
            usage=usage,
            attempts=sum(completion.attempts for completion in completions),
            latency_s=round(sum(completion.latency_s for completion in completions), 4),
            endpoints=[c.endpoint for c in completions if c.endpoint],
            meta={**ask.meta, **made.meta, "reasks": len(completions) - 1},
        )
        self.log.append(record)
        self._tokens += usage.prompt_tokens + usage.completion_tokens
        if self.costs is not None:
            self._dollars += self.costs.cost("user", usage)
        return record

    def import_answer(
        self, *, key: str, model: str, sample: Sample, turn: int, text: str
    ) -> AnswerRecord | AnswerDone:
        """Record an answer read from a file, so the run directory is self-contained.
        `.text` of what it returns is the cleaned answer."""
        result = clean_answer(text, self.strip_think)
        cleaned = result.text
        cached = self.done.get(key)
        if isinstance(cached, AnswerDone) and cached.same_text(cleaned):
            if cached.text is None:
                cached.text = cleaned  # the answer set's own string: shared, not copied
            return cached
        record = AnswerRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            origin="imported",
            text=cleaned,
            raw_text=text if cleaned != text else None,
            meta={UNCLOSED_THINK: True} if result.unclosed_think else {},
        )
        self._commit(record)
        done = self.done.get(key)
        if isinstance(done, AnswerDone) and done.text is None:
            done.text = cleaned  # the answer set holds it anyway: results need not read it back
        return record

    # -- judgments -------------------------------------------------------------------------
    def skip_judgments(self, keys: Iterable[str]) -> None:
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
        queue = self.batches.get(judge.id)
        asking = judge if queue is None else _first_via_batch(judge, queue, key)
        worst = self.costs.worst_judgment(judge, task.messages, reply) if self.costs else 0.0
        refused: str | None = None
        async with self._admitted_request(
            None if queue else judge.backend, worst, key=key, stage="judgment", role=judge.id
        ):
            self.counters.judgments_requested += 1
            try:
                outcome = await asking.ask(task.messages, reply)
            except RequestFailedError as error:
                self._fail(
                    key,
                    "judgment",
                    error,
                    model=model,
                    sample=sample,
                    turn=turn,
                    judge=judge.id,
                    pair=pair,
                    arm=arm,
                )
                if not isinstance(error, AttemptRefusedError):
                    return None
                refused = error.reason
        if refused is not None:
            await self._stop(refused)
        batched = asking.backend if isinstance(asking.backend, _FirstViaBatch) else None
        last = outcome.last
        self.counters.reasks += len(outcome.outputs) - 1
        result = outcome.result
        if not result.ok:
            self.counters.parse_failures += 1
        kept: dict[str, object] = dict(meta or {})
        if pair is not None:  # also in `meta`, where schema-1 records kept them
            shown_b = pair[1] if pair[0] == model else pair[0]
            kept |= {"pair": list(pair), "order": order, "model_a": model, "model_b": shown_b}
        scoring = self._scoring(judge, reply, outcome)
        record = JudgmentRecord(
            key=key,
            judge=judge.id,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            criterion=task.criterion,
            repeat=repeat,
            pair=pair,
            order=order,
            prompt_name=task.prompt_name,
            messages=task.messages,
            params=last.sent_params if last else {},
            outputs=outcome.outputs,
            followup=_followup_label(reply, outcome),
            parser=reply.parser,
            status="scored" if result.ok else "parse_failed",
            score=outcome.weighted.value if outcome.weighted else result.score,
            scoring=scoring,
            parsed_score=result.score if outcome.weighted else None,
            rating_probabilities={str(k): p for k, p in outcome.weighted.probabilities.items()}
            if outcome.weighted
            else None,
            verdict=result.verdict,
            checklist=list(result.checklist) if result.checklist is not None else None,
            parse_error=result.error,
            usage=outcome.usage,
            reported_model=last.reported_model if last else None,
            system_fingerprint=last.system_fingerprint if last else None,
            attempts=outcome.attempts,
            latency_s=round(outcome.latency_s, 4),
            batch_id=batched.batch_id if batched else None,
            batch_usage=batched.usage if batched else None,
            endpoints=[c.endpoint for c in outcome.completions if c.endpoint],
            meta=kept,
            arm=arm,
        )
        tokens = None
        if self.budget.max_tokens is not None:
            tokens = self._budget_tokens(judge.id, _judge_requests(task, reply, outcome))
        self._commit(record, tokens)
        self.progress.advance("judgments", "ok" if result.ok else "unparseable")
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

    def _budget_tokens(self, who: str, exchanges: Iterable[tuple[int, Completion]]) -> int:
        """The tokens --max-tokens-total counts for the replies of one record.

        A reply's usage as the server reported it; but a reply whose usage was missing or
        invalid (negative, not numbers: read as 0, so it reads as 0 prompt tokens for a
        request that had some) would let the run slip past the budget, so it counts the
        --dry-run estimate instead (4 characters a token of the request's messages, and of
        the reply when no valid completion count came with it). `exchanges`: each reply
        with the characters of the request it answered. Said once per run.
        """
        total = 0
        for prompt_chars, completion in exchanges:
            usage = completion.usage
            if usage.prompt_tokens > 0 or prompt_chars < CHARS_PER_TOKEN:
                total += usage.prompt_tokens + usage.completion_tokens
                continue
            completion_tokens = usage.completion_tokens or len(completion.text) // CHARS_PER_TOKEN
            total += prompt_chars // CHARS_PER_TOKEN + completion_tokens
            if not self._estimate_said:
                self._estimate_said = True
                self.warn(
                    f"{who}: the server's token usage is missing or invalid (negative or not "
                    "numbers); --max-tokens-total counts an estimate for such replies instead "
                    f"({CHARS_PER_TOKEN} characters a token, as --dry-run estimates), and the "
                    "usage in results counts them as 0 tokens"
                )
        return total

    def _commit(self, record: AnswerRecord | JudgmentRecord, tokens: int | None = None) -> None:
        """Log a finished record (the log's index makes it done) and count what it cost;
        `tokens`: what the token budget counts for it (`_budget_tokens`), when not its usage."""
        self.log.append(record)
        if tokens is None:
            tokens = record.usage.prompt_tokens + record.usage.completion_tokens
        self._tokens += tokens
        if self.costs is not None:
            role = "model" if isinstance(record, AnswerRecord) else record.judge
            self._dollars += self.costs.cost(role, record.usage, record.batch_usage)


class _Attempts:
    """The attempt gate (`turnbench.backends.attempts`) of one admitted request.

    `held` is what the request still has reserved: its admission's worst case (the first
    attempt of each of its requests: a judgment's first request and its re-asks), less the
    worst case of every attempt that returned nothing, plus that of every retry admitted.
    An attempt that returned nothing moves its worst case from reserved to spent (it is
    logged at once as an `AttemptRecord`: a provider may bill it); a retry is sent only if
    the spent, the reserved and its own worst case stay within --max-cost.
    """

    def __init__(
        self,
        ctx: RunContext,
        *,
        key: str,
        stage: Literal["answer", "judgment", "user_turn"],
        role: str,
        held: float,
    ) -> None:
        self._ctx = ctx
        self._key = key
        self._stage: Literal["answer", "judgment", "user_turn"] = stage
        self._role = role
        self.held = held

    def unanswered(self, messages: list[Message], params: RequestParams, error: str) -> None:
        ctx = self._ctx
        tokens = attempt_tokens(messages, params)
        ctx.log.append(
            AttemptRecord(
                key=self._key,
                stage=self._stage,
                role=self._role,
                error=error,
                prompt_tokens=tokens.prompt_tokens,
                completion_tokens=tokens.completion_tokens,
            )
        )
        worst = ctx._attempt_worst(self._role, tokens)
        ctx._unanswered += worst
        freed = min(worst, self.held)
        self.held -= freed
        ctx._reserved -= freed

    def retry(self, messages: list[Message], params: RequestParams) -> str | None:
        ctx = self._ctx
        worst = ctx._attempt_worst(self._role, attempt_tokens(messages, params))
        refused = ctx._over_cost(worst)
        if refused is None:
            self.held += worst
            ctx._reserved += worst
        return refused


def _logged_dollars(log: RunLog, costs: CostMeter) -> tuple[float, float]:
    """What the run's log holds already: the dollars of its records, and the worst case of
    its attempts that returned nothing (priced by this invocation's roles)."""
    index = log.index
    spent = costs.cost("model", index.answer_usage.usage, index.answer_usage.batch)
    for role, totals in index.judge_usage.items():
        spent += costs.cost(role, totals.usage, totals.batch)
    unanswered = sum(costs.bound(role, t.usage) for role, t in index.unanswered.items())
    return spent, unanswered


class _FirstViaBatch:
    """A judge's backend for one judgment with --judge-batch: its first request goes into the
    judge's provider batch, its re-asks (few, and each waiting on the reply before it) go
    live, so an unreadable reply does not cost another batch round trip."""

    def __init__(self, queue: BatchQueue, key: str, live: Backend) -> None:
        self.spec = live.spec
        self.stats = live.stats
        self._queue = queue
        self._key = key
        self._live = live
        self.batch_id: str | None = None
        self.usage: Usage | None = None

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        if self.batch_id is None:
            completion, self.batch_id = await self._queue.request(self._key, messages, params)
            self.usage = completion.usage
            return completion
        return await self._live.complete(messages, params)

    async def aclose(self) -> None:  # the judge's own backend is closed by its owner
        return None


def _first_via_batch(judge: Judge, queue: BatchQueue, key: str) -> Judge:
    return replace(judge, backend=_FirstViaBatch(queue, key, judge.backend))


def _chars(messages: Sequence[Message]) -> int:
    return sum(len(message["content"]) for message in messages)


def _judge_requests(
    task: JudgeTask, reply: ReplyFormat, outcome: JudgeOutcome
) -> list[tuple[int, Completion]]:
    """Each reply of a judgment with the characters of the request it answered: the judge
    prompt, and for a re-ask the prompt, the reply before it and the re-ask text
    (`reask.reask_messages`; a resend repeats the prompt, told apart here by count only,
    close enough for an estimate)."""
    base = _chars(task.messages)
    followup = reply.followup
    requests: list[tuple[int, Completion]] = []
    previous: Completion | None = None
    for completion in outcome.completions:
        chars = base
        if previous is not None and followup is not None and outcome.reasks:
            chars += len(previous.text) + len(followup.text)
        requests.append((chars, completion))
        previous = completion
    return requests


def _followup_label(reply: ReplyFormat, outcome: JudgeOutcome) -> str | None:
    """What followed the first reply: the versioned re-ask text, or the same request again."""
    if reply.followup is not None and outcome.reasks:
        return reply.followup.label
    if outcome.resends:
        return SAME_REQUEST
    return None


@dataclass
class RunOutcome:
    status: Literal["finished", "interrupted", "budget", "fatal"] = "finished"
    message: str | None = None
    errors: list[BaseException] = field(default_factory=list)


async def execute(
    work: Iterable[Callable[[], Awaitable[None]]],
    ctx: RunContext,
    *,
    handle_signals: bool = True,
    max_active: int | None = None,
) -> RunOutcome:
    """Run every sample coroutine; stop everything on Ctrl-C, a fatal error or the budget.

    With `max_active`, at most that many jobs run at once and the next starts when one ends:
    a job renders its prompts before it waits for its turn, so starting every job of a large
    run at once would hold every prompt of the run in memory (without a limit every job
    starts at once, which a provider batch needs to see all its requests).
    The first jobs start START_SLICE at a time, with the event loop's I/O between slices,
    so that the first requests are on the wire while later jobs render theirs.
    With `handle_signals` (the CLI) SIGINT and SIGTERM cancel the work; inside someone
    else's event loop (a notebook) the caller cancels the awaiting task instead, and every
    job is cancelled with it.
    """
    loop = asyncio.get_running_loop()
    jobs = iter(work)
    tasks: set[asyncio.Task[None]] = set()
    ended: asyncio.Queue[asyncio.Task[None]] = asyncio.Queue()
    interrupted = asyncio.Event()

    def start(count: int | None) -> None:
        for job in jobs if count is None else itertools.islice(jobs, count):
            task = asyncio.create_task(job())
            task.add_done_callback(ended.put_nowait)
            tasks.add(task)

    def on_signal() -> None:
        interrupted.set()
        for task in tasks:
            task.cancel()

    async def stop_all() -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        tasks.clear()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM) if handle_signals else ():
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
    outcome = RunOutcome()
    # What exists when the requests start (modules, the benchmark's data, the plan) lives to
    # the end: the cyclic collector is told so (gc.freeze), and stops walking it again at
    # every full collection while hundreds of requests are in flight (3615 judgments at
    # C=256: 5.08 s -> 4.59 s, benchmarks/README.md). Unfrozen after, so nothing is kept.
    gc.freeze()
    try:
        remaining = max_active
        while remaining is None or remaining > 0:
            before = len(tasks)
            start(START_SLICE if remaining is None else min(START_SLICE, remaining))
            if len(tasks) == before:
                break  # no job left
            if remaining is not None:
                remaining -= len(tasks) - before
            await asyncio.sleep(0)  # connect and send what was started
            if interrupted.is_set():
                break
        while tasks:
            task = await ended.get()
            tasks.discard(task)
            error = None if task.cancelled() else task.exception()
            if error is not None:
                await stop_all()
                if isinstance(error, BudgetExhaustedError):
                    outcome = RunOutcome("budget", f"stopped: {error}")
                elif isinstance(error, FatalBackendError):
                    outcome = RunOutcome("fatal", error.message, [error])
                else:
                    raise error
            elif max_active is not None and not interrupted.is_set():
                start(1)
    except asyncio.CancelledError:
        await stop_all()
        raise
    finally:
        gc.unfreeze()
        for sig in installed:
            loop.remove_signal_handler(sig)
    if interrupted.is_set():
        outcome = RunOutcome("interrupted", "interrupted: in-flight requests were cancelled")
    return outcome
