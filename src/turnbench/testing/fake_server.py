"""A fake OpenAI-compatible server on 127.0.0.1 for tests and benchmarks.

It answers POST /v1/chat/completions deterministically from the request content (so a run
with injected faults must end with exactly the results of a fault-free run), can add fixed
latency, and can inject faults: 429 with or without Retry-After, 500/502/503, dropped
connections, hangs, truncated or non-JSON bodies, empty `choices`, `finish_reason` "length",
and hostile replies (`HOSTILE`: bodies trickled one byte at a time, lone surrogates, usage of
the wrong type, negative or absurd, null content, a missing message, the caller's key echoed
back). It can enforce a rate limit (R requests per second, 429 beyond it), serve or refuse
GET /v1/models, and returns OpenAI-format logprobs when a request asks for them. It also
serves static files (for data-download tests) and reports what it received on GET /stats.
Run it in a thread (`FakeServer(...).start()`, the lifecycle every fake shares, from
fake_base) or as a process: `python -m turnbench.testing.fake_server --port-file F
--latency 0.05`. It parses HTTP itself on a bare asyncio stream server rather than through
aiohttp like the provider fakes: benchmarks measure the client against it, and faults such
as a reset or a truncated body need the raw connection.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import random
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnbench.testing.fake_base import ThreadedServer, serve_as_process

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
# Replies a hostile or broken server sends (not in the default mix either).
HOSTILE = (
    "trickle",  # a valid body sent one byte every `trickle_interval` seconds
    "surrogate",  # content holding a lone surrogate ("\ud83d")
    "bad-usage",  # usage counts as a string, a float and an object
    "negative-usage",
    "absurd-usage",
    "null-content",
    "missing-message",
    "echo-key",  # the Authorization key appended to the content
)
_TOKEN = re.compile(r"\[\[|\]\]|\d|\w+|\s+|[^\w\s]")


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
    usage: Any = None  # the `usage` object sent instead of the computed one
    # OpenAI-format `choices[0].logprobs.content` entries (token, logprob, top_logprobs),
    # sent when the request asks for logprobs; None: generated from the content
    logprobs: list[dict[str, Any]] | None = None
    # tool calls of the reply, in OpenAI's shape ({"id", "type": "function", "function":
    # {"name", "arguments"}}); with no content the message's content is null, as OpenAI's
    tool_calls: list[dict[str, Any]] | None = None
    # a 200 body sent exactly as given: what no JSON encoder writes (a bare NaN, a value
    # nested deeper than the encoder goes), as a hostile or broken server may send it
    raw: bytes | None = None


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


def choice_body(
    content: str | None,
    finish_reason: str = "stop",
    tool_calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One `choices` entry of an OpenAI chat.completion: the assistant's message, with its
    tool calls (and `finish_reason` "tool_calls") when it makes some."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
        if not content:
            message["content"] = None
        if finish_reason == "stop":
            finish_reason = "tool_calls"
    return {"index": 0, "message": message, "finish_reason": finish_reason}


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict:
    """One tool call in OpenAI's shape, for a scripted reply (`Reply.tool_calls`)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    made = call_id or f"call_{hashlib.sha256(f'{name}{text}'.encode()).hexdigest()[:12]}"
    return {"id": made, "type": "function", "function": {"name": name, "arguments": text}}


def completion_body(
    request_id: str,
    model: Any,
    choices: list[dict[str, Any]],
    usage: Any,
    *,
    fingerprint: str | None = "fp_fake",
) -> dict[str, Any]:
    """An OpenAI chat.completion object, the reply every fake that speaks OpenAI sends (this
    server, and fake_batch's for live requests, batch items and Azure); `fingerprint` None
    leaves out `system_fingerprint`."""
    body = {
        "id": f"chatcmpl-{request_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": fingerprint,
        "choices": choices,
        "usage": usage,
    }
    if fingerprint is None:
        del body["system_fingerprint"]
    return body


