"""Execution: skip what the log already holds, run the rest concurrently, log as we go.

The engine (`turnbench.dialogue`) turns each sample into one coroutine that asks
`RunContext` for answers and judgments in the order the benchmark's rules need (turn 2 after
turn 1's answer, say). `RunContext` returns the logged record when the key is already done,
so re-running the same coroutines after a crash resumes exactly where the log ends and
repays nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from turnbench.backends.base import Backend
from turnbench.cleaning import strip_reasoning
from turnbench.errors import BudgetExhaustedError, FatalBackendError, RequestFailedError
from turnbench.runlog import RunLog, completed_index
from turnbench.types import AnswerRecord, FailureRecord, JudgmentRecord, Message, RequestParams

if TYPE_CHECKING:
    from turnbench.benchmarks.base import JudgeTask, Sample
    from turnbench.judging.formats import ReplyFormat
    from turnbench.judging.judge import Judge


class Progress:
    """No-op progress sink; the terminal display subclasses it."""

    def start(self, totals: dict[str, int], done: dict[str, int]) -> None: ...

    def advance(self, stage: str, outcome: str = "ok") -> None:
        """`outcome`: "ok", "failed" (request failed after retries) or "unparseable"."""

    def stop(self) -> None: ...


@dataclass
class Budget:
    """Limits of one invocation (a re-run starts with a fresh budget).

    `max_requests` counts answers and judgments started (a judgment's re-asks and any
    request's retries belong to it); `max_tokens` counts the prompt + completion tokens the
    server reported for what this invocation logged.
    """

    max_requests: int | None = None
    max_tokens: int | None = None


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
    ) -> None:
        self.log = log
        self.model_backend = model_backend
        self.budget = budget or Budget()
        self.progress = progress or Progress()
        self.done = completed_index(log.records)
        self.counters = RunCounters()
        self._admitted = 0  # answers and judgments started in this invocation
        self._in_flight = 0
        self._tokens = 0  # tokens of the records this invocation logged
        self._settled: asyncio.Event | None = None
        self._slots: dict[int, asyncio.Semaphore] = {}

    # -- bookkeeping -----------------------------------------------------------------------
    def _spent(self) -> str | None:
        """Why the budget allows no new request, or None."""
        budget = self.budget
        if budget.max_requests is not None and self._admitted >= budget.max_requests:
            return f"--max-requests {budget.max_requests} reached"
        if budget.max_tokens is not None and self._tokens >= budget.max_tokens:
            return f"--max-tokens-total {budget.max_tokens} reached ({self._tokens} used)"
        return None

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

    @contextlib.asynccontextmanager
    async def _admitted_request(self, backend: Backend) -> AsyncIterator[None]:
        """Hold one admitted answer or judgment for the duration of the block.

        Checking and counting happen with no await in between, so concurrent samples cannot
        overshoot --max-requests. Once the budget is spent, no new request starts; the ones
        already started finish and are logged (nothing paid for is thrown away), and only
        then does BudgetExhaustedError stop the run.
        """
        slot = self._slot(backend)
        if slot is not None:
            await slot.acquire()
        reason = self._spent()
        if reason is not None:
            if slot is not None:
                slot.release()
            while self._in_flight:
                if self._settled is None or self._settled.is_set():
                    self._settled = asyncio.Event()
                await self._settled.wait()
            raise BudgetExhaustedError(reason)
        self._admitted += 1
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1
            if self._in_flight == 0 and self._settled is not None:
                self._settled.set()
            if slot is not None:
                slot.release()

    def _fail(
        self,
        key: str,
        stage: Literal["answer", "judgment"],
        error: RequestFailedError,
        *,
        model: str,
        sample: Sample,
        turn: int,
        judge: str | None = None,
        pair: tuple[str, str] | None = None,
    ) -> None:
        self.counters.request_failures += 1
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
    ) -> AnswerRecord | None:
        cached = self.done.get(key)
        if isinstance(cached, AnswerRecord):
            return cached
        if self.model_backend is None:
            raise RuntimeError("this run has no model backend")
        async with self._admitted_request(self.model_backend):
            self.counters.answers_requested += 1
            try:
                completion = await self.model_backend.complete(messages, params)
            except RequestFailedError as error:
                self._fail(key, "answer", error, model=model, sample=sample, turn=turn)
                return None
        text = strip_reasoning(completion.text)
        record = AnswerRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            text=text,
            raw_text=completion.text if text != completion.text else None,
            messages=messages,
            params=completion.sent_params,
            finish_reason=completion.finish_reason,
            usage=completion.usage,
            reported_model=completion.reported_model,
            system_fingerprint=completion.system_fingerprint,
            attempts=completion.attempts,
            latency_s=completion.latency_s,
        )
        self._commit(record)
        self.progress.advance("answers")
        return record

    def import_answer(
        self, *, key: str, model: str, sample: Sample, turn: int, text: str
    ) -> AnswerRecord:
        """Record an answer read from a file, so the run directory is self-contained."""
        cleaned = strip_reasoning(text)
        cached = self.done.get(key)
        if isinstance(cached, AnswerRecord) and cached.text == cleaned:
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
        )
        self._commit(record)
        return record

    # -- judgments -------------------------------------------------------------------------
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
    ) -> JudgmentRecord | None:
        """One judgment (the logged one when `key` is done); `meta` is kept in the record
        (e.g. the guard's boundary, so the request can be rebuilt)."""
        cached = self.done.get(key)
        if isinstance(cached, JudgmentRecord):
            return cached
        async with self._admitted_request(judge.backend):
            self.counters.judgments_requested += 1
            try:
                outcome = await judge.ask(task.messages, reply)
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
                )
                return None
        last = outcome.last
        self.counters.reasks += len(outcome.outputs) - 1
        result = outcome.result
        if not result.ok:
            self.counters.parse_failures += 1
        kept: dict[str, object] = dict(meta or {})
        if pair is not None:  # also in `meta`, where schema-1 records kept them
            shown_b = pair[1] if pair[0] == model else pair[0]
            kept |= {"pair": list(pair), "order": order, "model_a": model, "model_b": shown_b}
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
            followup=reply.followup.label if reply.followup and len(outcome.outputs) > 1 else None,
            parser=reply.parser,
            status="scored" if result.ok else "parse_failed",
            score=result.score,
            verdict=result.verdict,
            checklist=list(result.checklist) if result.checklist is not None else None,
            parse_error=result.error,
            usage=outcome.usage,
            reported_model=last.reported_model if last else None,
            system_fingerprint=last.system_fingerprint if last else None,
            attempts=outcome.attempts,
            latency_s=round(outcome.latency_s, 4),
            meta=kept,
        )
        self._commit(record)
        self.progress.advance("judgments", "ok" if result.ok else "unparseable")
        return record

    def _commit(self, record: AnswerRecord | JudgmentRecord) -> None:
        self.log.append(record)
        self.done[record.key] = record
        self._tokens += record.usage.prompt_tokens + record.usage.completion_tokens


