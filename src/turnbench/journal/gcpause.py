"""Pausing the cyclic garbage collector while bulk work builds objects that form no cycles.

Reading a large log (tens of thousands of records into the index), computing results from
it and rendering a report allocate millions of objects that are freed by reference
counting alone. The cyclic collector still walks them again and again as they pile up
(each full collection visits every live container), and found nothing to collect: on an
8-model MT-Bench-101 run that was about 15% of `turnbench report` (measured in
benchmarks/README.md). Sending requests is the same: thousands of tasks, records and
replies are alive at once, a judge-only run at concurrency 256 spent about a quarter of its
request phase in the collector, and a collection afterwards found nothing to free.

The pause is scoped: it ends with the bulk work, and whatever cycles it did leave are
collected by the next regular collection. Pauses nest and may overlap (two runs awaited
side by side in one notebook): the collector comes back when the last one ends, and only
if it was on when the first began. A long request phase also sweeps every
`SWEEP_SECONDS`, so that cycles left by errors (an exception holds its traceback's frames)
cannot pile up over hours.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator, Iterator

SWEEP_SECONDS = 30.0

_holders = 0
_was_enabled = False


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic cyclic collection inside the block; reference counting frees
    everything as usual."""
    global _holders, _was_enabled
    if _holders == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _holders += 1
    try:
        yield
    finally:
        _holders -= 1
        if _holders == 0 and _was_enabled:
            gc.enable()


@contextlib.asynccontextmanager
async def collector_paused_with_sweeps(every: float = SWEEP_SECONDS) -> AsyncIterator[None]:
    """`collector_paused` for a phase spent awaiting the network, with a full collection
    every `every` seconds of it."""

    async def sweep() -> None:
        while True:
            await asyncio.sleep(every)
            gc.collect()

    with collector_paused():
        sweeper = asyncio.create_task(sweep())
        try:
            yield
        finally:
            sweeper.cancel()  # not awaited: that could swallow a cancellation of the caller
