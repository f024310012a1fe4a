"""Part of a report rendered in a second process while this one renders the rest.

The dialogue pages of a large run (40 MB of escaped transcripts for 8 models of
MT-Bench-101, every answer and judge reply read again from the log) take about as long as
everything else the report does after reading the logs, and depend on nothing else it
computes. Where the operating system can fork cheaply (Linux), a forked child renders them
while the parent draws the charts and runs the comparisons: the child starts with the
parent's logs already read, and sends back only its markup. Anything that goes wrong in
the child (an exception, a crash, no fork) makes the parent render the pages itself, so
the report is the same either way (`tests/e2e/test_report_parallel.py`).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def can_fork() -> bool:
    """Linux with two or more CPUs: elsewhere fork is missing (Windows), unsafe for some
    system libraries (macOS), or would only take turns on one core."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and (os.cpu_count() or 1) > 1


def forked(work: Callable[[], T]) -> Callable[[], T]:
    """Start `work` in a forked child; the returned function waits for and returns its
    result. Without fork, or if the child fails, the returned function runs `work` here."""
    if not can_fork():
        return work
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return work
    if pid == 0:  # the child: do the work, send it back, leave without cleanup
        status = 1
        try:
            os.close(read_end)
            data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(data)
            status = 0
        except BaseException:  # the parent redoes the work, and reports what went wrong
            pass
        finally:
            os._exit(status)
    os.close(write_end)

    def result() -> T:
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()  # (read before waiting: a large result fills the pipe)
        _, code = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(code) == 0 and data:
            with contextlib.suppress(Exception):
                return pickle.loads(data)  # our own child's objects, never outside data
        return work()

    return result
