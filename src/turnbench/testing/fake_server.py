"""A fake OpenAI-compatible server on 127.0.0.1 for tests and benchmarks.

It answers POST /v1/chat/completions deterministically from the request content (so a run
with injected faults must end with exactly the results of a fault-free run), can add fixed
latency, and can inject faults: 429 with or without Retry-After, 500/502/503, dropped
connections, hangs, truncated or non-JSON bodies, empty `choices`, `finish_reason` "length".
It also serves static files (for data-download tests) and reports what it received on
GET /stats. Run it in a thread (`FakeServer(...).start()`) or as a process:
`python -m turnbench.testing.fake_server --port-file F --latency 0.05`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAULTS = (
    "429",
    "429-retry-after",
    "500",
    "502",
    "503",
    "reset",
    "hang",
    "truncated",
    "non-json",
    "empty-choices",
)
# Valid replies cut short: they change the content, so they are not in the default mix.
SOFT_FAULTS = ("length",)


@dataclass
class Reply:
    """What the server does for one request. `action` other than "respond" injects a fault."""

    content: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str = "stop"
    action: str = "respond"  # respond | reset | hang | truncated | non-json | empty-choices
    delay: float = 0.0
    body: dict[str, Any] | None = None  # full JSON body override for error statuses


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16)


def default_content(request: dict[str, Any]) -> str:
    """Deterministic reply: a rating for single-grading judges, a verdict for pairwise
    judges, an answer otherwise. Depends only on the messages."""
    messages = request.get("messages") or []
    text = "\n".join(str(m.get("content", "")) for m in messages)
    digest = _digest(text)
    if "[[A]]" in text and "[[B]]" in text:
        return f"Both are fine. Verdict: [[{'ABC'[digest % 3]}]]"
    if "[[rating]]" in text or "Rating: [[" in text:
        return f"The answer is adequate. Rating: [[{1 + digest % 10}]]"
    last_user = next(
        (m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), ""
    )
    return f"Answer {digest % 100000}: a reply to '{str(last_user)[:40]}'."


class FakeServer:
    def __init__(
        self,
        *,
        latency: float = 0.0,
        fault_rate: float = 0.0,
        faults: tuple[str, ...] = FAULTS,
        seed: int = 0,
        responder: Callable[[dict[str, Any]], Reply | str] | None = None,
        files: dict[str, bytes] | None = None,
        hang_seconds: float = 3600.0,
        api_key: str | None = None,
        record_bodies: bool = True,
    ) -> None:
        self.latency = latency
        self.fault_rate = fault_rate
        self.faults = faults
        self.responder = responder
        self.files = files or {}
        self.hang_seconds = hang_seconds
        self.api_key = api_key
        self.record_bodies = record_bodies
        self._random = random.Random(seed)
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.counts: Counter[str] = Counter()
        self.outcomes: list[str] = []  # per received request: "200", "429", "hang", ...
        self.usage: dict[str, Counter[str]] = {}  # model -> tokens reported in full replies
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def serve(self, port: int = 0) -> None:
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port, backlog=512)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        async with self._server:
            with contextlib.suppress(asyncio.CancelledError):
                await self._server.serve_forever()

    def start(self) -> FakeServer:
        self._thread = threading.Thread(target=lambda: asyncio.run(self.serve()), daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._shutdown)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _shutdown(self) -> None:
        """Close the listener and cancel open connections (hung ones included)."""
        assert self._server is not None
        self._server.close()
        for task in asyncio.all_tasks():
            task.cancel()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": len(self.requests), "counts": dict(self.counts)}

    # -- HTTP ------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                keep = await self._dispatch(method, path, headers, body, writer)
                if not keep:
                    break
        except (
            asyncio.IncompleteReadError,
            ConnectionError,
            asyncio.LimitOverrunError,
            ValueError,
            asyncio.CancelledError,  # stop() cancels open (e.g. hung) connections
        ):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _dispatch(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
    ) -> bool:
        if method == "GET" and path == "/stats":
            return await self._send(writer, 200, json.dumps(self.stats()).encode())
        if method == "GET" and path in self.files:
            with self._lock:
                self.counts["file"] += 1
            return await self._send(
                writer, 200, self.files[path], content_type="application/octet-stream"
            )
        if method == "POST" and path.endswith("/chat/completions"):
            return await self._chat(headers, body, writer)
        return await self._send(writer, 404, b'{"error": {"message": "not found"}}')

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: bytes,
        *,
        content_type: str = "application/json",
        extra: dict[str, str] | None = None,
        declared_length: int | None = None,
    ) -> bool:
        reason = {
            200: "OK",
            401: "Unauthorized",
            404: "Not Found",
            429: "Too Many Requests",
            500: "Internal Server Error",
            502: "Bad Gateway",
            503: "Service Unavailable",
        }.get(status, "Status")
        head = [
            f"HTTP/1.1 {status} {reason}",
            f"Content-Type: {content_type}",
            f"Content-Length: {declared_length if declared_length is not None else len(payload)}",
        ]
        for name, value in (extra or {}).items():
            head.append(f"{name}: {value}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        await writer.drain()
        return declared_length is None

    def _choose(self, request: dict[str, Any]) -> Reply:
        if self.responder is not None:
            reply = self.responder(request)
            return Reply(content=reply) if isinstance(reply, str) else reply
        with self._lock:
            faulty = self.fault_rate > 0 and self._random.random() < self.fault_rate
            fault = self._random.choice(self.faults) if faulty else None
        content = default_content(request)
        if fault is None:
            return Reply(content=content)
        if fault == "429":
            return Reply(status=429)
        if fault == "429-retry-after":
            return Reply(status=429, headers={"Retry-After": "0"})
        if fault in ("500", "502", "503"):
            return Reply(status=int(fault))
        if fault == "length":
            return Reply(content=content[: max(1, len(content) // 2)], finish_reason="length")
        return Reply(content=content, action=fault)

    async def _chat(
        self, headers: dict[str, str], body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        try:
            request = json.loads(body)
        except json.JSONDecodeError:
            return await self._send(writer, 400, b'{"error": {"message": "bad json"}}')
        with self._lock:
            if self.record_bodies:
                self.requests.append(request)
                self.headers_seen.append({k: v for k, v in headers.items() if k == "authorization"})
            else:
                self.requests.append({})
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            with self._lock:
                self.counts["401"] += 1
                self.outcomes.append("401")
            return await self._send(
                writer,
                401,
                json.dumps(
                    {
                        "error": {
                            "message": "Incorrect API key provided",
                            "type": "invalid_request_error",
                        }
                    }
                ).encode(),
            )
        reply = self._choose(request)
        delay = reply.delay or self.latency
        if delay:
            await asyncio.sleep(delay)
        outcome = reply.action if reply.action != "respond" else str(reply.status)
        if outcome == "429" and any(h.lower() == "retry-after" for h in reply.headers):
            outcome = "429-retry-after"
        if outcome == "200" and reply.finish_reason != "stop":
            outcome = reply.finish_reason
        with self._lock:
            self.counts[outcome] += 1
            self.outcomes.append(outcome)
        if reply.action == "reset":
            transport = writer.transport
            sock = transport.get_extra_info("socket")
            if sock is not None:
                import socket
                import struct

                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
            return False
        if reply.action == "hang":
            await asyncio.sleep(self.hang_seconds)
            return False
        if reply.status != 200:
            payload = json.dumps(
                reply.body
                or {"error": {"message": f"injected {reply.status}", "type": "server_error"}}
            ).encode()
            return await self._send(writer, reply.status, payload, extra=reply.headers)
        completion = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "fake"),
            "system_fingerprint": "fp_fake",
            "choices": []
            if reply.action == "empty-choices"
            else [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": _approx_tokens(request),
                "completion_tokens": max(1, len(reply.content) // 4),
                "total_tokens": 0,
            },
        }
        payload = json.dumps(completion).encode()
        if reply.action == "respond":
            with self._lock:
                tally = self.usage.setdefault(str(completion["model"]), Counter())
                tally["prompt_tokens"] += completion["usage"]["prompt_tokens"]
                tally["completion_tokens"] += completion["usage"]["completion_tokens"]
        if reply.action == "non-json":
            return await self._send(writer, 200, b"<html>502 upstream hiccup</html>")
        if reply.action == "truncated":
            await self._send(
                writer, 200, payload[: len(payload) // 2], declared_length=len(payload)
            )
            writer.transport.abort()
            return False
        return await self._send(writer, 200, payload, extra=reply.headers)


def _approx_tokens(request: dict[str, Any]) -> int:
    return sum(len(str(m.get("content", ""))) for m in request.get("messages") or []) // 4


def spawn(latency: float, workdir: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """Start the server as its own process (so its CPU is not the caller's) on a free port;
    returns the process and its base URL. The caller terminates the process."""
    port_file = workdir / "fake-server.port"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "turnbench.testing.fake_server",
            "--port-file",
            str(port_file),
            "--latency",
            str(latency),
            "--no-record",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("the fake server did not start")
        time.sleep(0.02)
    return process, f"http://127.0.0.1:{port_file.read_text().strip()}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="Write the bound port here.")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang-seconds", type=float, default=3600.0)
    parser.add_argument("--no-record", action="store_true", help="Keep counts only.")
    args = parser.parse_args()
    server = FakeServer(
        latency=args.latency,
        fault_rate=args.fault_rate,
        faults=tuple(f for f in args.faults.split(",") if f),
        seed=args.seed,
        hang_seconds=args.hang_seconds,
        record_bodies=not args.no_record,
    )

    async def run() -> None:
        task = asyncio.create_task(server.serve(args.port))
        while server.port is None:
            await asyncio.sleep(0.01)
        if args.port_file:
            tmp = args.port_file.with_suffix(".tmp")
            tmp.write_text(str(server.port))
            tmp.replace(args.port_file)
        await task

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    main()
