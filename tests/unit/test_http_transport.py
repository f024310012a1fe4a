"""The HTTP transport (aiohttp underneath) against scripted servers on 127.0.0.1: what it
reads, what it refuses, when it reuses a connection, and how each failure is named."""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import Awaitable, Callable

import pytest

from turnbench.backends import http
from turnbench.backends.http import HttpTransport
from turnbench.backends.retry import TransientError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Scripted:
    """A raw TCP server: every connection runs `handler`; counts connections and keeps
    the request heads it read (read_request)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.base_events.Server | None = None
        self.port = 0

    async def __aenter__(self) -> Scripted:
        async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        self.server = await asyncio.start_server(run, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        body = await reader.readexactly(length) if length else b""
        self.requests.append(head + body)
        return head + body


def replying(*replies: bytes, split: int = 0) -> Callable[[Scripted], Handler]:
    """A handler answering each request on a connection with the next reply (all of them
    byte by byte when `split`), then waiting for the client to close."""

    def make(server: Scripted) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for reply in replies:
                await server.read_request(reader)
                if split:
                    for index in range(0, len(reply), split):
                        writer.write(reply[index : index + split])
                        await writer.drain()
                else:
                    writer.write(reply)
                    await writer.drain()
            await reader.read()  # until the client closes

        return handler

    return make


async def exchange(make: Callable[[Scripted], Handler], calls: int = 1, **send_args):
    """`calls` POSTs to a scripted server; the replies, the server, and each error."""
    server = Scripted(lambda r, w: handler(r, w))
    handler = make(server)
    transport = HttpTransport(pool_size=4, timeout=send_args.pop("timeout", 5.0))
    outcomes: list[object] = []
    async with server:
        for _ in range(calls):
            try:
                outcomes.append(
                    await transport.send(
                        "POST",
                        server.url,
                        headers=send_args.get("headers", {"Content-Type": "application/json"}),
                        body=b'{"x": 1}',
                        basic_auth=send_args.get("basic_auth"),
                    )
                )
            except TransientError as error:
                outcomes.append(error)
        await transport.aclose()
    return outcomes, server


def run(coroutine):
    return asyncio.run(coroutine)


def get_error(url: str) -> TransientError:
    """The error of a GET to `url` that must fail."""

    async def scenario() -> TransientError:
        transport = HttpTransport(pool_size=1, timeout=5)
        with pytest.raises(TransientError) as error:
            await transport.send("GET", url, headers={})
        await transport.aclose()
        return error.value

    return run(scenario())


OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"ok": true}'


def test_keep_alive_reuses_one_connection_and_the_request_is_well_formed():
    outcomes, server = run(exchange(replying(OK, OK, OK), calls=3, basic_auth=("user", "pässword")))
    assert [o.status for o in outcomes] == [200, 200, 200]  # type: ignore[union-attr]
    assert all(o.body == b'{"ok": true}' for o in outcomes)  # type: ignore[union-attr]
    assert server.connections == 1
    head = server.requests[0].decode("latin-1")
    assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"\r\nHost: 127.0.0.1:{server.port}\r\n" in head
    assert "\r\nContent-Length: 8\r\n" in head and head.endswith('\r\n\r\n{"x": 1}')
    assert "\r\nAuthorization: Basic dXNlcjpw5HNzd29yZA==\r\n" in head  # latin-1, as aiohttp


def test_reply_headers_are_case_insensitive():
    reply = (
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nX-Thing: a\r\nx-thing: b\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    (outcome,), _ = run(exchange(replying(reply)))
    assert outcome.status == 429  # type: ignore[union-attr]
    headers = outcome.headers  # type: ignore[union-attr]
    assert headers.get("retry-after") == headers["Retry-After"] == "3"
    assert headers.get("X-THING") == "a" and "x-thing" in headers  # the first of two


def test_chunked_body_byte_by_byte_with_extensions_and_trailers():
    reply = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: yes\r\n\r\n"
    )
    outcomes, server = run(exchange(replying(reply, reply, split=1), calls=2))
    assert [o.body for o in outcomes] == [b"hello world"] * 2  # type: ignore[union-attr]
    assert server.connections == 1  # a complete chunked reply keeps the connection


@pytest.mark.parametrize(
    ("coding", "packed"),
    [
        ("gzip", gzip.compress(b'{"a": "' + b"x" * 5000 + b'"}', mtime=0)),
        ("deflate", zlib.compress(b'{"a": "' + b"x" * 5000 + b'"}')),
        ("deflate", zlib.compress(b'{"a": "' + b"x" * 5000 + b'"}')[2:-4]),  # raw deflate
    ],
)
def test_compressed_bodies_are_decoded(coding, packed):
    reply = (
        f"HTTP/1.1 200 OK\r\nContent-Encoding: {coding}\r\nContent-Length: {len(packed)}\r\n\r\n"
    ).encode() + packed
    (outcome,), _ = run(exchange(replying(reply)))
    assert outcome.body == b'{"a": "' + b"x" * 5000 + b'"}'  # type: ignore[union-attr]


def test_a_compression_bomb_is_refused_after_the_cap(monkeypatch):
    monkeypatch.setattr(http, "MAX_BODY_BYTES", 100_000)
    packed = gzip.compress(b"0" * 1_000_000)  # ~1 kB that inflates to 1 MB
    reply = (
        f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(packed)}\r\n\r\n"
    ).encode() + packed
    (outcome,), _ = run(exchange(replying(reply)))
    assert isinstance(outcome, TransientError) and outcome.kind == "malformed"
    assert "too large" in str(outcome)


def test_a_body_until_close_is_read_and_the_connection_not_reused():
    async def handler(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(8)
        writer.write(b"HTTP/1.0 200 OK\r\n\r\n{")
        await writer.drain()
        writer.write(b'"ok": 1}')
        await writer.drain()
        writer.close()

    outcomes, server = run(exchange(lambda s: handler, calls=2))
    assert [o.body for o in outcomes] == [b'{"ok": 1}'] * 2  # type: ignore[union-attr]
    assert server.connections == 2


def test_connection_close_and_unasked_bytes_end_the_connection():
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    outcomes, server = run(exchange(replying(closing), calls=2))
    assert all(o.status == 200 for o in outcomes) and server.connections == 2  # type: ignore[union-attr]
    extra = OK + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"  # a reply nobody asked for
    outcomes, server = run(exchange(replying(extra, OK), calls=2))
    assert all(o.body == b'{"ok": true}' for o in outcomes)  # type: ignore[union-attr]
    assert server.connections == 2


def test_interim_replies_are_skipped_and_204_has_no_body():
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + OK
    no_content = b"HTTP/1.1 204 No Content\r\n\r\n"
    outcomes, server = run(exchange(replying(interim, no_content, OK), calls=3))
    assert [(o.status, o.body) for o in outcomes] == [  # type: ignore[union-attr]
        (200, b'{"ok": true}'),
        (204, b""),
        (200, b'{"ok": true}'),
    ]
    assert server.connections == 1


def test_an_idle_connection_the_server_closed_is_replaced():
    async def scenario() -> tuple[list[int], int]:
        async def one_reply(reader, writer):
            await server.read_request(reader)
            writer.write(OK)
            await writer.drain()
            writer.close()  # closes right after the reply, while the client keeps it idle

        server = Scripted(one_reply)
        transport = HttpTransport(pool_size=2, timeout=5)
        async with server:
            statuses = []
            for _ in range(3):
                reply = await transport.send("POST", server.url, headers={}, body=b"{}")
                statuses.append(reply.status)
                await asyncio.sleep(0.05)  # the server's close arrives
            await transport.aclose()
        return statuses, server.connections

    statuses, connections = run(scenario())
    assert statuses == [200, 200, 200] and connections == 3


@pytest.mark.parametrize(
    ("reply", "kind", "words"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "malformed", "Bad status line"),
        (b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", "malformed", "Invalid status code"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 12, 13\r\n\r\n", "malformed", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", "malformed", "byte body"),
        (b"HTTP/1.1 200 OK\r\nBad header\r\n\r\n", "malformed", "Invalid header token"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed", "chunk"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{", "dropped", "cut short"),
        (b"", "dropped", "Server disconnected"),
    ],
)
def test_broken_replies_are_named(reply, kind, words):
    async def handler(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(reply)
        await writer.drain()
        writer.close()

    (outcome,), _ = run(exchange(lambda s: handler))
    assert isinstance(outcome, TransientError)
    assert outcome.kind == kind and words in str(outcome)


def test_endless_headers_are_refused():
    async def handler(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * 10_000)
        await writer.drain()
        await reader.read()

    (outcome,), _ = run(exchange(lambda s: handler))
    assert isinstance(outcome, TransientError) and outcome.kind == "malformed"
    assert "more than 8190 bytes" in str(outcome)


def test_a_silent_server_times_out_and_a_closed_port_is_a_connect_error():
    async def silent(reader, writer):
        await reader.read()

    (outcome,), _ = run(exchange(lambda s: silent, timeout=0.3))
    assert isinstance(outcome, TransientError) and outcome.kind == "timeout"

    error = get_error("http://127.0.0.1:9/v1/models")
    assert error.kind == "connect" and "Connect call failed" in str(error)


def test_a_line_break_in_a_header_is_never_sent():
    sent: list[bytes] = []

    async def handler(reader, writer):
        sent.append(await reader.read(100))

    (outcome,), server = run(
        exchange(lambda s: handler, headers={"Authorization": "Bearer k\r\nX-Evil: 1"})
    )
    assert isinstance(outcome, TransientError) and "line break" in str(outcome)
    assert server.connections == 0 and not sent


def test_a_proxied_url_goes_through_the_proxy(monkeypatch):
    """HTTP_PROXY names a proxy: the request reaches it in absolute form, while a host in
    NO_PROXY is reached directly."""

    async def scenario() -> tuple[list[bytes], list[bytes]]:
        proxy = Scripted(lambda r, w: proxy_handler(r, w))
        origin = Scripted(lambda r, w: origin_handler(r, w))
        proxy_handler = replying(OK)(proxy)
        origin_handler = replying(OK)(origin)
        async with proxy, origin:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            monkeypatch.setenv("NO_PROXY", "localhost")
            http._proxy.cache_clear()
            transport = HttpTransport(pool_size=2, timeout=5)
            far = await transport.send(
                "GET", f"http://example.test:{origin.port}/v1/models", headers={}
            )
            near = await transport.send(
                "GET", f"http://localhost:{origin.port}/v1/models", headers={}
            )
            await transport.aclose()
            assert far.status == near.status == 200
        return proxy.requests, origin.requests

    try:
        via_proxy, direct = run(scenario())
    finally:
        http._proxy.cache_clear()
    assert len(via_proxy) == 1 and via_proxy[0].startswith(b"GET http://example.test:")
    assert len(direct) == 1 and direct[0].startswith(b"GET /v1/models HTTP/1.1")


def test_at_most_pool_size_exchanges_at_once_and_a_timeout_frees_its_slot():
    async def scenario() -> tuple[int, list[object]]:
        open_now = most = 0

        async def slow(reader, writer):
            nonlocal open_now, most
            while True:
                request = await server.read_request(reader)
                if b"slow" in request:  # the client gives up on this one after 0.1 s
                    await asyncio.sleep(0.5)
                    continue
                open_now += 1
                most = max(most, open_now)
                await asyncio.sleep(0.05)
                open_now -= 1
                writer.write(OK)
                await writer.drain()

        server = Scripted(slow)
        transport = HttpTransport(pool_size=2, timeout=5)
        async with server:

            async def one(body: bytes, timeout: float | None = None) -> object:
                try:
                    return await transport.send(
                        "POST", server.url, headers={}, body=body, timeout=timeout
                    )
                except TransientError as error:
                    return error

            outcomes = await asyncio.gather(
                one(b"slow", timeout=0.1), *(one(b"{}") for _ in range(6))
            )
            await transport.aclose()
        return most, list(outcomes)

    most, outcomes = run(scenario())
    # the timed-out request gave its slot back: the others ran two at a time beside it
    assert most == 2
    assert isinstance(outcomes[0], TransientError) and outcomes[0].kind == "timeout"
    assert all(o.status == 200 for o in outcomes[1:])  # type: ignore[union-attr]


def test_an_unusable_url_is_refused_without_repeating_it():
    error = get_error("ftp://host/v1/models?key=SECRET-KEY")
    assert error.kind == "connect" and "SECRET-KEY" not in str(error)


def test_one_transport_serves_two_event_loops_in_turn():
    """A notebook runs one session after another, each in its own loop: the connections of
    a closed loop are dropped, not reused, and dropping them raises nothing."""
    from turnbench.testing.fake_server import FakeServer

    transport = HttpTransport(pool_size=2, timeout=5)
    with FakeServer() as server:

        async def models() -> int:
            reply = await transport.send("GET", f"{server.base_url}/models", headers={})
            return reply.status

        assert asyncio.run(models()) == 200  # leaves an idle connection of this loop
        assert asyncio.run(models()) == 200
        asyncio.run(transport.aclose())


def _self_signed(directory, name: str, san: str):
    """A certificate and key made by the openssl command (skips the test without it)."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("no openssl command")
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", f"/CN={name}", "-addext", f"subjectAltName={san}",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.mark.parametrize(
    ("san", "trust", "accepted"),
    [
        ("IP:127.0.0.1", "server", True),
        ("DNS:other.test", "server", False),  # trusted, but for another name
        ("IP:127.0.0.1", "stranger", False),  # the right name, signed by nobody trusted
    ],
)
def test_https_verifies_the_certificate(tmp_path, monkeypatch, san, trust, accepted):
    """The system's trust store decides (here SSL_CERT_FILE names the only trusted
    certificate): only a trusted certificate for this host is accepted."""
    import ssl

    cert, key = _self_signed(tmp_path, "server", san)
    trusted = cert if trust == "server" else _self_signed(tmp_path, "stranger", san)[0]
    monkeypatch.setenv("SSL_CERT_FILE", str(trusted))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)

    async def scenario() -> object:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server = Scripted(lambda r, w: handler(r, w))
        handler = replying(OK)(server)
        server_ssl = await asyncio.start_server(
            lambda r, w: server.handler(r, w), "127.0.0.1", 0, ssl=context
        )
        port = server_ssl.sockets[0].getsockname()[1]
        transport = HttpTransport(pool_size=1, timeout=5)
        try:
            return await transport.send(
                "POST", f"https://127.0.0.1:{port}/v1/chat/completions", headers={}, body=b"{}"
            )
        except TransientError as error:
            return error
        finally:
            await transport.aclose()
            server_ssl.close()

    outcome = run(scenario())
    if accepted:
        assert outcome.status == 200 and outcome.body == b'{"ok": true}'  # type: ignore[union-attr]
    else:
        assert isinstance(outcome, TransientError) and outcome.kind == "connect"
        assert "certificate" in str(outcome)


