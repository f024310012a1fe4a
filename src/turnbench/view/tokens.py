"""The tokens of `turnbench view`: where a request carries one, and how it is compared."""

from __future__ import annotations

import hmac

from aiohttp import web

TOKEN_COOKIE = "turnbench_view_token"


def offered_token(request: web.Request) -> tuple[str | None, bool]:
    """The token a request carries, and whether it came in the query (then a cookie is set,
    so the links of the page work without it)."""
    header = request.headers.get("Authorization", "")
    if header[:7].lower() == "bearer ":
        return header[7:].strip(), False
    query = request.query.get("token")
    if query is not None:
        return query, True
    return request.cookies.get(TOKEN_COOKIE), False


def same_token(offered: str | None, expected: bytes) -> bool:
    """A constant-time comparison of an offered token with the expected one. Any text is
    compared, whatever it holds: a header's non-UTF-8 bytes reach aiohttp as lone
    surrogates, which are encoded back to those bytes here, never raised on."""
    if offered is None:
        return False
    return hmac.compare_digest(offered.encode("utf-8", "surrogateescape"), expected)
