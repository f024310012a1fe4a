"""The vendor SDKs (anthropic, openai: both on httpx2) send through turnbench's one HTTP
transport, `backends/http.py`.

Why: an SDK's own client reads a whole reply and inflates its gzip without a bound (a
200 kB bomb became a 200 MB answer), and the Anthropic SDK follows redirects by default.
`sdk_http_client` gives an SDK an httpx2 client that keeps the SDK's request building and
error types but moves every byte through `HttpTransport`: the same decoded-size cap, pool
limit, TLS verification, proxies from the environment, whole-exchange timeout, and no
redirect followed (the httpx2 client's own redirect following is off too).
"""

from __future__ import annotations

from typing import Any

from turnbench.backends.http import MAX_BODY_BYTES, HttpTransport
from turnbench.backends.retry import TransientError

# a provider's batch results file: every reply of up to 100,000 requests in one body
BATCH_MAX_BODY_BYTES = 512 * 1024 * 1024

# headers the transport sets itself: the framing of this exchange, and only the codings
# it can inflate under its cap (the SDK would offer br and zstd)
_OWN_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
)
# the reply's body is given to httpx2 already decoded and whole
_DECODED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def sdk_http_client(*, pool_size: int, timeout: float, max_body: int = MAX_BODY_BYTES) -> Any:
    """An `httpx2.AsyncClient` for an SDK (`http_client=`) whose requests go through
    HttpTransport. Imports httpx2, which is there whenever an SDK is."""
    import httpx2

    class Adapter(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.transport = HttpTransport(pool_size=pool_size, timeout=timeout, max_body=max_body)

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            body = await request.aread()
            headers = {
                name: value
                for name, value in request.headers.items()
                if name.lower() not in _OWN_HEADERS
            }
            try:
                reply = await self.transport.send(
                    request.method, str(request.url), headers=headers, body=body or None
                )
            except TransientError as error:  # the SDK wraps it: APITimeoutError and the like
                if error.kind == "timeout":
                    raise httpx2.ReadTimeout(str(error), request=request) from error
                if error.kind == "connect":
                    raise httpx2.ConnectError(str(error), request=request) from error
                raise httpx2.RemoteProtocolError(str(error), request=request) from error
            kept = [
                (name, value)
                for name, value in reply.headers.items()
                if name.lower() not in _DECODED_HEADERS
            ]
            return httpx2.Response(reply.status, headers=kept, content=reply.body, request=request)

        async def aclose(self) -> None:
            await self.transport.aclose()

    return httpx2.AsyncClient(
        transport=Adapter(),
        follow_redirects=False,
        trust_env=False,  # proxies: HttpTransport reads the environment itself
        timeout=timeout,
    )
