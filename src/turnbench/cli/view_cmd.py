"""`turnbench view`: serve the run directories under folders as a local web app."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated

import typer

from turnbench.cli.application import app
from turnbench.errors import UserError


@app.command("view")
def view_command(
    dirs: Annotated[
        list[Path],
        typer.Argument(help="Folders whose run directories (found recursively) are served."),
    ],
    host: Annotated[
        str,
        typer.Option("--host", help="Address to listen on; any but loopback needs a token."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            help="A host name clients reach the server by, besides loopback names and "
            "--host (requests naming any other host are refused: DNS rebinding); repeatable.",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Every request must carry it (?token=T or Authorization: Bearer T); "
            "generated and printed when --host is not loopback and none is given.",
        ),
    ] = None,
    annotate: Annotated[
        Path | None,
        typer.Option("--annotate", help="Also serve human judging of this run at /annotate."),
    ] = None,
    votes: Annotated[
        Path | None,
        typer.Option(
            "--votes",
            help="The SQLite file the --annotate votes go to (default: votes.sqlite here).",
        ),
    ] = None,
    overlap: Annotated[
        int,
        typer.Option("--overlap", help="Annotators that vote on each item (--annotate)."),
    ] = 2,
    benchmark: Annotated[
        str | None,
        typer.Option(
            "--benchmark",
            help="The plug-in benchmark (package.module:ClassName) some of the runs used: "
            "they are read with it (its outcome's template). Code a run directory names is "
            "never imported.",
        ),
    ] = None,
) -> None:
    """Watch runs live, read their reports and conversations, compare two runs (read-only)."""
    from aiohttp import web

    from turnbench.view.app import OPERATOR, build_app
    from turnbench.view.hosts import Hosts, is_loopback, split_authority

    if not 0 < port < 65536:
        raise UserError(f"--port {port}: not a port number (1-65535)")
    if token is not None and not token.strip():
        raise UserError("--token is empty")
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(24)
    if annotate is not None and votes is None:
        votes = Path("votes.sqlite")  # (in the working directory, never in a run directory)
    if votes is not None and annotate is None:
        raise UserError("--votes FILE is for --annotate RUN")
    for name in allow_host or []:
        found = split_authority(name)
        if found is None or found[1] is not None:
            raise UserError(f"--allow-host {name!r}: not a host name (give it without a port)")
    hosts = Hosts.for_server(host, allow_host or [])
    named = None
    if benchmark is not None:
        from turnbench.benchmarks.recorded import named_benchmark

        named = named_benchmark(benchmark)
    application = build_app(
        dirs, token=token, annotate_run=annotate, votes_path=votes, overlap=overlap, hosts=hosts,
        benchmark=named,
    )  # fmt: skip
    shown_host = f"[{host}]" if ":" in host else host
    base = f"http://{shown_host}:{port}/"
    operator = application[OPERATOR]
    if operator is None:
        url = base + (f"?token={token}" if token is not None else "")
        print(f"turnbench view: serving {len(dirs)} folder(s) at {url}", flush=True)
    else:
        # blind judging: the pages that name models are the operator's, not the annotators'
        annotators = base + "annotate" + (f"?token={token}" if token is not None else "")
        print(f"human judging at {annotators}; votes in {votes}", flush=True)
        print(
            f"turnbench view: serving {len(dirs)} folder(s) to you only at {base}?token="
            f"{operator} (runs, conversations and the votes export name the models: keep "
            "this address from the annotators)",
            flush=True,
        )
    try:
        web.run_app(
            application,
            host=host,
            port=port,
            print=None,
            handle_signals=True,
            shutdown_timeout=2.0,
        )
    except OSError as error:
        raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
