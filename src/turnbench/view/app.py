"""`turnbench view`: the aiohttp application over the served run directories.

Every request passes three middlewares, in this order: the host check (`hosts.py`: a Host
header outside the allowlist is 403 before anything else runs: DNS rebinding), the token
check (when a token is set, which it always is on an address other than loopback: a request
without it is 401) and the security headers (the report's strict Content-Security-Policy:
scripts and styles only from this server's own static files, images only as data: URIs,
no framing, no referrer, so a token in a URL never leaks to another site).

During human judging (`--annotate`) judging stays blind: every page and API that names a
model (the runs, a run, a conversation, a comparison, the votes export) needs the
operator's token, made at start and printed for the person who runs the server; the
annotators' pages (`/annotate` and its API) need only what every request needs.

A run is named in URLs by the index of its served folder and its path below it; the path is
resolved and must stay inside that folder (no `..`, no link out of it). Pages are rendered
from Jinja2 templates with autoescaping on; markup built by the report's own code is the
only markup passed through unescaped (it escapes every text itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from jinja2 import Environment

from turnbench.benchmarks.recorded import NamedBenchmark
from turnbench.errors import UserError
from turnbench.report.templating import environment
from turnbench.safetext import fix_surrogates
from turnbench.view.hosts import LOOPBACK, Hosts, host_middleware
from turnbench.view.pages import RunCache
from turnbench.view.runs import RunDir, RunFinder
from turnbench.view.static import static_route
from turnbench.view.tokens import TOKEN_COOKIE, offered_token, same_token

HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
STATIC = {"view.js": "text/javascript", "view.css": "text/css", "report.css": "text/css"}
EVENT_INTERVAL = 1.0  # seconds between two looks at the runs for the live page
HEARTBEAT = 15.0
FINDER: web.AppKey[RunFinder] = web.AppKey("finder", RunFinder)
CACHE: web.AppKey[RunCache] = web.AppKey("cache", RunCache)
TEMPLATES: web.AppKey[Environment] = web.AppKey("templates", Environment)
ROOTS: web.AppKey[list[Path]] = web.AppKey("roots", list)
STOPPING: web.AppKey[asyncio.Event] = web.AppKey("stopping", asyncio.Event)
#: during --annotate: the token of the pages that name models (None: not annotating)
OPERATOR: web.AppKey[str | None] = web.AppKey("operator", str)
#: the routes an annotator may use during --annotate (every other route names models)
ANNOTATOR_PATHS = ("/annotate", "/api/annotate/next", "/api/votes", "/api/votes/undo")
ANNOTATOR_PREFIXES = ("/annotate/static/",)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _annotator_route(path: str) -> bool:
    return path in ANNOTATOR_PATHS or path.startswith(ANNOTATOR_PREFIXES)


def token_middleware(token: str | None, operator: str | None = None) -> Any:
    """Every request needs `token` when it is set (401 otherwise); with `operator` set
    (during --annotate) every route but the annotators' needs the operator's token (403
    otherwise), which also opens every route by itself."""
    expected = None if token is None else token.encode("utf-8")
    operator_token = None if operator is None else operator.encode("utf-8")

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if expected is None and operator_token is None:
            return await handler(request)
        offered, from_query = offered_token(request)
        is_operator = operator_token is not None and same_token(offered, operator_token)
        matched = is_operator or (expected is not None and same_token(offered, expected))
        if expected is not None and not matched:
            refused = web.Response(
                status=401,
                text="401: this server needs its token (?token=... or Authorization: Bearer)\n",
                headers={"WWW-Authenticate": "Bearer", "Cache-Control": "no-store"},
            )
            _secure(refused.headers)
            return refused
        if operator_token is not None and not is_operator and not _annotator_route(request.path):
            refused = web.Response(
                status=403,
                text="403: during human judging this page is for the person running the "
                "server (it names models); open it with the operator's address printed when "
                "the server started\n",
                headers={"Cache-Control": "no-store"},
            )
            _secure(refused.headers)
            return refused
        response = await handler(request)
        if from_query and matched and offered is not None and not response.prepared:
            response.set_cookie(
                TOKEN_COOKIE, offered, httponly=True, samesite="Strict", path="/",
                secure=request.secure,
            )  # fmt: skip
        return response

    return check


def _secure(headers: Any) -> None:
    headers.setdefault("Content-Security-Policy", CSP)
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "no-referrer")
    headers.setdefault("X-Frame-Options", "DENY")
    headers.setdefault("Cache-Control", "no-store")


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as error:
        _secure(error.headers)
        raise
    if not response.prepared:
        _secure(response.headers)
    return response


# -- paths ---------------------------------------------------------------------------------
def safe_run_path(roots: list[Path], root: int, rel: str) -> Path:
    """The run directory `rel` below served folder `root`, refused (404) when the path would
    leave it: `..`, an absolute path, or a link whose target is outside."""
    if not 0 <= root < len(roots):
        raise web.HTTPNotFound(text="no such served folder")
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts) or rel.startswith("/") or "\x00" in rel:
        raise web.HTTPNotFound(text="no such run")
    base = roots[root]
    target = base.joinpath(*parts).resolve()
    if target != base and base not in target.parents:
        raise web.HTTPNotFound(text="no such run")
    return target


def _run_for(request: web.Request, root_key: str = "root", path_key: str = "path") -> RunDir:
    roots = request.app[ROOTS]
    try:
        root = int(request.match_info.get(root_key) or request.query.get(root_key, ""))
    except ValueError:
        raise web.HTTPNotFound(text="no such served folder") from None
    rel = request.match_info.get(path_key) or request.query.get(path_key, "")
    target = safe_run_path(roots, root, rel)
    rel_path = target.relative_to(roots[root]).as_posix() if target != roots[root] else "."
    found = request.app[FINDER].get(root, rel_path)
    if found is None:
        raise web.HTTPNotFound(text="no such run")
    return found


# -- handlers ------------------------------------------------------------------------------
def _render(request: web.Request, name: str, **values: Any) -> web.Response:
    """A page; a lone surrogate that reached it from a run directory shown as U+FFFD (no
    page can be encoded with one: it was a 500, issue 44)."""
    text = request.app[TEMPLATES].get_template(name).render(**values)
    return web.Response(text=fix_surrogates(text), content_type="text/html")


def _summaries(request: web.Request) -> list[dict[str, Any]]:
    return [run.summary() for run in request.app[FINDER].runs()]


def dump_json(value: Any) -> str:
    """JSON that a browser's JSON.parse reads: no bare NaN or Infinity (every number from a
    run directory was checked by `RunDir.summary`; a slip is an error here, not a page that
    stops updating for every run)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


