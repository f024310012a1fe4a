"""Work done in a forked second process while this one does the rest.

Two readers of finished runs use the machine's second core this way: the report renders
the dialogue pages of a large run in a child (40 MB of escaped transcripts for 8 models of
MT-Bench-101, which depend on nothing else it computes), and reading a large log folds its
second half into an index in a child while the parent folds the first (`store.rundir`).
Where the operating system can fork cheaply (Linux), the child starts with everything the
parent holds already in memory, and sends back only its result. Anything that goes wrong
in the child (an exception, a crash, no fork, no answer within the time allowed) makes the
parent do the work itself, so the result is the same either way
(`tests/e2e/test_report_parallel.py`, `tests/unit/test_split_scan.py`).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Pending(Protocol[T_co]):
    """The result of work started elsewhere: calling it waits for it; `cancel` stops it
    when the caller will not wait (it failed meanwhile)."""

    def __call__(self, timeout: float | None = None) -> T_co: ...

    def cancel(self) -> None: ...


def can_fork() -> bool:
    """Linux with two or more CPUs: elsewhere fork is missing (Windows), unsafe for some
    system libraries (macOS), or would only take turns on one core."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and _cpus() > 1


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # (the CPUs this process may run on)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def forked(work: Callable[[], T]) -> Pending[T]:
    """Start `work` in a forked child; the returned function waits for and returns its
    result (`timeout`: seconds to wait before the child is killed). Without fork, or if the
    child fails or does not answer in time, the returned function runs `work` here.

    A child forked from a process with other threads holds only the forking thread; a lock
    another thread held at that moment stays held in the child. The work given here reads
    files and computes; the timeout is what makes a child stuck on such a lock harmless."""
    if not can_fork():
        return _Here(work)
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return _Here(work)
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
    return _InChild(work, pid, read_end)


class _Here:
    """Work done in this process when it is waited for (no fork here)."""

    def __init__(self, work: Callable[[], T]) -> None:
        self.work = work

    def __call__(self, timeout: float | None = None) -> Any:
        return self.work()

    def cancel(self) -> None:
        pass


class _InChild:
    """Work a forked child is doing: its result, or the work done here if it fails."""

    def __init__(self, work: Callable[[], Any], pid: int, read_end: int) -> None:
        self.work, self.pid, self.read_end = work, pid, read_end

    def __call__(self, timeout: float | None = None) -> Any:
        data = _read_all(self.read_end, timeout)  # (before waiting: a large result fills the pipe)
        if data is None:  # no answer in time: the child is stopped and the work done here
            self._stop()
        code = self._reap()
        if data and code == 0:
            with contextlib.suppress(Exception):
                return pickle.loads(data)  # our own child's objects, never outside data
        return self.work()

    def cancel(self) -> None:
        """Stop the child and close the pipe (no zombie, no descriptor left behind)."""
        self._stop()
        with contextlib.suppress(OSError):
            os.close(self.read_end)
        self._reap()

    def _stop(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)

    def _reap(self) -> int | None:
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # (reaped already)
            return None
        return os.waitstatus_to_exitcode(status)


def _read_all(fd: int, timeout: float | None) -> bytes | None:
    """Everything written to the pipe until the child closed it; None if that took longer
    than `timeout` seconds (the descriptor is closed either way)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    parts: list[bytes] = []
    try:
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    return None
            part = os.read(fd, 1 << 20)
            if not part:
                return b"".join(parts)
            parts.append(part)
    finally:
        os.close(fd)
