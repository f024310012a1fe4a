"""Importing, in a background thread, a library that a command needs only at its end.

A run's results need numpy (bootstrap intervals), about 0.13 s of imports on a small
machine, and only once every request is answered. Before that the run spends most of its
time awaiting the network: the preflight's round trip, and every moment the event loop has
no reply to read. Importing numpy from a daemon thread at the start fills those waits
instead of adding the import to the end. If the background import fails, nothing is lost:
the first real import raises the same error where it is needed.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading

#: what a run's results import, slowest first (numpy loads numpy.random on first use, and
#: numpy.ma inside its first np.quantile)
RESULT_LIBRARIES = ("numpy", "numpy.random", "numpy.ma", "turnbench.results", "turnbench.ratings")


def import_in_background(names: tuple[str, ...] = RESULT_LIBRARIES) -> threading.Thread | None:
    """Start importing the `names` not imported yet; the thread, or None if none is left."""
    missing = [name for name in names if name not in sys.modules]
    if not missing:
        return None
    thread = threading.Thread(
        target=_import_all, args=(missing,), name="turnbench-preload", daemon=True
    )
    thread.start()
    return thread


def _import_all(names: list[str]) -> None:
    for name in names:
        with contextlib.suppress(Exception):  # the real import says what is wrong
            importlib.import_module(name)
