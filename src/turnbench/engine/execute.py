"""Running a plan's jobs: all of them concurrently in a bounded window, stopped as a whole.

Each job is one coroutine (a driver's `run` of one planned job) that asks `RunContext` for
what it needs; `RunContext` returns the logged record when a key is already done, so
running the same jobs again after a crash resumes exactly where the log ends and repays
nothing. Ctrl-C, a fatal backend error or a spent budget stops every job at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import signal
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from turnbench.errors import BudgetExhaustedError, FatalBackendError

if TYPE_CHECKING:
    from turnbench.engine.context import RunContext

#: jobs started before the event loop gets to connect and send (execute)
START_SLICE = 16


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