def _alternatives(token: str) -> list[str]:
    if token.isdigit():
        value = int(token)
        return [
            str(v) for v in sorted(range(1, 11), key=lambda v: (abs(v - value), v)) if v != value
        ]
    if token in ("A", "B", "C"):
        return [t for t in ("A", "B", "C") if t != token]
    return [f"{token}{suffix}" for suffix in ("s", "ed", "ing", "er", "ly")] + [
        f"<alt{j}>" for j in range(20)
    ]


def default_logprobs(content: str, top: int) -> list[dict[str, Any]]:
    """Deterministic OpenAI-format logprobs for `content`: each token (digits and [[ ]] are
    tokens of their own, as in real tokenizers) with a logprob in (-1, 0] and `top`
    alternatives, the token itself first, each next one 1 nat less likely."""
    entries = []
    for index, token in enumerate(_TOKEN.findall(content)):
        logprob = -round((_digest(f"{index}:{token}") % 1000) / 1000, 3)
        options = [token, *_alternatives(token)][: max(0, top)]
        entries.append(
            {
                "token": token,
                "logprob": logprob,
                "bytes": list(token.encode("utf-8")),
                "top_logprobs": [
                    {"token": t, "logprob": round(logprob - j, 3), "bytes": list(t.encode())}
                    for j, t in enumerate(options)
                ],
            }
        )
    return entries


