"""The parent's handle on the llama.cpp worker process (see llama_worker.py).

llama.cpp is native code: a build tuned to another CPU dies of SIGILL or SIGSEGV, and a
model too big for memory is killed by the kernel. Run in-process, any of these ends
turnbench with no message. Here the engine lives in a child process; when it dies, every
request waiting on it raises `EngineCrashedError`, which stops the run with one message
saying what crashed, the likely cause and the exact command that rebuilds llama.cpp, after
everything finished before the crash has been logged.

A reader thread reads the worker's replies and resolves `concurrent.futures.Future`s, so
this class works with any (or no) running event loop; `generate` awaits them.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnbench.backends import llama_build
from turnbench.errors import EngineCrashedError, FatalBackendError

WORKER_MODULE = "turnbench.backends.llama_worker"
START_TIMEOUT_S = 120.0  # importing llama_cpp from a cold disk
STOP_TIMEOUT_S = 10.0

# Looked up by name: Windows has no SIGBUS or SIGKILL, and this module must import there.
_SIGNAL_CAUSES = {
    number: cause
    for name, cause in (
        ("SIGSEGV", "segmentation fault"),
        ("SIGILL", "illegal instruction"),
        ("SIGABRT", "aborted"),
        ("SIGBUS", "bus error"),
        ("SIGFPE", "floating-point exception"),
        ("SIGKILL", "killed, usually by the out-of-memory killer"),
    )
    if (number := getattr(signal, name, None)) is not None
}
_SIGKILL = getattr(signal, "SIGKILL", None)

# signals by which native code dies of a bad instruction or memory access
_NATIVE_FAULTS = {
    number
    for name in ("SIGSEGV", "SIGILL", "SIGBUS", "SIGFPE", "SIGABRT")
    if (number := getattr(signal, name, None)) is not None
}


class WorkerRequestError(Exception):
    """The worker refused one request (e.g. the prompt exceeds the context window)."""


@dataclass(frozen=True)
class Hello:
    version: str
    system_info: str


def describe_exit(returncode: int | None) -> str:
    """ "killed by SIGSEGV (segmentation fault)", "exit status 1", ..."""
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            number = signal.Signals(-returncode)
        except ValueError:
            return f"killed by signal {-returncode}"
        cause = _SIGNAL_CAUSES.get(number)
        return f"killed by {number.name}" + (f" ({cause})" if cause else "")
    return f"exit status {returncode}"


def crash_message(
    spec: str,
    returncode: int | None,
    *,
    problems: list[str] | None = None,
    last_output: str = "",
    python: str | None = None,
) -> str:
    """The one message a run ends with when the engine dies."""
    how = describe_exit(returncode)
    if _SIGKILL is not None and returncode == -_SIGKILL:
        cause = (
            "The likely cause is memory: the model and its context did not fit (try a "
            "smaller model). If memory was not short, the llama-cpp-python build may not suit "
            "this CPU"
        )
    elif returncode is not None and -returncode in _NATIVE_FAULTS:
        cause = (
            "The likely cause is a llama-cpp-python build tuned to a specific CPU (compiled "
            "with native flags such as AVX-512 or AMX, on this machine or on another one whose "
            "wheel pip reused from its cache)"
        )
    else:
        cause = (
            "It stopped unexpectedly (see its last output, if any). If this happens again, "
            "the llama-cpp-python build may not suit this CPU"
        )
    if problems:
        cause += "; this build has " + "; ".join(problems)
    parts = [
        f"{spec}: the llama.cpp engine crashed ({how}).",
        f"{cause}. Rebuild it for any CPU of this architecture with:",
        f"  {llama_build.rebuild_command(python)}",
        "Everything finished before the crash is in the run log: re-run the same command to "
        "resume.",
    ]
    if last_output:
        parts.insert(1, f"Last output of the engine: {last_output}")
    return "\n".join(parts)


def _package_root() -> str:
    """The directory that holds the `turnbench` package, for the worker's import path."""
    return str(Path(__file__).resolve().parents[2])