def test_a_bomb_is_refused_once_the_cap_is_passed_not_when_the_body_ends(monkeypatch):
    """A chunked gzip body (no Content-Length) whose first part already inflates past the
    cap, then nothing more for far longer than the test: refused at once as too large, not
    after reading on until the timeout."""
    monkeypatch.setattr(http, "MAX_BODY_BYTES", 100_000)
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    part = packer.compress(b"0" * 1_000_000) + packer.flush(zlib.Z_SYNC_FLUSH)

    async def handler(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
            + f"{len(part):x}\r\n".encode()
            + part
            + b"\r\n"
        )
        await writer.drain()
        await asyncio.sleep(30)  # the rest never comes

    async def scenario() -> tuple[object, float]:
        server = Scripted(handler)
        transport = HttpTransport(pool_size=1, timeout=20)
        async with server:
            started = asyncio.get_running_loop().time()
            try:
                outcome: object = await transport.send("GET", server.url, headers={})
            except TransientError as error:
                outcome = error
            elapsed = asyncio.get_running_loop().time() - started
            await transport.aclose()
        return outcome, elapsed

    outcome, elapsed = run(scenario())
    assert isinstance(outcome, TransientError) and outcome.kind == "malformed"
    assert "too large" in str(outcome) and elapsed < 5, elapsed


