"""Timing checks for code that reads untrusted text: fast at one size, and linear (twice the
input takes well under four times as long, as quadratic code would)."""

from __future__ import annotations

import time
from collections.abc import Callable

FLOOR_S = 0.01  # times below this are noise (a loaded machine): the scaling check floor


def seconds(run: Callable[[], object], tries: int = 3) -> float:
    """The best of `tries` runs (fewer when one is already slow: old code takes minutes)."""
    best = float("inf")
    for _ in range(tries):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
        if best > 1.0:
            break
    return best


def assert_linear(
    run: Callable[[str], object], make: Callable[[int], str], size: int, limit_s: float = 0.2
) -> None:
    """`run(make(size))` takes under `limit_s`, and `run(make(2 * size))` under three times
    as long."""
    text = make(size)
    small = seconds(lambda: run(text))
    assert small < limit_s, f"{small:.3f} s at {len(text):,} characters (limit {limit_s} s)"
    doubled_text = make(2 * size)
    doubled = seconds(lambda: run(doubled_text))
    if doubled >= 3 * max(small, FLOOR_S):  # measured again, both sizes close in time: a
        # neighbour (another test worker) can slow one of them; quadratic code stays at 4x
        small = min(small, seconds(lambda: run(text), tries=5))
        doubled = min(doubled, seconds(lambda: run(doubled_text), tries=5))
    assert doubled < 3 * max(small, FLOOR_S), (
        f"{small:.4f} s at {len(text):,} characters, {doubled:.4f} s at {len(doubled_text):,}"
    )
