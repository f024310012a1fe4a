"""Admission: which request may start, and what the ones that ran have spent.

Every request of every role (the model, a judge, the simulated user, any role a driver
names) is admitted here before it is sent, and counted here once its record is logged, so
--max-requests, --max-tokens-total and --max-cost hold for all of them alike. Checking and
counting happen with no await in between: concurrent jobs cannot overshoot a limit.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from turnbench.backends.attempts import gated
from turnbench.backends.base import Backend
from turnbench.engine.costs import CHARS_PER_TOKEN, CostMeter, attempt_tokens
from turnbench.errors import BudgetExhaustedError
from turnbench.journal.runlog import RunLog
from turnbench.types import AttemptRecord, Completion, Message, RequestParams, Usage

if TYPE_CHECKING:
    from turnbench.types import LogRecord

#: what a request is for, as failure and attempt records name it ("answer", "judgment",
#: "user_turn", "reply")
Stage = str


@dataclass
class Budget:
    """Limits of a run: `max_requests` and `max_tokens` of one invocation (a re-run starts
    them afresh), `max_cost` of the whole run, every invocation of it.

    `max_requests` counts the requests of every role started (answers, judgments, user
    turns, a driver's own roles; a judgment's re-asks and any request's retries belong to
    it); `max_tokens` counts the prompt + completion tokens the
    server reported for what this invocation logged, or for a reply whose usage was missing
    or invalid (read as 0 prompt tokens) an estimate of 4 characters a token, as --dry-run
    estimates; `max_cost` the dollars of what the run's log holds (its records, and the worst
    case of every attempt that returned nothing: `AttemptRecord`) plus the worst case of
    every request in flight (the price table's), each retry admitted before it is sent.
    """

    max_requests: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None


class Ledger:
    """What this invocation admitted, has in flight and spent, held against its `Budget`."""

    def __init__(
        self,
        log: RunLog,
        budget: Budget,
        costs: CostMeter | None,
        warn: Callable[[str], None],
    ) -> None:
        self.log = log
        self.budget = budget
        self.costs = costs
        self.warn = warn
        self.admitted = 0  # requests of every role started in this invocation
        self.in_flight = 0
        self.tokens = 0  # tokens of the records this invocation logged
        self.dollars = 0.0  # what the records this invocation logged cost
        self.unanswered = 0.0  # the worst case of this invocation's unanswered attempts
        self.reserved = 0.0  # the worst-case dollars of the requests in flight
        self._estimate_said = False  # the warning that a server's usage is estimated
        # what earlier invocations of the run spent: their records, their unanswered attempts
        self.before = logged_dollars(log, costs) if costs is not None else (0.0, 0.0)
        self._settled: asyncio.Event | None = None
        self._slots: dict[int, asyncio.Semaphore] = {}

    # -- limits ----------------------------------------------------------------------------
    def spent(self, worst: float = 0.0) -> str | None:
        """Why the budget allows no new request (whose cost is at most `worst` dollars), or
        None."""
        budget = self.budget
        if budget.max_requests is not None and self.admitted >= budget.max_requests:
            return f"--max-requests {budget.max_requests} reached"
        if budget.max_tokens is not None and self.tokens >= budget.max_tokens:
            return f"--max-tokens-total {budget.max_tokens} reached ({self.tokens} used)"
        return self.over_cost(worst)

    def over_cost(self, worst: float) -> str | None:
        """Why --max-cost allows no request or attempt costing up to `worst`, or None."""
        limit = self.budget.max_cost
        if limit is None:
            return None
        before = sum(self.before)
        spent = before + self.dollars + self.unanswered
        if spent + self.reserved + worst <= limit:
            return None
        unanswered = self.before[1] + self.unanswered
        parts = [f"${spent:.4f} spent"]
        if before:
            parts.append(
                f"${before:.4f} of it by earlier invocations of this run (they count: raise "
                "--max-cost to continue)"
            )
        if unanswered:
            parts.append(f"${unanswered:.4f} of it at worst on attempts that returned nothing")
        reserved = max(0.0, self.reserved)  # (no "-0.0000" from rounding)
        return (
            f"--max-cost {limit:g} reached: {', '.join(parts)}, ${reserved:.4f} in "
            f"flight at worst, the next request could cost up to ${worst:.4f}"
        )

    def attempt_worst(self, role: str, tokens: Usage) -> float:
        return self.costs.bound(role, tokens) if self.costs is not None else 0.0

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

    async def stop(self, reason: str) -> None:
        """Let the requests in flight finish and be logged, then stop the run."""
        while self.in_flight:
            if self._settled is None or self._settled.is_set():
                self._settled = asyncio.Event()
            await self._settled.wait()
        raise BudgetExhaustedError(reason)

    @contextlib.asynccontextmanager
    async def admitted_request(
        self,
        backend: Backend | None,
        worst: float = 0.0,
        *,
        key: str,
        stage: Stage,
        role: str,
    ) -> AsyncIterator[None]:
        """Hold one admitted request (with its re-asks and retries) for the block.

        Checking and counting happen with no await in between, so concurrent samples cannot
        overshoot --max-requests or --max-cost (`worst`: the most the request can cost,
        reserved while it is in flight). Every retry the backend wants to send after an
        attempt that returned nothing is admitted the same way (`AttemptGate`, the block's
        gate). Once the budget is spent, no new request starts; the ones already started
        finish and are logged (nothing paid for is thrown away), and only then does
        BudgetExhaustedError stop the run. `backend` None: the request goes into a provider
        batch (no concurrency slot: a batch holds all of them).
        """
        slot = self._slot(backend) if backend is not None else None
        if slot is not None:
            await slot.acquire()
        reason = self.spent(worst)
        if reason is not None:
            if slot is not None:
                slot.release()
            await self.stop(reason)
        self.admitted += 1
        self.in_flight += 1
        self.reserved += worst
        attempts = AttemptGate(self, key=key, stage=stage, role=role, held=worst)
        try:
            with gated(attempts):
                yield
        finally:
            self.reserved -= attempts.held
            self.in_flight -= 1
            if self.in_flight == 0 and self._settled is not None:
                self._settled.set()
            if slot is not None:
                slot.release()

    # -- what was spent --------------------------------------------------------------------
    def budget_tokens(self, who: str, exchanges: Iterable[tuple[int, Completion]]) -> int:
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

    def commit(
        self,
        record: LogRecord,
        role: str,
        usage: Usage,
        batch_usage: Usage | None = None,
        tokens: int | None = None,
    ) -> None:
        """Log a finished record (the log's index makes it done) and count what `role` paid
        for it; `tokens`: what the token budget counts for it (`budget_tokens`), when not
        its usage."""
        self.log.append(record)
        if tokens is None:
            tokens = usage.prompt_tokens + usage.completion_tokens
        self.tokens += tokens
        if self.costs is not None:
            self.dollars += self.costs.cost(role, usage, batch_usage)


class AttemptGate:
    """The attempt gate (`turnbench.backends.attempts`) of one admitted request.

    `held` is what the request still has reserved: its admission's worst case (the first
    attempt of each of its requests: a judgment's first request and its re-asks), less the
    worst case of every attempt that returned nothing, plus that of every retry admitted.
    An attempt that returned nothing moves its worst case from reserved to spent (it is
    logged at once as an `AttemptRecord`: a provider may bill it); a retry is sent only if
    the spent, the reserved and its own worst case stay within --max-cost.
    """

    def __init__(self, ledger: Ledger, *, key: str, stage: Stage, role: str, held: float) -> None:
        self._ledger = ledger
        self._key = key
        self._stage: Stage = stage
        self._role = role
        self.held = held

    def unanswered(self, messages: list[Message], params: RequestParams, error: str) -> None:
        ledger = self._ledger
        tokens = attempt_tokens(messages, params)
        ledger.log.append(
            AttemptRecord(
                key=self._key,
                stage=self._stage,
                role=self._role,
                error=error,
                prompt_tokens=tokens.prompt_tokens,
                completion_tokens=tokens.completion_tokens,
            )
        )
        worst = ledger.attempt_worst(self._role, tokens)
        ledger.unanswered += worst
        freed = min(worst, self.held)
        self.held -= freed
        ledger.reserved -= freed

    def retry(self, messages: list[Message], params: RequestParams) -> str | None:
        ledger = self._ledger
        worst = ledger.attempt_worst(self._role, attempt_tokens(messages, params))
        refused = ledger.over_cost(worst)
        if refused is None:
            self.held += worst
            ledger.reserved += worst
        return refused


def logged_dollars(log: RunLog, costs: CostMeter) -> tuple[float, float]:
    """What the run's log holds already: the dollars of its records, and the worst case of
    its attempts that returned nothing (priced by this invocation's roles)."""
    index = log.index
    spent = sum(costs.cost(role, t.usage, t.batch) for role, t in index.usage.items())
    unanswered = sum(costs.bound(role, t.usage) for role, t in index.unanswered.items())
    return spent, unanswered
