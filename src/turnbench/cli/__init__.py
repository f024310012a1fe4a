"""Command-line entry point: thin typer commands over the library.

Errors a user can cause arrive here as UserError and leave as one message on stderr with a
non-zero exit status; no traceback.
"""

from __future__ import annotations

import sys

from turnbench.cli import (  # noqa: F401  (they register their commands)
    agreement_cmd,
    audit_cmd,
    data_cmd,
    import_cmd,
    rank_cmd,
    report_cmd,
    run_cmd,
    view_cmd,
)
from turnbench.cli.app import app
from turnbench.errors import UserError


def main() -> None:
    argv = sys.argv[1:]
    try:
        # the raw arguments let options that follow a --judge attach to it
        app(args=argv, obj={"argv": argv})
    except KeyboardInterrupt:  # before a run installs its own handler: nothing to clean up
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except UserError as error:
        from turnbench.cli.terminal import console, shown

        console(stderr=True, soft_wrap=True).print(
            f"[bold red]error:[/bold red] {shown(error.message)}"
        )
        sys.exit(error.exit_code)
