"""Two jobs asking for the same answer at once share one request (`RunContext.answer`):
what the second one gets when the first one's request fails or its task is cancelled."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from turnbench.engine.budget import Budget
from turnbench.engine.context import RunContext
from turnbench.journal.runlog import RunLog
from turnbench.samples import Sample


def _ask(ctx: RunContext):
    return ctx.answer(
        key="answer|m|q1|1",
        model="m",
        sample=Sample(id="q1", group=None, turns=()),
        turn=1,
        messages=[{"role": "user", "content": "hi"}],
        params=None,  # type: ignore[arg-type]  (the request below never reads it)
    )


def _context(tmp_path: Path, log: RunLog, requests: list[str], behaviour) -> RunContext:
    ctx = RunContext(log, budget=Budget())

    async def request(**_: object) -> object:
        requests.append("sent")
        return await behaviour(len(requests))

    ctx._request_answer = request  # type: ignore[method-assign]
    return ctx


def test_the_second_asker_gets_the_first_ones_error_not_a_cancellation(tmp_path):
    requests: list[str] = []

    async def fails(_: int) -> object:
        await asyncio.sleep(0.01)
        raise RuntimeError("the server said no")

    async def scenario() -> None:
        with RunLog(tmp_path / "run") as log:
            ctx = _context(tmp_path, log, requests, fails)
            first = asyncio.create_task(_ask(ctx))
            await asyncio.sleep(0)
            second = asyncio.create_task(_ask(ctx))
            outcomes = await asyncio.gather(first, second, return_exceptions=True)
        assert [type(o) for o in outcomes] == [RuntimeError, RuntimeError]
        assert str(outcomes[1]) == "the server said no"

    asyncio.run(scenario())
    assert requests == ["sent"]  # shared: asked once


def test_a_cancelled_first_asker_does_not_cancel_the_second(tmp_path):
    """The first job is cancelled mid-request (its sample gave up); the second still needs
    the answer: it asks for it itself instead of being cancelled with the first."""
    requests: list[str] = []

    async def slow_then_fine(number: int) -> object:
        await asyncio.sleep(0.05 if number == 1 else 0)
        return f"answer {number}"

    async def scenario() -> None:
        with RunLog(tmp_path / "run") as log:
            ctx = _context(tmp_path, log, requests, slow_then_fine)
            first = asyncio.create_task(_ask(ctx))
            await asyncio.sleep(0)
            second = asyncio.create_task(_ask(ctx))
            await asyncio.sleep(0.01)
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            assert await second == "answer 2"

    asyncio.run(scenario())
    assert requests == ["sent", "sent"]


def test_a_cancelled_second_asker_leaves_the_first_alone(tmp_path):
    requests: list[str] = []

    async def slow(number: int) -> object:
        await asyncio.sleep(0.03)
        return f"answer {number}"

    async def scenario() -> None:
        with RunLog(tmp_path / "run") as log:
            ctx = _context(tmp_path, log, requests, slow)
            first = asyncio.create_task(_ask(ctx))
            await asyncio.sleep(0)
            second = asyncio.create_task(_ask(ctx))
            await asyncio.sleep(0.01)
            second.cancel()
            assert await first == "answer 1"
            with pytest.raises(asyncio.CancelledError):
                await second

    asyncio.run(scenario())
    assert requests == ["sent"]
