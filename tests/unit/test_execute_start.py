"""How `execute` starts its jobs: a slice at a time with the loop's I/O between slices,
never more than `max_active` at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from turnbench.engine.budget import Budget
from turnbench.engine.context import RunContext
from turnbench.engine.execute import START_SLICE, execute
from turnbench.journal.runlog import RunLog


def _run(tmp_path: Path, jobs: int, max_active: int | None) -> dict[str, object]:
    seen: dict[str, object] = {"active": 0, "most": 0, "done": 0, "ticks": 0}
    timeline: list[tuple[str, int]] = []

    async def job() -> None:
        seen["active"] += 1  # type: ignore[operator]
        seen["most"] = max(seen["most"], seen["active"])  # type: ignore[type-var]
        timeline.append(("job", seen["ticks"]))  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        seen["active"] -= 1  # type: ignore[operator]
        seen["done"] += 1  # type: ignore[operator]

    async def ticker() -> None:  # stands for I/O callbacks: counts loop iterations
        while True:
            seen["ticks"] += 1  # type: ignore[operator]
            await asyncio.sleep(0)

    async def scenario() -> None:
        tick = asyncio.create_task(ticker())
        with RunLog(tmp_path / "run") as log:
            ctx = RunContext(log, budget=Budget())
            outcome = await execute([job] * jobs, ctx, handle_signals=False, max_active=max_active)
        tick.cancel()
        assert outcome.status == "finished"

    asyncio.run(scenario())
    seen["timeline"] = timeline
    return seen


@pytest.mark.parametrize("max_active", [40, None])
def test_jobs_start_in_slices(tmp_path, max_active):
    seen = _run(tmp_path, 100, max_active)
    assert seen["done"] == 100
    if max_active is not None:
        assert seen["most"] == max_active
    timeline = seen["timeline"]
    first = [tick for what, tick in timeline[:START_SLICE] if what == "job"]
    assert len(first) == START_SLICE and len(set(first)) == 1  # the first slice together
    second = timeline[START_SLICE][1]
    assert second > first[0]  # the loop ran its other callbacks before the next slice
