"""The HTTP transport of the OpenAI-compatible backend: status, headers and body, nothing more.

Why not the openai SDK: it costs ~3.5 ms of CPU per request here (httpx plus its recursive
request transform), a plain request well under 0.3 ms, and at hundreds of requests in flight
that difference is the run's speed. A transport only moves bytes: it maps every network
failure to TransientError (kind "connect", "timeout", "dropped" or "malformed") and returns
status, headers and body; the backend decides what they mean. Another provider (an
SDK-based Azure client, say) can supply its own object with the same two methods.

`HttpTransport` is the one the backends use: a direct HTTP/1.1 connection (http11.py) for
every URL, except one that the environment (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY)
sends through a proxy, which goes through aiohttp (`AiohttpTransport`, imported only then).
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol
from urllib.parse import urlsplit

from turnbench.backends.retry import TransientError

MAX_BODY_BYTES = 64 * 1024 * 1024  # a reply larger than this is a broken or hostile server


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: Mapping[str, str]
    body: bytes


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


class HttpTransport:
    """Direct HTTP/1.1, or aiohttp where a proxy is configured for the URL's host."""

    def __init__(self, *, pool_size: int, timeout: float) -> None:
        from turnbench.backends.http11 import Http11Transport

        self.pool_size = max(1, pool_size)
        self.timeout = timeout
        self._direct = Http11Transport(pool_size=pool_size, timeout=timeout)
        self._proxied: AiohttpTransport | None = None

    def _for(self, url: str) -> Transport:
        if env_proxy(url) is None:
            return self._direct
        if self._proxied is None:
            self._proxied = AiohttpTransport(pool_size=self.pool_size, timeout=self.timeout)
        return self._proxied

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
        return await self._for(url).send(
            method, url, headers=headers, body=body, basic_auth=basic_auth, timeout=timeout
        )

    async def aclose(self) -> None:
        await self._direct.aclose()
        if self._proxied is not None:
            await self._proxied.aclose()


class AiohttpTransport:
    """Requests through a proxy (see HttpTransport). One ClientSession per backend, created
    in the running event loop on first use (a session belongs to one loop).

    trust_env is off: with it aiohttp looks up the proxy and ~/.netrc in a thread for every
    request (two thread hops per request), and netrc would add credentials nobody named.
    The proxy variables are read here instead, once per host."""

    def __init__(self, *, pool_size: int, timeout: float) -> None:
        self.pool_size = max(1, pool_size)
        self.timeout = timeout
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            connector = aiohttp.TCPConnector(
                limit=self.pool_size, limit_per_host=0, ttl_dns_cache=300
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                trust_env=False,
                auto_decompress=True,
            )
            self._loop = loop
        return self._session

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

        session = self._client()
        options: dict[str, Any] = {"allow_redirects": False}  # a key never follows a redirect
        proxy = env_proxy(url)
        if proxy is not None:
            options["proxy"] = proxy
        if basic_auth is not None:
            options["auth"] = aiohttp.BasicAuth(*basic_auth)
        if timeout is not None:
            options["timeout"] = aiohttp.ClientTimeout(total=timeout)
        try:
            async with session.request(
                method, url, data=body, headers=headers, **options
            ) as response:
                length = response.content_length
                if length is not None and length > MAX_BODY_BYTES:
                    raise TransientError(
                        f"malformed response: a {length}-byte body", kind="malformed"
                    )
                if length is not None:
                    data = await response.read()
                else:
                    data = await _read_capped(response)
                return HttpReply(response.status, response.headers, data)
        except TransientError:
            raise
        except (TimeoutError, asyncio.TimeoutError):  # distinct types before Python 3.11
            raise TransientError(
                f"timed out after {timeout or self.timeout:g}s", kind="timeout"
            ) from None
        except aiohttp.ClientConnectorCertificateError as error:
            raise TransientError(
                f"TLS certificate error: {describe_error(error)}", kind="connect"
            ) from None
        except aiohttp.ClientConnectorError as error:
            raise TransientError(
                f"connection error: {describe_error(error)}", kind="connect"
            ) from None
        except (aiohttp.ClientSSLError, ssl.SSLError) as error:
            raise TransientError(f"TLS error: {describe_error(error)}", kind="connect") from None
        except aiohttp.ClientResponseError as error:
            raise TransientError(
                f"malformed response: {describe_error(error)}", kind="malformed"
            ) from None
        except (aiohttp.ClientError, ConnectionError, OSError) as error:
            raise TransientError(
                f"connection error: {describe_error(error)}", kind="dropped"
            ) from None
        except (UnicodeError, ValueError) as error:  # e.g. an invalid header from the server
            raise TransientError(
                f"malformed response: {describe_error(error)}", kind="malformed"
            ) from None

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            if self._loop is asyncio.get_running_loop():
                await session.close()


async def _read_capped(response: Any) -> bytes:
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(65536):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise TransientError("malformed response: body too large", kind="malformed")
        chunks.append(chunk)
    return b"".join(chunks)
