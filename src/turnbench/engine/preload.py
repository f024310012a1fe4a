"""Work a command needs only at its end, done in a background thread while it waits.

A run's results need numpy (bootstrap intervals) and their own modules, about 0.2 s of
imports on a small machine, and only once every request is answered. Before that the run
spends most of its time awaiting the network: every moment the event loop has no reply to
read. Importing them from a daemon thread once the first requests are out fills those waits
instead of adding the imports to the end (`import_in_background`); the same goes for other
work whose inputs are known at the start (`call_in_background`: the digest of a run's
inputs). If the background import fails, nothing is lost: the first real import raises the
same error where it is needed.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")

#: what a run's results import, slowest first (numpy loads numpy.random on first use, and
#: numpy.ma inside its first np.quantile)
RESULT_LIBRARIES = (
    "numpy",
    "numpy.random",
    "numpy.ma",
    "turnbench.results.build",
    "turnbench.stats.ratings",
)


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


def call_in_background(function: Callable[[], T]) -> Future[T]:
    """`function()` in a daemon thread; its result (or its exception) in the future."""
    future: Future[T] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(function())
        except BaseException as error:  # the caller's .result() raises it where it is needed
            future.set_exception(error)

    threading.Thread(target=run, name="turnbench-background", daemon=True).start()
    return future
