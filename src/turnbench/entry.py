"""The console-script entry point, kept import-free so Ctrl-C during start-up is clean.

Importing the CLI takes a few hundred milliseconds; an interrupt in that window must end
with exit status 130 and no traceback, like an interrupt at any later moment.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def main() -> None:
    try:
        from turnbench.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    cli_main()