async def api_runs(request: web.Request) -> web.Response:
    summaries = await asyncio.to_thread(_summaries, request)
    return web.json_response(summaries, dumps=dump_json)


async def runs_page(request: web.Request) -> web.Response:
    summaries = await asyncio.to_thread(_summaries, request)
    roots = request.app[ROOTS]
    return _render(request, "runs.html", runs=summaries, roots=[str(r) for r in roots])


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: the runs' rows each time one of them changed (a cheap look at
    every log's size and new lines once per EVENT_INTERVAL)."""
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
    )
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    await response.prepare(request)
    last, quiet = "", 0.0
    stopping = request.app[STOPPING]
    try:
        while not stopping.is_set():
            summaries = await asyncio.to_thread(_summaries, request)
            text = dump_json(summaries)
            if text != last:
                await response.write(b"event: runs\ndata: " + text.encode("utf-8") + b"\n\n")
                last, quiet = text, 0.0
            elif quiet >= HEARTBEAT:
                await response.write(b": still here\n\n")
                quiet = 0.0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), EVENT_INTERVAL)
            quiet += EVENT_INTERVAL
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    return response


async def run_page(request: web.Request) -> web.Response:
    run = _run_for(request)
    page = await asyncio.to_thread(request.app[CACHE].run_page, run)
    return _render(request, "run.html", run=run.summary(), **page)


async def conversation_page(request: web.Request) -> web.Response:
    run = _run_for(request)
    sample = request.query.get("sample", "")
    others = [r for r in request.app[FINDER].runs() if r is not run]
    page = await asyncio.to_thread(request.app[CACHE].conversation, run, sample, others)
    return _render(request, "conversation.html", run=run.summary(), **page)


async def side_by_side(request: web.Request) -> web.Response:
    base = _run_for(request, "a_root", "a")
    new = _run_for(request, "b_root", "b")
    sample = request.query.get("sample", "")
    cache = request.app[CACHE]
    left = await asyncio.to_thread(cache.conversation, base, sample, [])
    right = await asyncio.to_thread(cache.conversation, new, sample, [])
    return _render(
        request, "pair.html", sample=sample, left=left, right=right,
        left_run=base.summary(), right_run=new.summary(),
    )  # fmt: skip


async def compare_page(request: web.Request) -> web.Response:
    base = _run_for(request, "a_root", "a")
    new = _run_for(request, "b_root", "b")
    page = await asyncio.to_thread(
        request.app[CACHE].compare, base, new, request.query.get("a_model"),
        request.query.get("b_model"),
    )  # fmt: skip
    return _render(request, "compare.html", base=base.summary(), new=new.summary(), **page)