@dataclass
class RunOutcome:
    status: Literal["finished", "interrupted", "budget", "fatal"] = "finished"
    message: str | None = None
    errors: list[BaseException] = field(default_factory=list)


async def execute(
    work: Iterable[Callable[[], Awaitable[None]]], ctx: RunContext, *, handle_signals: bool = True
) -> RunOutcome:
    """Run every sample coroutine; stop everything on Ctrl-C, a fatal error or the budget.

    With `handle_signals` (the CLI) SIGINT and SIGTERM cancel the work; inside someone
    else's event loop (a notebook) the caller cancels the awaiting task instead, and every
    job is cancelled with it.
    """
    loop = asyncio.get_running_loop()
    tasks = [asyncio.create_task(job()) for job in work]
    interrupted = asyncio.Event()

    def on_signal() -> None:
        interrupted.set()
        for task in tasks:
            task.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM) if handle_signals else ():
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
    outcome = RunOutcome()
    try:
        pending = set(tasks)
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            failed = [t for t in finished if not t.cancelled() and t.exception() is not None]
            if failed:
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                pending = set()
                error = failed[0].exception()
                assert error is not None
                if isinstance(error, BudgetExhaustedError):
                    outcome = RunOutcome("budget", f"stopped: {error}")
                elif isinstance(error, FatalBackendError):
                    outcome = RunOutcome("fatal", error.message, [error])
                else:
                    raise error
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    if interrupted.is_set():
        outcome = RunOutcome("interrupted", "interrupted: in-flight requests were cancelled")
    return outcome
