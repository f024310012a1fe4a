"""The one base of every fake server under turnbench.testing: a listener on 127.0.0.1 with
its own event loop in a thread, and the counts and records tests read.

Why a thread: a test drives real client code synchronously (a CLI run, an SDK call) while
the fake answers, and the state lives on the server object, so a test can read what it
received, stop the server, and start a new one on the same port, which is what a process
restart looks like to a client. A subclass says only how it listens (`listen`, `close`):
aiohttp routes for the provider fakes (fake_http.FakeHTTPServer), a bare asyncio stream
server for the OpenAI-compatible one (fake_server.FakeServer), whose request path
benchmarks measure. This module imports neither, so the process that benchmarks spawn stays
light.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Self


class ThreadedServer:
    def __init__(self) -> None:
        self.port: int | None = None
        self.counts: Counter[str] = Counter()  # what each subclass counts, by name
        self.requests: list[dict[str, Any]] = []  # what each subclass records of a request
        self._lock = threading.Lock()  # the server thread writes what the test thread reads
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    # -- to override -----------------------------------------------------------------------
    async def listen(self, port: int) -> int:
        """Start accepting connections on 127.0.0.1:`port` (0: a free one); the bound port."""
        raise NotImplementedError

    async def close(self) -> None:
        """Stop accepting and end the open connections, hung ones included."""
        raise NotImplementedError

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def serve(self, port: int = 0) -> None:
        """Listen until `stop()`; runs on the caller's loop (what a process of its own uses)."""
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        self.port = await self.listen(port)
        self._ready.set()
        try:
            await self._stopped.wait()
        finally:
            await self.close()

    def _run(self, port: int) -> None:
        try:
            asyncio.run(self.serve(port))
        except BaseException as error:  # e.g. the port is taken: start() says so at once
            self._failure = error
            self._ready.set()

    def start(self, port: int = 0) -> Self:
        """Serve in a thread; `port` 0 picks a free one (give the old port to restart)."""
        self._ready.clear()
        self._failure = None
        self._thread = threading.Thread(target=self._run, args=(port,), daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or self._failure is not None:
            raise RuntimeError(f"{type(self).__name__} did not start") from self._failure
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopped is not None:
            with contextlib.suppress(RuntimeError):  # its loop is already closed
                self._loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers for subclasses ------------------------------------------------------------
    def count(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1


def serve_as_process(server: ThreadedServer, port: int, port_file: Path | None) -> None:
    """Run `server` as a process's whole work until interrupted: listen on `port` (0: a
    free one), then write the bound port to `port_file` (atomically: a reader polling for
    the file never sees it half written), as `spawn`ers wait for it."""

    async def run() -> None:
        task = asyncio.create_task(server.serve(port))
        while server.port is None:
            if task.done():  # the listen failed (the port is taken): end with its error
                await task
            await asyncio.sleep(0.01)
        if port_file is not None:
            tmp = port_file.with_suffix(".tmp")
            tmp.write_text(str(server.port))
            tmp.replace(port_file)
        await task

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
