"""The view's static files (scripts and style sheets), served from a fixed list: a name in a
URL only selects among the files the package ships, never a path on disk."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from aiohttp import web

STATIC_DIR = Path(__file__).parent / "static"


def static_route(
    types: Mapping[str, str],
    *,
    cache_control: str,
    generated: Mapping[str, Callable[[], bytes]] | None = None,
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A handler for `{name}` routes: the shipped file `name` with its content type from
    `types` (404 for any other name); `generated` names files made in memory instead."""
    made = dict(generated or {})

    async def static(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in types:
            raise web.HTTPNotFound()
        body = made[name]() if name in made else (STATIC_DIR / name).read_bytes()
        response = web.Response(body=body, content_type=types[name])
        response.headers["Cache-Control"] = cache_control
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    return static