def _report_css() -> bytes:
    from turnbench.report.assets import STYLE

    return STYLE.encode("utf-8")


static = static_route(STATIC, cache_control="no-cache", generated={"report.css": _report_css})


WARM_INTERVAL = 5.0


def _warm(app: web.Application, stop: threading.Event) -> None:
    """Read every run that is not being written into the cache, in a background thread, and
    look again every WARM_INTERVAL s (an unchanged run costs two stat calls): a large run is
    read once, while the reader looks at the runs page, instead of when its page is opened.
    A run being written is read when its page is asked for (it changes every second)."""
    while not stop.is_set():
        for run in app[FINDER].runs()[: app[CACHE].size]:
            if stop.is_set():
                return
            if run.summary()["state"] != "running":
                app[CACHE].run_page(run)
        stop.wait(WARM_INTERVAL)


async def no_favicon(_request: web.Request) -> web.Response:
    return web.Response(status=204)


def templates() -> Environment:
    """The view's pages in turnbench's one template environment (the report's filters and
    macros, and its `transcript` macro for conversations drawn whole)."""
    return environment(str(HERE / "templates"))


def build_app(
    dirs: list[Path],
    *,
    token: str | None,
    annotate_run: Path | None = None,
    votes_path: Path | None = None,
    overlap: int = 2,
    warm: bool = True,
    hosts: Hosts = LOOPBACK,
    operator_token: str | None = None,
    benchmark: NamedBenchmark | None = None,
) -> web.Application:
    """The application over `dirs` (each must be a directory). `token`: every request must
    carry it (None: no check, for a loopback address only; the CLI decides). `hosts`: the
    host names it answers to. With `annotate_run` the human-judging page of that run is
    added, its votes in `votes_path`, and every page that names a model needs the
    operator's token (`operator_token`, else one made now: `app[OPERATOR]`).
    `warm`: read the finished runs into the cache in the background (see `_warm`).
    `benchmark`: a plug-in benchmark the user named (`--benchmark`): the runs that recorded
    it are read with it (its outcome's model and template; nothing a run names is imported)."""
    # the report's modules are imported while the server starts, not by the first request
    # that opens a run (importing them takes a few tenths of a second)
    import turnbench.report.compare
    import turnbench.report.html  # noqa: F401
    from turnbench.benchmarks import builtin_benchmarks

    builtin_benchmarks()  # (imports every built-in benchmark's package, once)

    roots = []
    for directory in dirs:
        if not directory.is_dir():
            raise UserError(f"{directory}: not a directory (turnbench view serves folders)")
        roots.append(directory.resolve())
    if annotate_run is not None and votes_path is None:
        raise UserError("--annotate RUN needs --votes FILE (the SQLite file of the votes)")
    operator = None
    if annotate_run is not None:
        operator = operator_token or secrets.token_urlsafe(24)
    app = web.Application(
        middlewares=[host_middleware(hosts), token_middleware(token, operator), security_headers]
    )
    app[OPERATOR] = operator
    app[ROOTS] = roots
    app[FINDER] = RunFinder(roots)
    app[CACHE] = RunCache(roots, named=benchmark)
    app[TEMPLATES] = templates()

    stop_warming = threading.Event()

    async def on_startup(application: web.Application) -> None:
        application[STOPPING] = asyncio.Event()  # (made in the server's own event loop)
        if warm:
            threading.Thread(
                target=_warm, args=(application, stop_warming), name="view-warm", daemon=True
            ).start()

    async def on_shutdown(application: web.Application) -> None:
        application[STOPPING].set()  # open event streams end, so a stop is not held up
        stop_warming.set()

    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    app.router.add_get("/", runs_page)
    app.router.add_get("/api/runs", api_runs)
    app.router.add_get("/api/events", events)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/favicon.ico", no_favicon)
    app.router.add_get("/run/{root:\\d+}/{path:.*}", run_page)
    app.router.add_get("/conversation/{root:\\d+}/{path:.*}", conversation_page)
    app.router.add_get("/compare", compare_page)
    app.router.add_get("/pair", side_by_side)
    if annotate_run is not None:
        from turnbench.view.annotate import add_annotation_routes

        assert votes_path is not None
        add_annotation_routes(
            app, run_dir=annotate_run, votes_path=votes_path, overlap=overlap, hosts=hosts,
            export_token=operator,
        )  # fmt: skip
    return app
