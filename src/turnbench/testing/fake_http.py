"""The aiohttp side of the fake servers: provider fakes that are a list of routes.

A subclass lists its routes with `route`, which records and counts each request under a
name, lets `refuse` answer first (a wrong key, a missing header, a queued `script` reply)
and lets a handler answer early by raising `Refusal`; so a handler holds only what its
endpoint does. Scripted replies (`script`) let a test inject failures in order.
`FakeBatchAPI` adds what the providers' batch APIs share. State lives on the server object,
so a test can drop its client, build a new one and find the same batches (what a process
restart looks like to the provider).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from turnbench.testing.fake_base import ThreadedServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Scripted:
    """One canned HTTP reply, consumed by the next matching request."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    path_contains: str = ""  # only requests whose path contains this


class Refusal(Exception):
    """Raised by a handler to answer with `response` instead (an unknown id, a bad body)."""

    def __init__(self, response: web.Response) -> None:
        super().__init__(response.status)
        self.response = response


class FakeHTTPServer(ThreadedServer):
    def __init__(self) -> None:
        super().__init__()
        self.script: list[Scripted] = []
        # self.counts: "name" -> requests; self.requests: one dict each, see `record`
        self._runner: web.AppRunner | None = None

    # -- to override -----------------------------------------------------------------------
    def routes(self) -> list[web.RouteDef]:
        raise NotImplementedError

    def refuse(self, request: web.Request) -> web.Response | None:
        """The answer a request gets before its handler runs, if any: the next scripted reply
        here; providers add their own checks (key, version headers) in front of it."""
        return self.scripted(request)

    # -- lifecycle -------------------------------------------------------------------------
    async def listen(self, port: int) -> int:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.add_routes(self.routes())
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        server = site._server
        assert server is not None
        return int(server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- helpers for subclasses ------------------------------------------------------------
    def route(self, method: str, path: str, handler: Handler, name: str | None) -> web.RouteDef:
        """A route to `handler(request)`: the request is recorded under `name` (None:
        neither counted nor recorded), then `refuse` may answer it, then the handler runs; a
        `Refusal` it raises is the answer."""

        async def handle(request: web.Request) -> web.StreamResponse:
            if name is not None:
                await self.record(request, name)
            refused = self.refuse(request)
            if refused is not None:
                return refused
            try:
                return await handler(request)
            except Refusal as refusal:
                return refusal.response

        return web.route(method, path, handle)

    @staticmethod
    async def json_body(request: web.Request) -> Any:
        """The request's JSON body; None when it is not JSON (aiohttp keeps the bytes read)."""
        if request.content_type == "application/json" and request.body_exists:
            try:
                return await request.json()
            except ValueError:
                return None
        return None

    async def record(self, request: web.Request, name: str) -> Any:
        """Count and remember the request; return its JSON body (None when not JSON)."""
        payload = await self.json_body(request)
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


class FakeBatchAPI(FakeHTTPServer):
    """What the OpenAI and Anthropic batch fakes share: batches kept by id, the hooks that
    make items fail (`fail_ids`), go missing (`drop_ids`) or the batch expire (`expire`), and
    `batch_creates` and `items_submitted`, which prove nothing was submitted twice."""

    batch_prefix = "batch"  # ids are PREFIX_0001, PREFIX_0002, ... in creation order

    def __init__(self) -> None:
        super().__init__()
        self.fail_ids: set[str] = set()
        self.drop_ids: set[str] = set()
        self.expire = False
        self.batch_creates = 0
        self.items_submitted: Counter[str] = Counter()
        self.batches: dict[str, dict[str, Any]] = {}

    def _batch_json(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The provider's JSON for one batch."""
        raise NotImplementedError

    def add_batch(self, items: dict[str, Any], **fields: Any) -> dict[str, Any]:
        """Create a batch of `items` (custom_id -> request) with the provider's own `fields`;
        the caller holds `self._lock`."""
        self.batch_creates += 1
        self.items_submitted.update(list(items))
        batch_id = f"{self.batch_prefix}_{self.batch_creates:04d}"
        batch = {
            "id": batch_id,
            "items": items,
            "polls": 0,
            "created_at": time.time(),
            "outcomes": {},
            **fields,
        }
        self.batches[batch_id] = batch
        return batch

    def batch_of(self, request: web.Request, missing: web.Response) -> dict[str, Any]:
        """The batch named in the path; `missing` answers when there is none."""
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            raise Refusal(missing)
        return batch

    def page(self, request: web.Request, after: str) -> dict[str, Any]:
        """One page of the batches, newest first, as both providers list them: `limit` from
        the query, the query parameter `after` names the last id of the previous page."""
        limit = int(request.query.get("limit", "20"))
        ordered = sorted(self.batches.values(), key=lambda b: b["id"], reverse=True)
        cursor = request.query.get(after)
        if cursor:
            ids = [b["id"] for b in ordered]
            ordered = ordered[ids.index(cursor) + 1 :] if cursor in ids else []
        page = ordered[:limit]
        return {
            "data": [self._batch_json(b) for b in page],
            "has_more": len(ordered) > limit,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
        }
