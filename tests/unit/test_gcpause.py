"""The collector pause is scoped: off inside (nested and overlapping blocks too), back on
after, even when the block raises; a caller that had it off keeps it off; a long pause still
sweeps cycles."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from turnbench.journal.gcpause import collector_paused, collector_paused_with_sweeps


def test_paused_inside_and_restored_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_caller_that_disabled_it_keeps_it_disabled():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_restore_the_collector_once_the_last_ends():
    """Two runs awaited side by side: the first to end must not turn the collector back on
    under the second, and the second must not leave it off for good."""
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def test_a_long_pause_still_sweeps_cycles():
    async def main() -> tuple[bool, bool]:
        async with collector_paused_with_sweeps(every=0.01):
            node = _Node()
            gone = weakref.ref(node)
            del node
            assert gone() is not None  # reference counting alone does not free it
            await asyncio.sleep(0.1)
            paused = not gc.isenabled()
        return paused, gone() is None

    paused, swept = asyncio.run(main())
    assert paused and swept
    assert gc.isenabled()