class RateLimiter:
    """A token bucket: `rate` requests per second, bursts of up to `burst`."""

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = rate
        self.burst = max(1.0, burst if burst is not None else rate)
        self.tokens = self.burst
        self.last = time.monotonic()

    def admit(self) -> tuple[bool, float]:
        """(admitted, seconds until the next request would be admitted)."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True, 0.0
        return False, (1.0 - self.tokens) / self.rate


class FakeServer(ThreadedServer):
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
        trickle_interval: float = 0.4,
        models: bool = True,
        rate_limit: float | None = None,
        rate_burst: float | None = None,
        rate_limit_retry_after: bool = False,
        ratelimit_headers: bool = False,
        fixed_reply: str | None = None,
    ) -> None:
        super().__init__()
        self.latency = latency
        self.fault_rate = fault_rate
        self.faults = faults
        self.responder = responder
        self.files = files or {}
        self.hang_seconds = hang_seconds
        self.api_key = api_key
        self.record_bodies = record_bodies
        self.trickle_interval = trickle_interval
        self.models = models  # False: GET /v1/models answers 404, like many small servers
        self.limiter = RateLimiter(rate_limit, rate_burst) if rate_limit else None
        self.rate_limit_retry_after = rate_limit_retry_after
        self.ratelimit_headers = ratelimit_headers
        self.fixed_reply = fixed_reply
        self.reported_model: str | None = None  # set: every reply names this model
        self._fixed_payload: bytes | None = None
        self._random = random.Random(seed)
        # self.requests: the JSON body of each chat request ({} with record_bodies=False)
        self.headers_seen: list[dict[str, str]] = []
        self.models_headers_seen: list[dict[str, str]] = []  # of GET /v1/models
        # self.counts: "200", "429", "hang", ... per outcome; "file", "models" per GET
        self.outcomes: list[str] = []  # per received request: "200", "429", "hang", ...
        self.usage: dict[str, Counter[str]] = {}  # model -> tokens reported in full replies
        self._server: asyncio.Server | None = None

    # -- lifecycle: a bare stream server, the lightest request path for benchmarks ----------
    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    async def listen(self, port: int) -> int:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port, backlog=512)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Close the listener and cancel open connections (hung ones included)."""
        assert self._server is not None
        self._server.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

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
            self.count("file")
            return await self._send(
                writer, 200, self.files[path], content_type="application/octet-stream"
            )
        if method == "POST" and path.split("?", 1)[0].endswith("/chat/completions"):
            return await self._chat(headers, body, writer)
        if method == "GET" and path.split("?", 1)[0].endswith("/models"):
            return await self._models(headers, writer)
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
            403: "Forbidden",
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
        content = self.fixed_reply if self.fixed_reply is not None else default_content(request)
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

    def _authorized(self, headers: dict[str, str]) -> bool:
        return self.api_key is None or headers.get("authorization") == f"Bearer {self.api_key}"

    async def _unauthorized(self, writer: asyncio.StreamWriter) -> bool:
        body = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
        return await self._send(writer, 401, json.dumps(body).encode())

    async def _models(self, headers: dict[str, str], writer: asyncio.StreamWriter) -> bool:
        with self._lock:
            self.counts["models"] += 1
            if self.record_bodies:
                self.models_headers_seen.append(
                    {k: v for k, v in headers.items() if k == "authorization"}
                )
        if not self.models:
            return await self._send(writer, 404, b'{"error": {"message": "not found"}}')
        if not self._authorized(headers):
            return await self._unauthorized(writer)
        listing = {"object": "list", "data": [{"id": "fake", "object": "model"}]}
        return await self._send(writer, 200, json.dumps(listing).encode())

    def _admit(self) -> tuple[bool, dict[str, str]]:
        """Whether the rate limit admits this request, and the headers to answer with."""
        assert self.limiter is not None
        with self._lock:
            admitted, wait = self.limiter.admit()
            remaining = int(self.limiter.tokens)
            if not admitted:
                self.counts["429"] += 1
                self.outcomes.append("429")
        extra: dict[str, str] = {}
        if self.ratelimit_headers:
            extra["x-ratelimit-limit-requests"] = str(int(self.limiter.burst))
            extra["x-ratelimit-remaining-requests"] = str(remaining)
            extra["x-ratelimit-reset-requests"] = f"{max(wait, 1.0 / self.limiter.rate):.3f}s"
        if not admitted and self.rate_limit_retry_after:
            extra["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
            extra["Retry-After"] = str(max(1, math.ceil(wait)))
        return admitted, extra

    async def _too_many(self, writer: asyncio.StreamWriter, extra: dict[str, str]) -> bool:
        body = b'{"error": {"message": "Rate limit reached", "type": "requests"}}'
        return await self._send(writer, 429, body, extra=extra)

    async def _fixed(self, writer: asyncio.StreamWriter) -> bool:
        """The precomputed reply of --fixed-reply: no parsing, no hashing (benchmarks)."""
        if self._fixed_payload is None:
            usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
            choices = [choice_body(self.fixed_reply)]
            # no fingerprint: the records benchmarks write stay as small as they were
            fixed = completion_body("fixed", "fake", choices, usage, fingerprint=None)
            self._fixed_payload = json.dumps(fixed).encode()
        if self.latency:
            await asyncio.sleep(self.latency)
        with self._lock:
            self.counts["200"] += 1
        return await self._send(writer, 200, self._fixed_payload)

    async def _chat(
        self, headers: dict[str, str], body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        extra_headers: dict[str, str] = {}
        if self.fixed_reply is not None and not self.record_bodies:
            if not self._authorized(headers):
                return await self._unauthorized(writer)
            if self.limiter is not None:
                admitted, extra_headers = self._admit()
                if not admitted:
                    return await self._too_many(writer, extra_headers)
            return await self._fixed(writer)
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
        if not self._authorized(headers):
            with self._lock:
                self.counts["401"] += 1
                self.outcomes.append("401")
            return await self._unauthorized(writer)
        if self.limiter is not None:
            admitted, extra_headers = self._admit()
            if not admitted:
                return await self._too_many(writer, extra_headers)
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
        content: str | None = reply.content
        if reply.action == "surrogate":
            content = f"{reply.content} \ud83d"
        elif reply.action == "echo-key":
            bearer = headers.get("authorization", "").removeprefix("Bearer ")
            content = f"{reply.content} (you sent: {bearer})"
        elif reply.action == "null-content":
            content = None
        if reply.status != 200:
            payload = json.dumps(
                reply.body
                or {"error": {"message": f"injected {reply.status}", "type": "server_error"}}
            ).encode()
            return await self._send(writer, reply.status, payload, extra=reply.headers)
        if reply.raw is not None:
            return await self._send(writer, 200, reply.raw, extra=reply.headers)
        completion = completion_body(
            str(len(self.requests)),
            self.reported_model or request.get("model", "fake"),
            []
            if reply.action == "empty-choices"
            else [choice_body(content, reply.finish_reason, reply.tool_calls)],
            {
                "prompt_tokens": _approx_tokens(request),
                "completion_tokens": max(1, len(reply.content) // 4),
                "total_tokens": 0,
            },
        )
        choice = completion["choices"][0] if completion["choices"] else {}
        if reply.action == "missing-message":
            choice.pop("message", None)
        if request.get("logprobs") and choice:
            top = request.get("top_logprobs")
            top = top if isinstance(top, int) and not isinstance(top, bool) else 0
            entries = reply.logprobs
            if entries is None:
                entries = default_logprobs(content or "", top)
            choice["logprobs"] = {"content": entries}
        if reply.usage is not None:
            completion["usage"] = reply.usage
        elif reply.action == "bad-usage":
            completion["usage"] = {
                "prompt_tokens": "12",
                "completion_tokens": 3.5,
                "total_tokens": {},
            }
        elif reply.action == "negative-usage":
            completion["usage"] = {"prompt_tokens": -1000000, "completion_tokens": -7}
        elif reply.action == "absurd-usage":
            completion["usage"] = {"prompt_tokens": 10**15, "completion_tokens": 12}
        payload = json.dumps(completion).encode()
        if reply.action in ("respond", "echo-key", "surrogate", "trickle"):
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
        if reply.action == "trickle":
            await self._send(writer, 200, b"", declared_length=len(payload))
            for index in range(len(payload)):
                writer.write(payload[index : index + 1])
                await writer.drain()
                await asyncio.sleep(self.trickle_interval)
            return True
        return await self._send(writer, 200, payload, extra={**extra_headers, **reply.headers})


def _approx_tokens(request: dict[str, Any]) -> int:
    return sum(len(str(m.get("content", ""))) for m in request.get("messages") or []) // 4


def spawn(latency: float, workdir: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """Start the server as its own process (so its CPU is not the caller's) on a free port;
    returns the process and its base URL. The caller terminates the process."""
    port_file = workdir / "fake-server.port"
    port_file.unlink(missing_ok=True)  # (one left by a server killed in an earlier use)
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
    parser.add_argument("--rate-limit", type=float, help="Admit this many requests per second.")
    parser.add_argument("--rate-burst", type=float, help="Token-bucket size (default: 1 s).")
    parser.add_argument(
        "--retry-after", action="store_true", help="Send Retry-After with rate-limit 429s."
    )
    parser.add_argument(
        "--ratelimit-headers", action="store_true", help="Send x-ratelimit-* headers."
    )
    parser.add_argument("--no-models", action="store_true", help="GET /v1/models answers 404.")
    parser.add_argument(
        "--fixed-reply", help="Send this content to every request (with --no-record: unparsed)."
    )
    args = parser.parse_args()
    server = FakeServer(
        latency=args.latency,
        fault_rate=args.fault_rate,
        faults=tuple(f for f in args.faults.split(",") if f),
        seed=args.seed,
        hang_seconds=args.hang_seconds,
        record_bodies=not args.no_record,
        models=not args.no_models,
        rate_limit=args.rate_limit,
        rate_burst=args.rate_burst,
        rate_limit_retry_after=args.retry_after,
        ratelimit_headers=args.ratelimit_headers,
        fixed_reply=args.fixed_reply,
    )

    serve_as_process(server, args.port, args.port_file)


if __name__ == "__main__":
    main()