def test_a_trickling_body_is_cut_at_the_request_timeout():
    async def handler(reader, writer):
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
        for _ in range(100):  # 10 s in all
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.1)

    server = Scripted(handler)

    async def scenario() -> tuple[object, float]:
        transport = HttpTransport(pool_size=1, timeout=5)
        async with server:
            started = asyncio.get_running_loop().time()
            try:
                outcome: object = await transport.send(
                    "POST", server.url, headers={}, body=b"{}", timeout=0.6
                )
            except TransientError as error:
                outcome = error
            elapsed = asyncio.get_running_loop().time() - started
            await transport.aclose()
        return outcome, elapsed

    outcome, elapsed = run(scenario())
    assert isinstance(outcome, TransientError) and outcome.kind == "timeout"
    assert str(outcome) == "timed out after 0.6s" and 0.5 < elapsed < 2, elapsed


def test_a_redirect_is_returned_not_followed():
    """A 307 to another host comes back as it is: the Authorization header (the key) never
    reaches the host it points to."""

    async def scenario() -> tuple[object, int]:
        elsewhere = Scripted(lambda r, w: steal(r, w))
        steal = replying(OK)(elsewhere)
        async with elsewhere:
            redirect = (
                f"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:{elsewhere.port}"
                "/steal\r\nContent-Length: 0\r\n\r\n"
            ).encode()
            (outcome,), _ = await exchange(
                replying(redirect), headers={"Authorization": "Bearer sk-SECRET"}
            )
        return outcome, elsewhere.connections

    outcome, reached = run(scenario())
    assert outcome.status == 307 and reached == 0  # type: ignore[union-attr]
    assert outcome.headers.get("location", "").endswith("/steal")  # type: ignore[union-attr]


