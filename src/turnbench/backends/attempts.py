"""The budget's say over every attempt of one request, retries included.

A backend's retry loop decides when to send another attempt; the engine's budget has to
see each one before it is sent (--max-cost reserves an attempt's worst case) and hear of
each that returned nothing (a provider may bill a timed-out attempt). The engine opens an
`AttemptGate` for the duration of one request (`gated`), and the retry loop of every backend
asks the gate in force (`current_gate`): no gate (a preflight check, a test calling a
backend directly) admits every attempt.

A context variable carries the gate, not an argument of `Backend.complete`, so that the one
backend protocol stays `complete(messages, params)` for every provider and every fake. It is
no global state: each asyncio task reads the value set by its own caller, so concurrent
requests never see each other's gate.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Protocol

from turnbench.backends.retry import TransientError
from turnbench.types import Message, RequestParams


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
