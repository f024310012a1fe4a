"""Command-line entry point: thin typer commands over the library.

Errors a user can cause arrive here as UserError and leave as one message on stderr with a
non-zero exit status; no traceback.

Importing this package is light. A command's module (and the part of the library under it)
is imported when that command runs, so `turnbench judge` does not import `view`,
`agreement` or `audit-judge`. That is worth little on a long run (0.04 s of a 3.6 s
judge-only MT-Bench run, measured) but keeps a quick command such as `data status` from
paying for every other one. `load()` with no command registers them all, as `--help` and
the docs need.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from turnbench.errors import UserError

if TYPE_CHECKING:
    import typer

#: the module that registers each top-level command (tests/unit/test_cli_commands.py holds
#: this to what the modules really register)
COMMAND_MODULES: dict[str, str] = {
    "agreement": "agreement_cmd",
    "audit-judge": "audit_cmd",
    "compare": "report_cmd",
    "data": "data_cmd",
    "export": "report_cmd",
    "import": "import_cmd",
    "judge": "run_cmd",
    "rank": "rank_cmd",
    "report": "report_cmd",
    "run": "run_cmd",
    "view": "view_cmd",
}


def load(command: str | None = None) -> typer.Typer:
    """The application with `command` registered, or every command when `command` is None
    or not one of them (so that `--help` lists them all and a misspelt name gets typer's
    own message)."""
    complete = command not in COMMAND_MODULES
    modules = sorted(set(COMMAND_MODULES.values())) if complete else [COMMAND_MODULES[command]]
    for module in modules:  # each registers its commands on import
        importlib.import_module(f"turnbench.cli.{module}")
    from turnbench.cli.application import app

    if complete:
        globals()["app"] = app  # later `turnbench.cli.app` lookups get it as is
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # `from turnbench.cli import app` (tests, the docs build): all commands
        return load()
    raise AttributeError(f"module 'turnbench.cli' has no attribute {name!r}")


def main() -> None:
    argv = sys.argv[1:]
    try:
        app = load(argv[0] if argv else None)  # (imports: an interrupt here is clean too)
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
