"""A base for fake provider servers on 127.0.0.1: an aiohttp app run in its own thread.

Subclasses add routes in `routes()`. State lives on the server object, so a test can drop
its client, build a new one and find the same batches (what a process restart looks like
to the provider). Scripted replies (`script`) let a test inject failures in order.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Scripted:
    """One canned HTTP reply, consumed by the next matching request."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    path_contains: str = ""  # only requests whose path contains this


class FakeHTTPServer:
    def __init__(self) -> None:
        self.port: int | None = None
        self.script: list[Scripted] = []
        self.counts: Counter[str] = Counter()  # "METHOD path-pattern" -> requests
        self.requests: list[dict[str, Any]] = []  # {"method", "path", "query", "headers", "json"}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None

    # -- to override -----------------------------------------------------------------------
    def routes(self) -> list[web.RouteDef]:
        raise NotImplementedError

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.add_routes(self.routes())
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        await self._stopped.wait()
        await self._runner.cleanup()

    def start(self) -> FakeHTTPServer:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"{type(self).__name__} did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers for subclasses ------------------------------------------------------------
    async def record(self, request: web.Request, name: str) -> Any:
        """Count and remember the request; return its JSON body (None when not JSON)."""
        payload: Any = None
        if request.content_type == "application/json" and request.can_read_body:
            try:
                payload = await request.json()
            except ValueError:
                payload = None
        with self._lock:
            self.counts[name] += 1
            self.requests.append(
                {
                    "name": name,
                    "method": request.method,
                    "path": request.path,
                    "query": dict(request.query),
                    "headers": {k.lower(): v for k, v in request.headers.items()},
                    "json": payload,
                }
            )
        return payload

    def scripted(self, request: web.Request) -> web.Response | None:
        """The next canned reply for this request, if any is queued."""
        with self._lock:
            for index, entry in enumerate(self.script):
                if entry.path_contains in request.path:
                    del self.script[index]
                    return web.json_response(entry.body, status=entry.status, headers=entry.headers)
        return None

    def bodies(self, name: str) -> list[Any]:
        with self._lock:
            return [r["json"] for r in self.requests if r["name"] == name]

    def headers_of(self, name: str) -> list[dict[str, str]]:
        with self._lock:
            return [r["headers"] for r in self.requests if r["name"] == name]
