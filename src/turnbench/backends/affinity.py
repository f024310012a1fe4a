"""A one-at-a-time gate that lets the next request reuse the model's KV cache.

llama.cpp skips re-reading a prompt prefix it has just processed. With many requests queued
FIFO, a judge re-ask or a turn-2 answer would wait behind unrelated prompts and lose that
prefix; on a 2-core CPU re-reading a 1,000-token judge prompt costs seconds. This gate
hands the model to the waiting request whose messages share the longest prefix with the
conversation just finished (ties: first come, first served).
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field

from turnbench.types import Message


def shared_prefix(a: list[Message], b: list[Message]) -> int:
    count = 0
    for left, right in zip(a, b, strict=False):
        if left["role"] != right["role"] or left["content"] != right["content"]:
            break
        count += 1
    return count


@dataclass(order=True)
class _Waiter:
    order: int
    messages: list[Message] = field(compare=False)
    granted: asyncio.Future = field(compare=False)


class PrefixAffinityGate:
    def __init__(self) -> None:
        self._busy = False
        self._waiters: list[_Waiter] = []
        self._previous: list[Message] = []
        self._counter = itertools.count()

    async def acquire(self, messages: list[Message]) -> None:
        if not self._busy and not self._waiters:
            self._busy = True
            return
        waiter = _Waiter(next(self._counter), messages, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        try:
            await waiter.granted
        except asyncio.CancelledError:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            elif waiter.granted.done() and not waiter.granted.cancelled():
                self._hand_off()  # granted just before the cancel: pass it on
            raise

    def release(self, finished: list[Message]) -> None:
        """Called with the conversation just generated (request + reply).

        The hand-off waits one event-loop step: the caller that just got its reply usually
        asks its follow-up (a re-ask, the next turn) without awaiting anything else, so by
        then that follow-up is among the waiters and can win the KV cache.
        """
        self._previous = finished
        asyncio.get_running_loop().call_soon(self._hand_off)

    def _hand_off(self) -> None:
        if not self._waiters:
            self._busy = False
            return
        previous = self._previous
        best = max(self._waiters, key=lambda w: (shared_prefix(w.messages, previous), -w.order))
        self._waiters.remove(best)
        best.granted.set_result(None)
