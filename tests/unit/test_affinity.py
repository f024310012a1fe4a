"""The local backend's gate: one generation at a time, follow-ups first (KV-cache reuse)."""

from __future__ import annotations

import asyncio

from turnbench.backends.affinity import PrefixAffinityGate, shared_prefix


def msg(role: str, content: str) -> dict:
    return {"role": role, "content": content}


def test_shared_prefix_counts_whole_equal_messages():
    a = [msg("user", "q1"), msg("assistant", "a1"), msg("user", "q2")]
    assert shared_prefix(a, a[:2]) == 2
    assert shared_prefix(a, [msg("user", "q1"), msg("assistant", "other")]) == 1
    assert shared_prefix(a, [msg("system", "q1")]) == 0


def test_follow_up_overtakes_earlier_waiters_and_order_is_otherwise_fifo():
    async def scenario() -> list[str]:
        gate = PrefixAffinityGate()
        order: list[str] = []
        first = [msg("user", "q1")]

        async def request(name: str, messages: list, then=None) -> None:
            await gate.acquire(messages)
            order.append(name)
            await asyncio.sleep(0)
            finished = [*messages, msg("assistant", f"reply to {name}")]
            gate.release(finished)
            if then is not None:  # ask the follow-up at once, as a re-ask or turn 2 does
                await request(then, [*finished, msg("user", "follow-up")])

        tasks = [asyncio.create_task(request("A", first, then="A-followup"))]
        await asyncio.sleep(0)  # A holds the gate; B and C queue behind it
        tasks += [asyncio.create_task(request(n, [msg("user", n)])) for n in ("B", "C")]
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["A", "A-followup", "B", "C"]


def test_a_cancelled_waiter_does_not_block_the_gate():
    async def scenario() -> list[str]:
        gate = PrefixAffinityGate()
        order: list[str] = []
        await gate.acquire([msg("user", "holder")])
        waiting = asyncio.create_task(gate.acquire([msg("user", "cancelled")]))
        later = asyncio.create_task(gate.acquire([msg("user", "later")]))
        await asyncio.sleep(0)
        waiting.cancel()
        gate.release([msg("user", "holder")])
        await later
        order.append("later got the gate")
        gate.release([msg("user", "later")])
        await asyncio.sleep(0)
        await gate.acquire([msg("user", "next")])  # the gate is free again
        order.append("free")
        return order

    assert asyncio.run(scenario()) == ["later got the gate", "free"]
