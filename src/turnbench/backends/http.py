"""The one HTTP transport of the backends, on aiohttp: status, headers and body, nothing more.

Why not the openai SDK on the request path: it costs ~3.5 ms of CPU per request here (httpx
plus its recursive request transform), a plain aiohttp request a fraction of that, and at
hundreds of requests in flight that difference is the run's speed. A transport only moves
bytes: it maps every network failure to TransientError (kind "connect", "timeout",
"dropped" or "malformed") and returns status, headers and body; the backend decides what
they mean. The SDK-based Anthropic backend sends through this same transport
(`backends/sdk_transport.py`).

What `HttpTransport` guarantees, since a server is untrusted:
- at most `pool_size` exchanges at once over keep-alive connections (one aiohttp
  ClientSession per event loop);
- TLS verified against the system's trust store (SSL_CERT_FILE / SSL_CERT_DIR honoured,
  read when the first https request is made);
- the proxy that HTTP(S)_PROXY / ALL_PROXY name for the URL's host, NO_PROXY honoured;
- redirects never followed: a 3xx is returned as it is, so a key never reaches another host;
- a whole exchange (connect, headers, body) bounded by its timeout, so a server trickling
  its body is cut there;
- header lines capped by aiohttp's parser, and the body capped at MAX_BODY_BYTES *after*
  decompression: the body is read in chunks and inflated incrementally (zlib with an output
  bound), so a small gzip body that expands to gigabytes is refused once the cap is passed,
  before it is held in memory;
- error messages that never repeat the URL (its query may hold a key).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import ssl
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol
from urllib.parse import urlsplit

from turnbench.backends.retry import TransientError

MAX_BODY_BYTES = 64 * 1024 * 1024  # a reply larger than this is a broken or hostile server
MAX_HEADER_LINE = 8190  # one status or header line (aiohttp's parser refuses longer ones)
ACCEPT_ENCODING = "gzip, deflate"  # what _Inflater decodes; anything else is refused
_READ_CHUNK = 65536
_INFLATE_PIECE = 1 << 20  # the most decoded bytes made at once


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: Mapping[str, str]  # case-insensitive names
    body: bytes  # decoded (no Content-Encoding left)


class Transport(Protocol):
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
        """One HTTP exchange bounded by `timeout` as a whole (connect, headers and body)."""
        ...

    async def aclose(self) -> None: ...


@lru_cache(maxsize=64)
def _proxy(scheme: str, host: str) -> str | None:
    """The proxy from HTTP(S)_PROXY / ALL_PROXY for this scheme and host, NO_PROXY honoured."""
    names = (f"{scheme}_proxy", "all_proxy")
    if not any(os.environ.get(name) or os.environ.get(name.upper()) for name in names):
        return None  # no proxy for this scheme (and urllib.request not imported for it)
    import urllib.request

    if urllib.request.proxy_bypass_environment(host):
        return None
    proxies = urllib.request.getproxies_environment()
    return proxies.get(scheme) or proxies.get("all") or None


def env_proxy(url: str) -> str | None:
    parts = urlsplit(url)
    return _proxy(parts.scheme.lower(), parts.hostname or "")


def describe_error(error: BaseException) -> str:
    """An exception's text for a message, at most 200 characters."""
    text = str(error) or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def too_large(limit: int) -> TransientError:
    return TransientError(
        f"malformed response: body too large (over {limit} bytes decoded)", kind="malformed"
    )


