"""Which host names `turnbench view` answers to: the defence against DNS rebinding.

A page on `attacker.example` can have its name resolve to 127.0.0.1 a moment after it
loaded; the browser then sends the page's requests to this server as same-origin requests
for `attacker.example`, cookies and tokens of this server aside. The one thing such a request
cannot hide is its `Host` header, which names the attacker's host. So every request's Host
is checked against an allowlist before anything else runs: the loopback names (`localhost`
and loopback addresses), the address given with `--host`, and the names given with
`--allow-host` (for a server bound to every interface, the names clients reach it by). A
state-changing request's `Origin` must name an allowed host too, and be the very host and
port the request was sent to.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
WILDCARDS = ("", "0.0.0.0", "::")


def _is_loopback_address(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    """Whether a `--host` value is a loopback name or address (then no token is needed)."""
    return _normal(host) == "localhost" or _is_loopback_address(_normal(host))


def _normal(name: str) -> str:
    """A host name as compared: lower case, brackets of an IPv6 literal and a final dot off."""
    return name.strip().strip("[]").rstrip(".").lower()


def split_authority(authority: str) -> tuple[str, int | None] | None:
    """(host, port) of a Host header or an Origin's authority (`name`, `name:port`,
    `[v6]:port`); None when it is not one."""
    if not authority or any(c.isspace() or c in "/@\\?#" for c in authority):
        return None
    if authority.startswith("["):
        host, sep, rest = authority[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        host, sep, port_text = authority.rpartition(":")
        if not sep:
            host, port_text = authority, None
        if ":" in host:  # (an IPv6 address without brackets is no authority)
            return None
    if not host:
        return None
    if port_text is None:
        return _normal(host), None
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return _normal(host), int(port_text)


@dataclass(frozen=True)
class Hosts:
    """The host names the server answers to (besides every loopback address)."""

    names: frozenset[str]

    @classmethod
    def for_server(cls, host: str, allowed: Iterable[str] = ()) -> Hosts:
        """The allowlist of a server bound to `host`, with the names of `--allow-host`.
        Bound to every interface, the machine's own names are added as well."""
        names = {"localhost", _normal(host), *(_normal(name) for name in allowed)}
        if host in WILDCARDS:
            names |= {_normal(socket.gethostname()), _normal(socket.getfqdn())}
        return cls(frozenset(name for name in names if name and name not in WILDCARDS))

    def allows(self, name: str) -> bool:
        name = _normal(name)
        return name in self.names or _is_loopback_address(name)

    def allows_host_header(self, header: str | None) -> bool:
        found = split_authority(header or "")
        return found is not None and self.allows(found[0])

    def allows_origin(self, origin: str | None, host_header: str | None) -> bool:
        """An Origin of an allowed host that is the request's own host and port."""
        if not origin:
            return False
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.path or parts.query:
            return False
        found, target = split_authority(parts.netloc), split_authority(host_header or "")
        if found is None or target is None or not self.allows(found[0]):
            return False
        default = 443 if parts.scheme == "https" else 80
        return (found[0], found[1] or default) == (target[0], target[1] or default)


LOOPBACK = Hosts.for_server("127.0.0.1")


def host_middleware(hosts: Hosts) -> Handler:
    """The first check of every request: a Host outside the allowlist is 403, before any
    token, route or file is looked at."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not hosts.allows_host_header(request.headers.get("Host")):
            return web.Response(
                status=403,
                text="403: this server does not answer to that host name (a DNS rebinding "
                "page?); use http://127.0.0.1 or a name given with --allow-host\n",
                headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
            )
        return await handler(request)

    check.turnbench_host_check = True  # type: ignore[attr-defined]
    return check  # type: ignore[no-any-return]


def ensure_host_check(app: web.Application, hosts: Hosts) -> None:
    """Put the host check first among `app`'s middlewares unless it is there already (an
    app that `build_app` made has it; the annotation routes added to a bare app get it)."""
    if not any(getattr(m, "turnbench_host_check", False) for m in app.middlewares):
        app.middlewares.insert(0, host_middleware(hosts))
