"""Pausing the cyclic garbage collector while bulk work builds objects that form no cycles.

Reading a large log (tens of thousands of records into the index), computing results from
it and rendering a report allocate millions of objects that are freed by reference
counting alone. The cyclic collector still walks them again and again as they pile up
(each full collection visits every live container), and found nothing to collect: on an
8-model MT-Bench-101 run that was about 15% of `turnbench report` (measured in
benchmarks/README.md). The pause is scoped: it ends with the bulk work, and whatever
cycles it did leave are collected by the next regular collection.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block (nested blocks keep it off until the outer one
    ends); reference counting frees everything as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