class _Inflater:
    """Decodes a Content-Encoding chunk by chunk, raising `too_large()` as soon as the
    decoded bytes pass `limit`."""

    def __init__(self, coding: str, limit: int) -> None:
        self.coding = coding
        self.limit = limit
        self.size = 0
        self._zlib: Any = None
        if coding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding != "deflate":
            raise TransientError(
                f"malformed response: unsupported Content-Encoding {coding[:40]!r}",
                kind="malformed",
            )

    def feed(self, data: bytes) -> list[bytes]:
        """The decoded bytes of the next piece of the body, inflated a megabyte at a time
        (64 kB of gzip can hold 64 MB), so a bomb is refused one megabyte past the cap."""
        if not data:
            return []
        if self._zlib is None:  # deflate: zlib-wrapped by the standard, raw in some servers
            wrapped = (data[0] & 0x0F) == 8
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        pieces: list[bytes] = []
        while True:
            try:
                out = self._zlib.decompress(data, _INFLATE_PIECE)
            except zlib.error as error:
                raise TransientError(
                    f"malformed response: {describe_error(error)}", kind="malformed"
                ) from None
            self.size += len(out)
            if self.size > self.limit:
                raise too_large(self.limit)
            pieces.append(out)
            data = self._zlib.unconsumed_tail
            if not data and len(out) < _INFLATE_PIECE:  # input used up, no output pending
                return pieces


class HttpTransport:
    """HTTP/1.1 through aiohttp for http:// and https:// URLs (see the module docstring).

    trust_env is off: with it aiohttp looks up the proxy and ~/.netrc in a thread for every
    request, and netrc would add credentials nobody named. The proxy variables are read
    here instead, once per host. auto_decompress is off: aiohttp would inflate a whole
    network chunk at once (64 kB of gzip can be 64 MB); `_Inflater` bounds it instead."""

    def __init__(self, *, pool_size: int, timeout: float, max_body: int | None = None) -> None:
        self.pool_size = max(1, pool_size)
        self.timeout = timeout
        self.max_body = max_body  # None: MAX_BODY_BYTES
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tls: ssl.SSLContext | None = None
        self._timeouts: dict[float, Any] = {}

    def _client(self) -> Any:
        """The session of the running loop (a session belongs to one loop: a notebook runs
        one session after another, each in its own loop)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            import aiohttp

            if self._session is not None:
                _drop(self._session)
            connector = aiohttp.TCPConnector(
                limit=self.pool_size, limit_per_host=0, ttl_dns_cache=300
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                trust_env=False,
                auto_decompress=False,
                max_line_size=MAX_HEADER_LINE,
                max_field_size=MAX_HEADER_LINE,
                cookie_jar=aiohttp.DummyCookieJar(),  # a server's cookies are never sent back
            )
            self._loop = loop
        return self._session

    def _tls_context(self) -> ssl.SSLContext:
        """The system's trusted certificates, made on first https use (about 20 ms)."""
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def _timeout(self, seconds: float) -> Any:
        found = self._timeouts.get(seconds)
        if found is None:
            import aiohttp

            found = self._timeouts[seconds] = aiohttp.ClientTimeout(total=seconds)
        return found

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
        import aiohttp

        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:  # (the URL may hold a key)
            raise TransientError(
                f"connection error: not an http:// or https:// URL with a host ({scheme[:10]!r})",
                kind="connect",
            )
        given = "".join(headers) + "".join(headers.values())
        if "\r" in given or "\n" in given:  # would let a value add headers of its own
            raise TransientError("malformed request: a header holds a line break", kind="malformed")
        sent = {"Accept-Encoding": ACCEPT_ENCODING, **headers}
        options: dict[str, Any] = {"allow_redirects": False}  # a key never follows a redirect
        proxy = env_proxy(url)
        if proxy is not None:
            options["proxy"] = proxy
        if scheme == "https":
            options["ssl"] = self._tls_context()
        if basic_auth is not None and not any(n.lower() == "authorization" for n in headers):
            sent["Authorization"] = _basic(basic_auth)
        seconds = timeout or self.timeout
        if timeout is not None:
            options["timeout"] = self._timeout(timeout)
        try:
            session = self._client()
            async with session.request(method, url, data=body, headers=sent, **options) as reply:
                data = await _read_body(reply, self.max_body or MAX_BODY_BYTES)
                return HttpReply(reply.status, reply.headers, data)
        except TransientError:
            raise
        except (TimeoutError, asyncio.TimeoutError):  # distinct types before Python 3.11
            raise TransientError(f"timed out after {seconds:g}s", kind="timeout") from None
        except aiohttp.ClientConnectorCertificateError as error:
            raise TransientError(
                f"TLS certificate error: {_text(error, url)}", kind="connect"
            ) from None
        except aiohttp.ClientConnectorError as error:
            raise TransientError(f"connection error: {_text(error, url)}", kind="connect") from None
        except (aiohttp.ClientSSLError, ssl.SSLError) as error:
            raise TransientError(f"TLS error: {_text(error, url)}", kind="connect") from None
        except aiohttp.ClientResponseError as error:  # its text names the URL: not used
            raise TransientError(
                f"malformed response: {_text(error.message or type(error).__name__, url)}",
                kind="malformed",
            ) from None
        except aiohttp.InvalidURL:  # its text is the URL
            raise TransientError("connection error: an invalid URL", kind="connect") from None
        except aiohttp.ClientPayloadError as error:
            raise TransientError(
                f"connection error: the reply's body was cut short ({_text(error, url)})",
                kind="dropped",
            ) from None
        except (aiohttp.ClientError, ConnectionError, OSError) as error:
            raise TransientError(f"connection error: {_text(error, url)}", kind="dropped") from None
        except (UnicodeError, ValueError) as error:  # e.g. an invalid header from the server
            raise TransientError(
                f"malformed response: {_text(error, url)}", kind="malformed"
            ) from None

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            if self._loop is asyncio.get_running_loop():
                await session.close()
            else:
                _drop(session)


