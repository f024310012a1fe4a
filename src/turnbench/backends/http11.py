"""A small HTTP/1.1 client for the request path: keep-alive connections, one asyncio
protocol per connection, no library underneath.

Why not aiohttp here: importing it costs about 0.2 s (it builds two TLS contexts and a large
class tree at import), and its request machinery about 0.25 ms of CPU per request. A judge
run at hundreds of requests in flight is CPU-bound in its one event loop, and a short run
pays the import before its first request (benchmarks/judge_request_path.py). What an
OpenAI-compatible exchange needs is small: a POST or GET with a JSON body, a status, a few
headers and a body sized by Content-Length or chunked. This module does that and nothing
more. Everything it does not do goes elsewhere (http.py): a URL that the environment sends
through a proxy is handled by aiohttp, which speaks CONNECT tunnels and proxy
authentication.

Failures map to TransientError like every transport's: "connect" (refused, unknown host,
TLS), "timeout", "dropped" (the connection closed before the reply was complete) and
"malformed" (a reply that is not HTTP, a body over MAX_BODY_BYTES, a broken chunk). A server
is untrusted: header and body sizes are capped, and a compressed body is capped after
decompression too.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import sys
import zlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlsplit

from turnbench.backends.http import MAX_BODY_BYTES, HttpReply, describe_error
from turnbench.backends.retry import TransientError

MAX_HEAD_BYTES = 256 * 1024  # status line and headers together
MAX_IDLE_PER_HOST = 256
_PATH_SAFE = "/%:@!$&'()*+,;=-._~?"  # what a URL path and query keep as they are
_NO_BODY_STATUS = (204, 304)


class Headers(dict[str, str]):
    """A reply's headers, names lowercased: `get("Retry-After")` and `get("retry-after")`
    find the same value. A repeated header's values are joined with ", " (RFC 9110)."""

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return dict.get(self, name.lower(), default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and dict.__contains__(self, name.lower())


class _Malformed(Exception):
    """The reply is not HTTP/1.x as we can read it."""


#: a reply as received (its body still content-encoded), and whether its connection can
#: carry the next request
Exchanged = tuple[HttpReply, bool]


class _Parser:
    """Reads one reply from a growing buffer; `feed` returns it once it is complete."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.head_end = -1  # index just past the blank line, once the head is read
        self.scanned = 0  # where the search for the blank line resumes
        self.status = 0
        self.headers = Headers()
        self.keep_alive = True
        self.mode = ""  # "length", "chunked", "close" or "none"
        self.length = 0
        self.chunks: list[bytes] = []  # chunked: the data read so far
        self.chunked_size = 0
        self.pos = 0  # chunked: where the next chunk-size line starts

    def feed(self, buffer: bytearray, eof: bool) -> Exchanged | None:
        if self.head_end < 0 and not self._read_head(buffer):
            if len(buffer) > MAX_HEAD_BYTES:
                raise _Malformed(f"more than {MAX_HEAD_BYTES} bytes of headers")
            return None
        if self.mode == "length":
            end = self.head_end + self.length
            if len(buffer) < end:
                return None
            return self._done(bytes(buffer[self.head_end : end]), len(buffer) == end)
        if self.mode == "none":
            return self._done(b"", len(buffer) == self.head_end)
        if self.mode == "chunked":
            return self._read_chunks(buffer)
        # "close": the body is whatever arrives until the server closes the connection
        if len(buffer) - self.head_end > MAX_BODY_BYTES:
            raise _Malformed("body too large")
        return self._done(bytes(buffer[self.head_end :]), False) if eof else None

    def _done(self, body: bytes, nothing_after: bool) -> Exchanged:
        return HttpReply(self.status, self.headers, body), self.keep_alive and nothing_after

    def _read_head(self, buffer: bytearray) -> bool:
        while True:
            end = buffer.find(b"\r\n\r\n", max(0, self.scanned - 3))
            if end < 0:
                self.scanned = len(buffer)
                return False
            self._parse_head(bytes(buffer[:end]))
            if 100 <= self.status < 200:  # an interim reply (100 Continue): skip it
                del buffer[: end + 4]
                self.scanned = 0
                self.headers = Headers()
                continue
            self.head_end = end + 4
            return True

    def _parse_head(self, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")  # (latin-1 decodes any byte)
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or parts[0] not in ("HTTP/1.1", "HTTP/1.0"):
            raise _Malformed(f"not an HTTP/1.x status line: {lines[0][:100]!r}")
        code = parts[1]
        if len(code) != 3 or not code.isdigit():
            raise _Malformed(f"invalid status code {code[:20]!r}")
        self.status = int(code)
        headers = self.headers
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip() or "\n" in line or "\r" in line:
                raise _Malformed(f"invalid header line {line[:100]!r}")
            key = name.lower()
            value = value.strip(" \t")
            previous = dict.get(headers, key)
            dict.__setitem__(headers, key, value if previous is None else f"{previous}, {value}")
        connection = headers.get("connection", "").lower()
        if parts[0] == "HTTP/1.0":
            self.keep_alive = "keep-alive" in connection
        else:
            self.keep_alive = "close" not in connection
        self._body_mode()

    def _body_mode(self) -> None:
        headers = self.headers
        if self.method == "HEAD" or self.status in _NO_BODY_STATUS:
            self.mode = "none"
            return
        coding = headers.get("transfer-encoding")
        if coding is not None:
            self.mode = "chunked" if coding.lower().rsplit(",", 1)[-1].strip() == "chunked" else ""
            if not self.mode:  # another coding last: the body ends with the connection
                self.mode = "close"
                self.keep_alive = False
            return
        length = headers.get("content-length")
        if length is None:
            self.mode = "close"
            self.keep_alive = False
            return
        values = {value.strip() for value in length.split(",")}
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise _Malformed(f"invalid Content-Length {length[:40]!r}")
        self.length = int(next(iter(values)))
        if self.length > MAX_BODY_BYTES:
            raise _Malformed(f"a {self.length}-byte body")
        self.mode = "length"

    def _read_chunks(self, buffer: bytearray) -> Exchanged | None:
        pos = max(self.pos, self.head_end)
        while True:
            line_end = buffer.find(b"\r\n", pos)
            if line_end < 0:
                if len(buffer) - pos > 4096:
                    raise _Malformed("chunk size line too long")
                self.pos = pos
                return None
            size_text = bytes(buffer[pos:line_end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise _Malformed(f"invalid chunk size {size_text[:20]!r}") from None
            if size < 0:
                raise _Malformed("negative chunk size")
            if size == 0:
                return self._read_trailers(buffer, line_end + 2)
            data_end = line_end + 2 + size
            if len(buffer) < data_end + 2:
                if self.chunked_size + size > MAX_BODY_BYTES:
                    raise _Malformed("body too large")
                self.pos = pos
                return None
            if buffer[data_end : data_end + 2] != b"\r\n":
                raise _Malformed("chunk not followed by CRLF")
            self.chunked_size += size
            if self.chunked_size > MAX_BODY_BYTES:
                raise _Malformed("body too large")
            self.chunks.append(bytes(buffer[line_end + 2 : data_end]))
            pos = data_end + 2

    def _read_trailers(self, buffer: bytearray, pos: int) -> Exchanged | None:
        while True:
            line_end = buffer.find(b"\r\n", pos)
            if line_end < 0:
                if len(buffer) - pos > MAX_HEAD_BYTES:
                    raise _Malformed("trailers too long")
                return None
            if line_end == pos:  # the blank line that ends the message
                return self._done(b"".join(self.chunks), line_end + 2 == len(buffer))
            pos = line_end + 2


class _Connection(asyncio.Protocol):
    """One keep-alive connection; `exchange` sends a request and awaits its whole reply."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.parser: _Parser | None = None
        self.waiter: asyncio.Future[Exchanged] | None = None
        self.eof = False
        self.closed = False

    # -- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.parser is None:  # bytes nobody asked for: the connection is not reusable
            self.close()
            return
        self.buffer += data
        self._advance()

    def eof_received(self) -> bool:
        self.eof = True
        self._advance()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.eof = True
        self._advance()

    # -- use -------------------------------------------------------------------------------
    @property
    def usable(self) -> bool:
        transport = self.transport
        return not (self.closed or self.eof or transport is None or transport.is_closing())

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            with contextlib.suppress(RuntimeError):  # its event loop is closed already
                self.transport.close()

    async def exchange(self, method: str, data: bytes) -> Exchanged:
        assert self.transport is not None
        if not self.usable:  # closed since it was chosen: nothing would ever answer
            raise TransientError(
                "connection error: the connection closed before the request was sent",
                kind="dropped",
            )
        loop = asyncio.get_running_loop()
        self.parser = _Parser(method)
        self.waiter = loop.create_future()
        self.transport.write(data)
        try:
            return await self.waiter
        finally:
            self.parser = None
            self.waiter = None

    def _advance(self) -> None:
        waiter, parser = self.waiter, self.parser
        if waiter is None or parser is None or waiter.done():
            return
        try:
            reply = parser.feed(self.buffer, self.eof)
        except _Malformed as error:
            waiter.set_exception(TransientError(f"malformed response: {error}", kind="malformed"))
            return
        if reply is not None:
            # whatever arrives after a complete reply was not asked for (data_received)
            self.parser = None
            self.buffer = bytearray()
            waiter.set_result(reply)
        elif self.eof:
            waiter.set_exception(
                TransientError(
                    "connection error: the server closed the connection before the reply "
                    "was complete",
                    kind="dropped",
                )
            )


def _decoded(body: bytes, encoding: str | None) -> bytes:
    """The body without its Content-Encoding, capped after decompression (a small gzip
    body can expand to gigabytes)."""
    coding = (encoding or "identity").strip().lower()
    if coding in ("identity", ""):
        return body
    if coding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif coding == "deflate":
        # "deflate" is zlib-wrapped by the standard, raw in some servers
        inflater = zlib.decompressobj(
            zlib.MAX_WBITS if body[:1] and (body[0] & 0x0F) == 8 else -zlib.MAX_WBITS
        )
    else:
        raise TransientError(
            f"malformed response: unsupported Content-Encoding {coding[:40]!r}", kind="malformed"
        )
    try:
        data = inflater.decompress(body, MAX_BODY_BYTES + 1)
    except zlib.error as error:
        raise TransientError(
            f"malformed response: {describe_error(error)}", kind="malformed"
        ) from None
    if len(data) > MAX_BODY_BYTES:
        raise TransientError("malformed response: body too large", kind="malformed")
    return data


def _basic(credentials: tuple[str, str]) -> str:
    user, password = credentials
    raw = f"{user}:{password}"
    try:
        encoded = raw.encode("latin-1")
    except UnicodeEncodeError:
        encoded = raw.encode("utf-8")
    return "Basic " + base64.b64encode(encoded).decode("ascii")


if sys.version_info >= (3, 11):

    async def _within(seconds: float, call: Callable[[], Any]) -> Any:
        async with asyncio.timeout(seconds):
            return await call()

else:  # pragma: no cover - Python 3.10

    async def _within(seconds: float, call: Callable[[], Any]) -> Any:
        return await asyncio.wait_for(call(), seconds)


class Http11Transport:
    """Direct HTTP/1.1 to http:// and https:// URLs with a pool of keep-alive connections
    (at most `pool_size` exchanges at once; Transport in http.py). Never follows
    redirects: a 3xx is returned as it is, so a key never reaches another host."""

    def __init__(self, *, pool_size: int, timeout: float) -> None:
        self.pool_size = max(1, pool_size)
        self.timeout = timeout
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tls: ssl.SSLContext | None = None
        self._targets: dict[str, tuple[tuple[str, str, int], str, str]] = {}

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        basic_auth: tuple[str, str] | None = None,
        timeout: float | None = None,
    ) -> HttpReply:
        key, host_header, target = self._target(url)
        given = "".join(headers) + "".join(headers.values())
        if "\r" in given or "\n" in given:  # would let a value add headers of its own
            raise TransientError("malformed request: a header holds a line break", kind="malformed")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host_header}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if basic_auth is not None and not any(n.lower() == "authorization" for n in headers):
            lines.append(f"Authorization: {_basic(basic_auth)}")
        lines.append("Accept-Encoding: gzip, deflate")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        lines.append("\r\n")
        data = "\r\n".join(lines).encode("utf-8") + (body or b"")
        seconds = timeout or self.timeout
        try:
            reply = await _within(seconds, lambda: self._exchange(key, method, data))
        except (TimeoutError, asyncio.TimeoutError):  # distinct types before Python 3.11
            raise TransientError(f"timed out after {seconds:g}s", kind="timeout") from None
        content = _decoded(reply.body, reply.headers.get("content-encoding"))
        return replace(reply, body=content)

    def _target(self, url: str) -> tuple[tuple[str, str, int], str, str]:
        """(connection key, Host header, request target) of `url`, cached per URL."""
        found = self._targets.get(url)
        if found is not None:
            return found
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:  # (the URL may hold a key)
            raise TransientError(
                f"connection error: not an http:// or https:// URL with a host ({scheme[:10]!r})",
                kind="connect",
            )
        try:
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError as error:
            raise TransientError(
                f"connection error: {describe_error(error)}", kind="connect"
            ) from None
        host = parts.hostname
        shown_host = f"[{host}]" if ":" in host else host
        default = (scheme == "https" and port == 443) or (scheme == "http" and port == 80)
        host_header = shown_host if default else f"{shown_host}:{port}"
        target = quote(parts.path or "/", safe=_PATH_SAFE)
        if parts.query:
            target += "?" + quote(parts.query, safe=_PATH_SAFE)
        found = ((scheme, host, port), host_header, target)
        if len(self._targets) < 1024:
            self._targets[url] = found
        return found

    async def _exchange(self, key: tuple[str, str, int], method: str, data: bytes) -> HttpReply:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a transport used from a new event loop starts afresh
            self._drop_all()
            self._slots = asyncio.Semaphore(self.pool_size)
            self._loop = loop
        assert self._slots is not None
        async with self._slots:
            connection = self._idle_connection(key) or await self._connect(key)
            reusable = False  # (stays so when the exchange fails or is cancelled)
            try:
                reply, reusable = await connection.exchange(method, data)
            finally:
                if reusable and connection.usable:
                    self._idle.setdefault(key, []).append(connection)
                    if len(self._idle[key]) > MAX_IDLE_PER_HOST:
                        self._idle[key].pop(0).close()
                else:
                    connection.close()
            return reply

    def _idle_connection(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if connection.usable:
                return connection
            connection.close()
        return None

    async def _connect(self, key: tuple[str, str, int]) -> _Connection:
        scheme, host, port = key
        tls = self._tls_context() if scheme == "https" else None
        loop = asyncio.get_running_loop()
        try:
            _, protocol = await loop.create_connection(
                _Connection,
                host,
                port,
                ssl=tls,
                server_hostname=host if tls is not None else None,
            )
        except ssl.SSLCertVerificationError as error:
            raise TransientError(
                f"TLS certificate error: {describe_error(error)}", kind="connect"
            ) from None
        except ssl.SSLError as error:
            raise TransientError(f"TLS error: {describe_error(error)}", kind="connect") from None
        except (OSError, UnicodeError, ValueError) as error:
            shown = f"[{host}]" if ":" in host else host
            raise TransientError(
                f"connection error: cannot connect to {shown}:{port}: {describe_error(error)}",
                kind="connect",
            ) from None
        return protocol

    def _tls_context(self) -> ssl.SSLContext:
        """The system's trusted certificates (made on first use: about 20 ms)."""
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def _drop_all(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    async def aclose(self) -> None:
        self._drop_all()