class EngineProcess:
    """One worker process holding one model; requests are answered in the order sent."""

    def __init__(
        self,
        spec: str,
        model_path: Path,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        seed: int = 0,
        python: str | None = None,
        worker_module: str = WORKER_MODULE,
    ) -> None:
        self.spec = spec
        self._worker_module = worker_module
        self.model_path = model_path
        self._config = {
            "model_path": str(model_path),
            "n_ctx": n_ctx,
            "n_threads": n_threads or max(1, os.cpu_count() or 1),
            "seed": seed,
        }
        self._python = python or sys.executable
        self._proc: subprocess.Popen[str] | None = None
        self._hello: Hello | None = None
        self._hello_event = threading.Event()
        self._loaded: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._pending: dict[int, concurrent.futures.Future[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        # why the worker is unusable: it crashed, it stopped, or it could not load the model
        self._dead: FatalBackendError | None = None
        self._load_error: FatalBackendError | None = None
        self._closing = False
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=5)
        self._threads: list[threading.Thread] = []
        self.problems: list[str] = []

    # -- start -----------------------------------------------------------------------------
    def start(self) -> Hello:
        """Start the worker and wait until llama_cpp is imported; the model then loads in
        the background while the caller goes on. Raises EngineCrashedError if it dies."""
        env = dict(os.environ)
        root = _package_root()
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            [self._python, "-m", self._worker_module, json.dumps(self._config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
        )
        for target in (self._read_replies, self._read_stderr):
            thread = threading.Thread(target=target, name=f"llama-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)
        if not self._hello_event.wait(START_TIMEOUT_S):
            self._kill()
            raise FatalBackendError(
                f"{self.spec}: the llama.cpp worker did not start within {START_TIMEOUT_S:.0f}s"
            )
        if self._dead is not None:
            raise self._dead
        assert self._hello is not None
        settings = llama_build.installed_cmake_config()
        self.problems = llama_build.build_problems(self._hello.system_info, settings)
        return self._hello

    @property
    def hello(self) -> Hello | None:
        return self._hello

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # -- requests --------------------------------------------------------------------------
    async def generate(
        self,
        messages: list[Any],
        options: dict[str, Any],
        *,
        grammar: str | None = None,
        top_logprobs: int | None = None,
    ) -> dict[str, Any]:
        """One generation; on cancellation, stop it at the next token and wait for it, so
        the worker is idle again when this returns."""
        await asyncio.wrap_future(self._loaded)
        ident = next(self._ids)
        future: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        with self._lock:
            if self._dead is not None:
                raise self._dead
            self._pending[ident] = future
        self._send(
            {
                "op": "generate",
                "id": ident,
                "messages": list(messages),
                "options": options,
                "grammar": grammar,
                "top_logprobs": top_logprobs,
            }
        )
        waiter = asyncio.wrap_future(future)
        try:
            reply = await asyncio.shield(waiter)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self._send({"op": "cancel", "id": ident})
            with contextlib.suppress(BaseException):
                await waiter
            raise
        if not reply.get("ok"):
            raise WorkerRequestError(str(reply.get("error", "request failed")))
        return reply["generation"]

    def _send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=True) + "\n"
        assert self._proc is not None and self._proc.stdin is not None
        try:
            with self._lock:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            # the worker is gone: its exit is being (or has been) reported by the reader
            for thread in self._threads:
                thread.join(timeout=STOP_TIMEOUT_S)
            raise self._dead or self._crash(self._proc.poll()) from None

    # -- the reader threads ----------------------------------------------------------------
    def _read_replies(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            op = message.get("op")
            if op == "hello":
                self._hello = Hello(str(message.get("version")), str(message.get("system_info")))
                self._hello_event.set()
            elif op == "loaded":
                _resolve(self._loaded, None)
            elif op == "load_failed":
                self._load_error = FatalBackendError(
                    f"{self.spec}: llama.cpp could not load {self.model_path.name}: "
                    f"{message.get('error')}"
                )
                _fail(self._loaded, self._load_error)
            elif op == "result":
                with self._lock:
                    future = self._pending.pop(int(message.get("id", -1)), None)
                if future is not None:
                    _resolve(future, message)
        returncode = self._proc.wait()
        # a worker that could not load the model exits on purpose: that is not a crash, and
        # start() may see the exit before it sees the load failure (a fast machine)
        error = None if self._closing else self._load_error or self._crash(returncode)
        with self._lock:
            self._dead = error or EngineCrashedError(f"{self.spec}: the llama.cpp worker stopped")
            pending, self._pending = list(self._pending.values()), {}
        for future in [*pending, self._loaded]:
            _fail(future, self._dead)
        self._hello_event.set()

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            text = line.strip()
            if text:
                self._stderr_tail.append(text[:300])

    def _crash(self, returncode: int | None) -> EngineCrashedError:
        for thread in self._threads[1:]:  # let the stderr reader catch the last words
            if thread is not threading.current_thread():
                thread.join(timeout=1.0)
        return EngineCrashedError(
            crash_message(
                self.spec,
                returncode,
                problems=self.problems,
                last_output=" | ".join(self._stderr_tail),
                python=self._python,
            )
        )

    # -- stop ------------------------------------------------------------------------------
    def close(self) -> None:
        """Ask the worker to finish, then make sure it is gone (blocking, <= ~10 s)."""
        proc = self._proc
        if proc is None:
            return
        self._closing = True
        if proc.poll() is None:
            with contextlib.suppress(BrokenPipeError, OSError, ValueError), self._lock:
                assert proc.stdin is not None
                proc.stdin.write(json.dumps({"op": "stop"}) + "\n")
                proc.stdin.flush()
                proc.stdin.close()
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._kill()
        for thread in self._threads:
            thread.join(timeout=STOP_TIMEOUT_S)

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=STOP_TIMEOUT_S)


def _resolve(future: concurrent.futures.Future, value: Any) -> None:
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        future.set_result(value)


def _fail(future: concurrent.futures.Future, error: BaseException) -> None:
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        future.set_exception(error)