def _basic(credentials: tuple[str, str]) -> str:
    """A Basic Authorization value: latin-1 where it can encode the pair (as browsers and
    servers expect), UTF-8 otherwise."""
    raw = "{}:{}".format(*credentials)
    try:
        encoded = raw.encode("latin-1")
    except UnicodeEncodeError:
        encoded = raw.encode("utf-8")
    return "Basic " + base64.b64encode(encoded).decode("ascii")


def _drop(session: Any) -> None:
    """Close a session whose event loop is gone, without awaiting (nothing can run there):
    aiohttp's synchronous connector close, then the session is detached from it."""
    connector = session.connector
    if connector is not None and not connector.closed:
        with contextlib.suppress(Exception):  # (an internal of aiohttp's; best effort)
            connector._close()
    session.detach()


async def _read_body(reply: Any, limit: int) -> bytes:
    """The body, decoded, at most `limit` bytes: refused as soon as the count passes it."""
    length = reply.content_length
    if length is not None and length > limit:
        raise TransientError(f"malformed response: a {length}-byte body", kind="malformed")
    coding = reply.headers.get("Content-Encoding", "").strip().lower()
    identity = coding in ("", "identity")
    if identity and length is not None:
        return await reply.read()  # bounded by the Content-Length checked above
    inflater = None if identity else _Inflater(coding, limit)
    chunks: list[bytes] = []
    received = 0
    while True:
        chunk = await reply.content.read(_READ_CHUNK)
        if not chunk:
            break
        received += len(chunk)
        if received > limit:
            raise too_large(limit)
        if inflater is None:
            chunks.append(chunk)
        else:
            chunks += inflater.feed(chunk)
    return b"".join(chunks)


def _text(error: BaseException | str, url: str) -> str:
    """An error's text without the URL or its query, which may hold a key."""
    text = error if isinstance(error, str) else str(error) or type(error).__name__
    query = urlsplit(url).query
    text = text.replace(url, "<url>")
    if query:
        text = text.replace(query, "<query>")
    text = " ".join(text.split())  # one line (aiohttp's parser errors span several)
    return text if len(text) <= 200 else text[:197] + "..."  # (cut after the URL is gone)
