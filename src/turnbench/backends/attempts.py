"""The budget's say over every attempt of one request, retries included.

The one retry loop (`retry.run_with_retries`) decides when to send another attempt; the
engine's budget has to see each one before it is sent (--max-cost reserves an attempt's
worst case) and hear of each that returned nothing (a provider may bill a timed-out
attempt). The engine opens an `AttemptGate` for the duration of one request (`gated`), and
every live backend's hooks on that loop (`BackendRetrying`) ask the gate in force
(`current_gate`): no gate (a preflight check, a test calling a backend directly) admits
every attempt.

A context variable carries the gate, not an argument of `Backend.complete`, so that the one
backend protocol stays `complete(messages, params)` for every provider and every fake. It is
no global state: each asyncio task reads the value set by its own caller, so concurrent
requests never see each other's gate.

`BackendRetrying` is what every live backend adds to the one retry loop
(`retry.run_with_retries`): the gate's say, the backend's stats and how a request fails.
The OpenAI-compatible and the Anthropic backends bill alike, so it is written once here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Protocol

from turnbench.backends.base import BackendStats
from turnbench.backends.replies import Redactor, short_detail
from turnbench.backends.retry import GaveUp, Retrying, RetryPolicy, TransientError, run_with_retries
from turnbench.errors import AttemptRefusedError, RequestFailedError
from turnbench.types import Completion, Message, RequestParams


class AttemptGate(Protocol):
    def unanswered(self, messages: list[Message], params: RequestParams, error: str) -> None:
        """An attempt of this request was sent and returned nothing (`error`: why, redacted);
        the provider may bill it."""

    def retry(self, messages: list[Message], params: RequestParams) -> str | None:
        """Admit one more attempt (the gate reserves its worst case): None, or why not."""


_GATE: ContextVar[AttemptGate | None] = ContextVar("turnbench_attempt_gate", default=None)


def current_gate() -> AttemptGate | None:
    """The gate of the request being sent in this task, if the engine opened one."""
    return _GATE.get()


@contextlib.contextmanager
def gated(gate: AttemptGate) -> Iterator[None]:
    """Make `gate` the one the backends ask, for the calls made inside the block."""
    token = _GATE.set(gate)
    try:
        yield
    finally:
        _GATE.reset(token)


def may_be_billed(error: TransientError) -> bool:
    """Whether a failed attempt may still be billed (`TransientError.billed`)."""
    return error.billed


def cancelled_in_flight(gate: AttemptGate, messages: list[Message], params: RequestParams) -> None:
    """An attempt cancelled after it was sent (the run stopped, or its task was cancelled):
    the server may still answer it, and bill it, so it counts as an attempt that returned
    nothing (the Anthropic path also counts one still waiting for a connection slot: the
    books err on the budget's side). Never raises: the cancellation it is part of goes on."""
    with contextlib.suppress(Exception):
        gate.unanswered(messages, params, "cancelled while in flight")


class BackendRetrying(Retrying):
    """One request of a live backend on the one retry loop, with what both the
    OpenAI-compatible and the Anthropic backend do around its attempts:

    - the budget's say (the gate in force): an attempt that returned nothing and may have
      been billed is reported (`unanswered`), and the retry after it is admitted before its
      backoff begins (`retry`: refused, the request fails with AttemptRefusedError and no
      time is spent waiting for an attempt that will not be sent);
    - under adaptive concurrency (`adaptive`) a refusal for congestion costs no attempt;
    - the stats the progress line shows (`last_error`, `retrying`) and those results.json
      sums (`failures`, usage);
    - how the request fails: "gave up after N attempts", the budget's refusal, or the
      request that cannot succeed, each with the attempts it cost.

    A backend subclasses it for what is its own (the OpenAI-compatible one: an endpoint
    slot held through a congestion backoff, a delay from the endpoint's round trip, the
    total time counted from the first attempt sent) and calls `cancelled` where its
    attempt counts as in flight.
    """

    def __init__(
        self,
        spec: str,
        stats: BackendStats,
        redact: Redactor,
        messages: list[Message],
        params: RequestParams,
        *,
        adaptive: bool,
    ) -> None:
        super().__init__()
        self.spec = spec
        self.stats = stats
        self.redact = redact
        self.messages = messages
        self.params = params
        self.adaptive = adaptive
        self.gate = current_gate()
        self.billed = False  # the last failed attempt may have been billed
        self.last = ""  # its error, redacted and short (logs, terminals, the gate's record)
        self.retrying = False  # counted in stats.retrying until the request ends

    def failed(self, error: TransientError) -> None:
        self.last = short_detail(str(error), self.redact)
        self.stats.last_error = self.last
        self.billed = self.gate is not None and may_be_billed(error)
        if self.gate is not None and self.billed:
            self.gate.unanswered(self.messages, self.params, self.last)
        if not self.retrying:
            self.retrying = True
            self.stats.retrying += 1

    def counts(self, error: TransientError) -> bool:
        return not (self.adaptive and error.congestion)

    def admit(self) -> None:
        if self.gate is None or not self.billed:
            return  # nothing billed since the last admission: that one still covers it
        refused = self.gate.retry(self.messages, self.params)
        if refused is not None:
            raise AttemptRefusedError(
                f"{self.spec}: not retried after {self.attempts} attempts ({refused}); "
                f"the last: {self.last}",
                self.attempts,
                refused,
            ) from None

    def cancelled(self) -> None:
        """The backend's attempt was cancelled while in flight (see `cancelled_in_flight`)."""
        if self.gate is not None:
            cancelled_in_flight(self.gate, self.messages, self.params)

    async def run(
        self, attempt: Callable[[], Awaitable[Completion]], policy: RetryPolicy
    ) -> Completion:
        """The completion of `attempt` under `policy`, with its attempts and its usage
        counted; or the request's failure, counted, as a RequestFailedError."""
        stats = self.stats
        try:
            completion, attempts = await run_with_retries(attempt, policy, self)
        except AttemptRefusedError:
            stats.failures += 1
            raise
        except GaveUp as error:
            stats.failures += 1
            raise RequestFailedError(
                f"{self.spec}: gave up after {error.attempts} attempts: {self.last}",
                error.attempts,
            ) from None
        except RequestFailedError as error:
            stats.failures += 1
            stats.last_error = error.message
            raise RequestFailedError(error.message, error.attempts) from None
        finally:
            if self.retrying:
                stats.retrying -= 1
        completion.attempts = attempts
        stats.add_usage(completion.usage)
        return completion
