"""The console-script entry point, kept import-free so Ctrl-C during start-up is clean.

Importing the CLI takes a few hundred milliseconds; an interrupt in that window must end
with exit status 130 and no traceback, like an interrupt at any later moment.

When the command has finished, the process ends without the interpreter's teardown. The
teardown frees every object one by one and collects the rest, which after a large run is
hundreds of thousands of objects: 0.35-0.45 s of a 6 s judge-only MT-Bench-101 run
(benchmarks/README.md), spent after every file was written and closed. The operating system
reclaims the memory at once. The ordinary exit is kept whenever it could still do
something: a thread that is not a daemon, a live child process, an exit status that is a
message, or output that cannot be flushed.
"""

from __future__ import annotations

import os
import sys

EXIT_INTERRUPTED = 130


def main() -> None:
    try:
        from turnbench.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    try:
        cli_main()
    except SystemExit as done:
        _leave(done)
        raise
    _leave(SystemExit(0))


def _leave(done: SystemExit) -> None:
    """End the process now with `done`'s status if nothing is left for the teardown."""
    code = done.code
    if code is not None and not isinstance(code, int):
        return  # a message: the ordinary exit prints it
    if not _nothing_left_running():
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # the ordinary exit reports a closed or broken stream
    os._exit(code or 0)


def _nothing_left_running() -> bool:
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if any(not t.daemon for t in others):
        return False
    children = sys.modules.get("multiprocessing")
    return children is None or not children.active_children()
