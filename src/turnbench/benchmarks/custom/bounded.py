"""Deterministic checks with a time limit: a check that does not finish fails, with its reason.

A check's pattern or schema is the user's, but the text it reads is the model's answer, and
Python's regular expressions backtrack: `^(\\w+\\s?)*$` against forty letters and a "!" runs
for hours, so does a schema `pattern` such as `^(a+)+$`, and `uniqueItems` compares every
pair of 5,000 objects (52 s). Checks run while results are built, after the run's log is
complete, so such an answer hung every run and every resume before results.json was written.

So the kinds that can run long (`regex`, `not_regex`, `json_schema`: BOUNDED_KINDS) run in a
child process (`check_worker`), one check at a time, each given CHECK_SECONDS; a check still
running then is stopped with its process (a regular expression cannot be interrupted inside
the process) and recorded as failed: "timed out after 2 s". The next check gets a new
process. The other kinds read the answer once and run here. Outcomes are remembered per
check and answer for the life of the benchmark object, so the score tables built several
times for one results file (per judge, per repeat) pay for a check once.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from turnbench.benchmarks.custom.checks import CheckResult, run_check
from turnbench.benchmarks.custom.spec import Check

#: the most one check may take (wall time, in its worker process)
CHECK_SECONDS = 2.0
#: check kinds whose time depends on the pattern or schema as much as on the answer's length
BOUNDED_KINDS = frozenset({"regex", "not_regex", "json_schema"})
WORKER_MODULE = "turnbench.benchmarks.custom.check_worker"
START_SECONDS = 60.0  # starting Python and importing jsonschema, on a slow disk
LENGTH_BYTES = 8


def timed_out(seconds: float) -> CheckResult:
    return CheckResult(False, f"timed out after {seconds:g} s (the check was stopped)")


def _package_root() -> str:
    """The directory holding the `turnbench` package, for the worker's import path."""
    import turnbench

    return str(Path(turnbench.__file__).resolve().parent.parent)


class CheckWorker:
    """One child process answering check requests in order; replaced when it is killed."""

    def __init__(self, seconds: float = CHECK_SECONDS, python: str | None = None) -> None:
        self.seconds = seconds
        self._python = python or sys.executable
        self._proc: subprocess.Popen[bytes] | None = None
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=3)
        self._ids = 0
        self.started = 0  # processes started (one, plus one after each check stopped)

    def run(self, check: Check, answer: str) -> CheckResult:
        """The outcome of one check, within `seconds` (a worker that cannot start, or that
        dies, fails the check with the reason)."""
        problem = self._ensure_started()
        if problem is not None:
            return CheckResult(False, problem)
        assert self._proc is not None and self._proc.stdin is not None
        self._ids += 1
        payload = pickle.dumps((self._ids, check, answer), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self._proc.stdin.write(len(payload).to_bytes(LENGTH_BYTES, "big") + payload)
            self._proc.stdin.flush()
        except OSError:
            return CheckResult(False, self._stopped())
        try:
            reply = self._replies.get(timeout=self.seconds)
        except queue.Empty:
            self._kill()
            return timed_out(self.seconds)
        if reply is None or reply.get("id") != self._ids:
            return CheckResult(False, self._stopped())
        return CheckResult(bool(reply.get("passed")), str(reply.get("detail", ""))[:200])

    def _ensure_started(self) -> str | None:
        if self._proc is not None and self._proc.poll() is None:
            return None
        self._kill()
        env = dict(os.environ)
        paths = (_package_root(), env.get("PYTHONPATH"))
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        self._replies = queue.Queue()
        try:
            self._proc = subprocess.Popen(
                [self._python, "-m", WORKER_MODULE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        except OSError as error:
            return f"the check worker could not start ({error})"
        self.started += 1
        proc, replies = self._proc, self._replies
        assert proc.stdout is not None and proc.stderr is not None
        for target, stream in ((self._read_replies, proc.stdout), (self._read_stderr, proc.stderr)):
            threading.Thread(target=target, args=(stream, replies), daemon=True).start()
        try:
            hello = replies.get(timeout=START_SECONDS)
        except queue.Empty:
            hello = None
        if hello is None or hello.get("op") != "hello":
            self._kill()
            return self._stopped("the check worker did not start")
        return None

    @staticmethod
    def _read_replies(stream: IO[bytes], replies: queue.Queue[dict[str, Any] | None]) -> None:
        for line in stream:
            with contextlib.suppress(ValueError):
                replies.put(json.loads(line))
        replies.put(None)  # the process is gone

    def _read_stderr(self, stream: IO[bytes], _replies: object) -> None:
        for line in stream:
            text = line.decode("utf-8", "replace").strip()
            if text:
                self._stderr.append(text[:200])

    def _stopped(self, what: str = "the check worker stopped") -> str:
        self._kill()
        said = f": {self._stderr[-1]}" if self._stderr else ""
        return f"{what}{said}"[:200]

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def close(self) -> None:
        self._kill()


class BoundedChecks:
    """Runs checks for one benchmark: the bounded kinds in a worker started when one is
    needed and stopped at the end of each `run_all`; outcomes remembered."""

    def __init__(self, seconds: float = CHECK_SECONDS) -> None:
        self.seconds = seconds
        self._known: dict[tuple[int, str], CheckResult] = {}
        self.started = 0  # worker processes started, over all calls

    def run_all(self, requests: Sequence[tuple[Check, str]]) -> list[CheckResult]:
        worker: CheckWorker | None = None
        outcomes: list[CheckResult] = []
        try:
            for check, answer in requests:
                if check.kind not in BOUNDED_KINDS:
                    outcomes.append(run_check(check, answer))
                    continue
                key = (id(check), answer)  # the spec holds its checks for the benchmark's life
                found = self._known.get(key)
                if found is None:
                    worker = worker or CheckWorker(self.seconds)
                    found = self._known[key] = worker.run(check, answer)
                outcomes.append(found)
        finally:
            if worker is not None:
                self.started += worker.started
                worker.close()
        return outcomes