def test_no_module_implements_http_on_sockets_or_protocols():
    """The one HTTP client is aiohttp's: no asyncio.Protocol subclass, no raw connection
    opened by turnbench's own code (the fake servers of turnbench.testing only listen)."""
    import ast
    from pathlib import Path

    import turnbench

    found = []
    for path in Path(turnbench.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base) for base in node.bases]
                if any("Protocol" in base and "asyncio" in base for base in bases):
                    found.append(f"{path.name}: class {node.name}({', '.join(bases)})")
            if isinstance(node, ast.Attribute) and node.attr in (
                "open_connection",
                "create_connection",
            ):
                found.append(f"{path.name}: {ast.unparse(node)}")
    assert found == []


def test_the_sdks_client_sends_through_the_transport_with_its_cap():
    """sdk_http_client (the Anthropic and batch clients' http_client): the offered codings
    are the transport's, a bomb is refused at the given cap, a body under it comes back
    decoded and whole."""
    httpx2 = pytest.importorskip("httpx2")
    from turnbench.backends.sdk_transport import sdk_http_client

    small = gzip.compress(b"y" * 50_000)
    bomb = gzip.compress(b"0" * 1_000_000)

    def reply(packed: bytes) -> bytes:
        return (
            f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(packed)}\r\n\r\n"
        ).encode() + packed

    async def scenario() -> tuple[bytes, object, bytes]:
        server = Scripted(lambda r, w: handler(r, w))
        handler = replying(reply(small), reply(bomb))(server)
        client = sdk_http_client(pool_size=2, timeout=5, max_body=100_000)
        async with server:
            ok = await client.get(server.url, headers={"Accept-Encoding": "br, zstd"})
            with pytest.raises(httpx2.RemoteProtocolError) as error:
                await client.get(server.url)
            await client.aclose()
        return ok.content, error.value, server.requests[0]

    body, error, head = run(scenario())
    assert body == b"y" * 50_000
    assert "body too large (over 100000 bytes decoded)" in str(error)
    assert b"\r\nAccept-Encoding: gzip, deflate\r\n" in head and b"zstd" not in head
