"""Fail fast on a dead endpoint: one cheap request to each distinct endpoint before work.

GET {base}/models with the endpoint's own credentials. A server without /models (404, 405)
is fine, and so is any other answer: the point is to catch, before the run directory fills
with failures, what no retry fixes: connection refused, unknown host, TLS failure, timeout,
and a refused key (401/403). With several replicas for a role, only a role with no
reachable endpoint stops the run; the dead replicas are set aside and a warning says so.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from turnbench.backends.endpoints import Endpoint
from turnbench.backends.http import HttpTransport
from turnbench.backends.keys import base_url_flag
from turnbench.backends.retry import TransientError
from turnbench.errors import PreflightError

PREFLIGHT_TIMEOUT = 15.0  # seconds, at most (--request-timeout when shorter)


@dataclass(frozen=True)
class Check:
    """The outcome of one endpoint's check: `problem` None means reachable."""

    problem: str | None = None
    refused_status: int | None = None  # 401 or 403
    detail: str = ""


async def _check(backend: Any, endpoint: Endpoint, transport: HttpTransport) -> Check:
    from turnbench.backends.replies import error_detail

    timeout = min(PREFLIGHT_TIMEOUT, backend._policy.request_timeout)
    try:
        reply = await transport.send(
            "GET",
            backend.models_url(endpoint),
            headers=backend.headers(endpoint),
            basic_auth=backend.basic_auth(endpoint),
            timeout=timeout,
        )
    except TransientError as error:
        if error.kind in ("connect", "timeout"):
            from turnbench.backends.replies import short_detail

            return Check(problem=short_detail(str(error), backend._redact, 200))
        return Check()  # it answered something: reachable
    if reply.status in (401, 403):
        return Check(refused_status=reply.status, detail=error_detail(reply.body, backend._redact))
    return Check()


def _unreachable_message(role: str, failures: list[tuple[Endpoint, Check]]) -> str:
    where = "; ".join(f"{e.shown} ({c.problem})" for e, c in failures)
    several = len(failures) > 1
    return (
        f"the {role} endpoint{'s are' if several else ' is'} unreachable: {where}. "
        f"Check {base_url_flag(role)} (or $OPENAI_BASE_URL) and that the server is running. "
        "Nothing was sent."
    )


async def preflight(backends: list[Any]) -> list[str]:
    """Check every distinct endpoint of `backends` (HTTP backends only; others are
    skipped). Raises PreflightError naming the role and the redacted URL; returns warnings
    about replicas that were set aside because they are unreachable."""
    from turnbench.backends.openai_compat import refusal_message

    unique: list[Any] = []
    for backend in backends:
        if (
            backend is not None
            and hasattr(backend, "pool")
            and all(b is not backend for b in unique)
        ):
            unique.append(backend)
    if not unique:
        return []
    transport = HttpTransport(pool_size=16, timeout=PREFLIGHT_TIMEOUT)
    checks: dict[tuple[str, str | None], asyncio.Task[Check]] = {}
    try:
        for backend in unique:
            for endpoint in backend.pool.endpoints:
                key = (endpoint.url, endpoint.key)
                if key not in checks:
                    checks[key] = asyncio.ensure_future(_check(backend, endpoint, transport))
        await asyncio.gather(*checks.values())
    finally:
        await transport.aclose()
    warnings: list[str] = []
    for backend in unique:
        results = [(e, checks[(e.url, e.key)].result()) for e in backend.pool.endpoints]
        for endpoint, check in results:
            if check.refused_status is not None:
                raise PreflightError(
                    f"{backend.spec}: "
                    + refusal_message(
                        backend.role,
                        endpoint.shown,
                        check.refused_status,
                        endpoint.key_source,
                        check.detail,
                    )
                    + " Nothing was sent."
                )
        dead = [(e, c) for e, c in results if c.problem is not None]
        if len(dead) == len(results):
            raise PreflightError(f"{backend.spec}: " + _unreachable_message(backend.role, dead))
        for endpoint, check in dead:
            backend.pool.set_aside(endpoint)
            warnings.append(
                f"{backend.spec}: the {backend.role} endpoint {endpoint.shown} is unreachable "
                f"({check.problem}); it is set aside and the other endpoints take its work"
            )
    return warnings
