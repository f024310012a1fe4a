"""The files turnbench keeps in a run directory, which a reading command never writes over.

`report --out` and `export --out` take any path. One that names the log (or results.json,
the up-to-date state, the lock, an audit's audit.json) of a run being read would replace it
whole: every paid answer gone, and the next `run` refusing the directory. Whether a path is
such a file is decided by where it leads, not how it is spelled: `..`, a symbolic link
anywhere on the way, or a hard link to the same file are all the same file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from turnbench.errors import UserError
from turnbench.journal.runlog import LOCK_NAME, LOG_NAME
from turnbench.store.resultsfile import RESULTS_NAME
from turnbench.store.uptodate import STATE_NAME

AUDIT_NAME = "audit.json"  # a judge audit's results (`turnbench.audit.results`)
#: what turnbench owns in a run (or judge audit) directory
RUN_FILES = (LOG_NAME, RESULTS_NAME, STATE_NAME, LOCK_NAME, AUDIT_NAME)


def _where(path: Path) -> Path:
    """Where `path` leads (links followed, `..` folded), as far as it exists."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a loop of links: compare it as written
        return path.absolute()


def _same_file(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)  # hard links, and links the resolve missed
    except OSError:
        return False  # one of them does not exist (yet)


def refuse_run_file(target: Path, directories: Iterable[Path], flag: str = "--out") -> None:
    """Refuse (exit 2, nothing written) to write `target` if it is a file turnbench keeps in
    one of the run `directories` being read."""
    leads_to = _where(target)
    for directory in directories:
        for name in RUN_FILES:
            owned = directory / name
            if leads_to == _where(owned) or _same_file(target, owned):
                raise UserError(
                    f"{flag} {target}: that is {name} of the run directory {directory}, which "
                    "this command reads; writing there would replace it. Choose another path "
                    "(nothing was written)"
                )
