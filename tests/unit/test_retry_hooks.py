"""The one retry loop (`retry.run_with_retries`) and what a caller adds to it (`Retrying`):
the hooks run in their documented order, a hook's refusal ends the loop before its backoff,
and both live backends refuse a retry the budget cannot cover alike
(`attempts.BackendRetrying`, the billing written once)."""

from __future__ import annotations

import asyncio
import time

import pytest

from turnbench.backends.anthropic_native import AnthropicBackend
from turnbench.backends.attempts import gated
from turnbench.backends.openai_compat import OpenAICompatBackend
from turnbench.backends.retry import GaveUp, Retrying, RetryPolicy, TransientError, run_with_retries
from turnbench.errors import AttemptRefusedError
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_http import Scripted
from turnbench.testing.fake_server import FakeServer, Reply
from turnbench.types import RequestParams

KEY = "sk-ant-test-0123456789"


class Recorder(Retrying):
    """Hooks that write down when they run; congestion is free, every wait is 0 s (or
    `wait`), and `admit` refuses when told to."""

    def __init__(self, *, refuse: bool = False, wait: float = 0.0) -> None:
        super().__init__()
        self.calls: list[object] = []
        self.refuse = refuse
        self.wait = wait

    def failed(self, error: TransientError) -> None:
        self.calls.append(("failed", self.attempts, error.message))

    def counts(self, error: TransientError) -> bool:
        self.calls.append(("counts", not error.congestion))
        return not error.congestion

    def delay(self, error: TransientError, policy: RetryPolicy) -> float:
        self.calls.append(("delay", self.counted))
        return self.wait

    def since(self, started: float) -> float:
        self.calls.append("since")
        return started

    def admit(self) -> None:
        self.calls.append("admit")
        if self.refuse:
            raise AttemptRefusedError("refused", self.attempts, "budget")

    def waited(self) -> None:
        self.calls.append("waited")


def _failing(*errors: TransientError):
    pending = list(errors)

    async def attempt() -> str:
        if pending:
            raise pending.pop(0)
        return "ok"

    return attempt


def test_the_loop_runs_a_callers_hooks_in_order():
    congested = TransientError("429", kind="status", status=429)
    broken = TransientError("500", kind="status", status=500)
    hooks = Recorder()
    policy = RetryPolicy(max_attempts=2)
    assert asyncio.run(run_with_retries(_failing(congested, broken), policy, hooks)) == ("ok", 3)
    assert hooks.calls == [
        ("failed", 1, "429"),
        ("counts", False),
        ("delay", 0),
        "since",
        "admit",
        "waited",
        ("failed", 2, "500"),
        ("counts", True),
        ("delay", 1),
        "since",
        "admit",
        "waited",
    ]
    assert (hooks.attempts, hooks.counted) == (3, 1)

    hooks = Recorder()  # the attempts are spent: no admission, but the wait still ends
    with pytest.raises(GaveUp) as gave_up:
        asyncio.run(run_with_retries(_failing(broken, broken), RetryPolicy(max_attempts=1), hooks))
    assert gave_up.value.attempts == 1
    assert hooks.calls == [("failed", 1, "500"), ("counts", True), ("delay", 1), "since", "waited"]


def test_a_refused_retry_ends_the_loop_before_its_backoff():
    hooks = Recorder(refuse=True, wait=30.0)
    started = time.monotonic()
    with pytest.raises(AttemptRefusedError) as refused:
        asyncio.run(run_with_retries(_failing(TransientError("500")), RetryPolicy(), hooks))
    assert time.monotonic() - started < 10  # the 30 s backoff never began
    assert refused.value.attempts == 1 and hooks.calls[-2:] == ["admit", "waited"]


class RefusingGate:
    """A budget that hears of every unanswered attempt and admits no retry."""

    def __init__(self) -> None:
        self.unanswered_errors: list[str] = []

    def unanswered(self, messages, params, error: str) -> None:
        self.unanswered_errors.append(error)

    def retry(self, messages, params) -> str | None:
        return "over --max-cost"


PATIENT = RetryPolicy(max_attempts=5, initial_wait=30.0, max_wait=60.0, request_timeout=10)


async def _refused(backend) -> AttemptRefusedError:
    gate = RefusingGate()
    try:
        with gated(gate), pytest.raises(AttemptRefusedError) as caught:
            await backend.complete([{"role": "user", "content": "Q"}], RequestParams(max_tokens=5))
    finally:
        await backend.aclose()
    assert len(gate.unanswered_errors) == 1 and gate.unanswered_errors[0].startswith("HTTP 500")
    assert backend.stats.failures == 1 and backend.stats.retrying == 0
    return caught.value


def test_both_backends_refuse_a_retry_the_budget_cannot_cover_alike():
    """A 500 that asks for a 30 s wait, under a budget that admits no retry: on either
    backend the request fails at once, with one attempt and the same message."""
    busy = {"error": {"type": "api_error", "message": "busy"}}
    errors: list[AttemptRefusedError] = []
    started = time.monotonic()
    with FakeServer(responder=lambda request: Reply(status=500, body=busy)) as server:
        backend = OpenAICompatBackend(
            "openai/m", "m", base_url=server.base_url, api_key=None, policy=PATIENT
        )
        errors.append(asyncio.run(_refused(backend)))
        assert len(server.requests) == 1
    with FakeAnthropic(api_key=KEY) as fake:
        fake.script += [Scripted(500, {"type": "error", **busy}, headers={"retry-after": "30"})]
        backend = AnthropicBackend(
            "anthropic/claude-test",
            "claude-test",
            api_key=KEY,
            base_url=fake.base_url,
            concurrency=2,
            policy=PATIENT,
        )
        errors.append(asyncio.run(_refused(backend)))
        assert fake.counts["messages"] == 1
    assert time.monotonic() - started < 20  # neither waited out a backoff
    for error, spec in zip(errors, ("openai/m", "anthropic/claude-test"), strict=True):
        assert error.attempts == 1 and error.reason == "over --max-cost"
        said = f"{spec}: not retried after 1 attempts (over --max-cost); the last: HTTP 500: "
        assert error.message.startswith(said) and "busy" in error.message
