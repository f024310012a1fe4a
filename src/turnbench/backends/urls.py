"""Base URLs: how they are shown (secrets removed), compared, checked and joined with paths.

A base URL may carry credentials (user:password@host, ?api-key=..., &sig=...). Nothing
outside this module decides which parts are secret: every URL that is logged, recorded or
printed goes through `display_url`, and `url_secrets` lists the values a reply must not echo.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from turnbench.errors import UserError

HIDDEN = "***"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError:
        return None
    return parts


def display_url(url: str | None) -> str | None:
    """A URL safe to record or show: user:password@ becomes ***@ and every query value ***.

    Any query value is hidden, not only known names (api-key, key, token, sig, password...):
    a proxy's parameter names are unknowable, and a hidden harmless value costs nothing.
    """
    if not url:
        return url
    parts = _split(url)
    if parts is None:
        return "<unparseable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{HIDDEN}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(_hide_value(pair) for pair in parts.query.split("&")) if parts.query else ""
    fragment = HIDDEN if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _hide_value(pair: str) -> str:
    if not pair:
        return pair
    name, sep, _ = pair.partition("=")
    return f"{name}={HIDDEN}" if sep else HIDDEN


def url_secrets(url: str | None) -> list[str]:
    """Values in a URL that are or may be credentials (raw and percent-decoded forms)."""
    if not url:
        return []
    parts = _split(url)
    if parts is None:
        return []
    values: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        values += userinfo.split(":", 1)
    for pair in parts.query.split("&") if parts.query else []:
        name, sep, value = pair.partition("=")
        values.append(value if sep else name)
    if parts.fragment:
        values.append(parts.fragment)
    found: set[str] = set()
    for value in values:
        for form in (value, unquote(value)):
            if len(form) >= 4:
                found.add(form)
    return sorted(found, key=len, reverse=True)


class EndpointId(NamedTuple):
    """What makes two base URLs the same endpoint: scheme, host, port and path."""

    scheme: str
    host: str
    port: int | None
    path: str


def endpoint_id(url: str) -> EndpointId | None:
    parts = _split(url)
    if parts is None:
        return None
    scheme = parts.scheme.lower()
    port = parts.port or _DEFAULT_PORTS.get(scheme)
    path = "/" + "/".join(segment for segment in parts.path.split("/") if segment)
    return EndpointId(scheme, (parts.hostname or "").lower(), port, path)


def same_endpoint(a: str, b: str) -> bool:
    """True when both URLs name one endpoint (credentials, query and trailing / ignored)."""
    first, second = endpoint_id(a), endpoint_id(b)
    return first is not None and first == second


def check_base_url(url: str, flag: str) -> str:
    """An http(s) URL with a host, or a UserError naming the flag (the URL shown redacted)."""
    parts = _split(url)
    if parts is None or parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise UserError(
            f"{flag}: {display_url(url)!r} is not an http:// or https:// URL with a host "
            "(for example http://127.0.0.1:8000/v1)"
        )
    return url.strip()


class Target(NamedTuple):
    """A base URL split for sending: no credentials in `base`, the query kept apart."""

    base: str  # scheme://host[:port]/path, no trailing slash, no userinfo, no query
    query: str
    username: str | None
    password: str | None

    def url(self, path: str) -> str:
        return f"{self.base}/{path.lstrip('/')}" + (f"?{self.query}" if self.query else "")


def target(url: str) -> Target:
    parts = urlsplit(url.strip())
    host = parts.netloc.rsplit("@", 1)[-1]
    base = urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return Target(base, parts.query, user, password)


def normalize_endpoint(endpoint: str) -> str:
    """An Azure resource URL without a trailing slash or /openai (the SDK appends /openai)."""
    endpoint = endpoint.strip().rstrip("/")
    if endpoint.endswith("/openai"):
        endpoint = endpoint[: -len("/openai")]
    return endpoint
