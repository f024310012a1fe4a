"""results.json on disk: written whole or not at all, never through a planted link.

Apart from results.py (which computes the results) so that what only writes or names the
file (a run's end, `uptodate`, `rundir`) does not import the results' models and statistics.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

RESULTS_NAME = "results.json"


def _finite(value: Any) -> Any:
    """NaN or infinity never reach results.json (they are not JSON); they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def write_file_atomically(directory: Path, name: str, data: bytes) -> Path:
    """Write DIR/NAME whole or not at all: into a new temporary file beside it (created
    exclusively, so no link is followed), then renamed over it. The rename replaces the name
    itself, so a symbolic link planted there is replaced, never written through. Raises
    OSError (EISDIR for a directory in its place) with the temporary file removed."""
    import contextlib
    import errno
    import stat

    target = directory / name
    temporary: str | None = None
    try:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(target).st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{target.stem}-")
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(handle, 0o644)  # (the descriptor: no name to swap for a link)
            view = memoryview(data)
            while view:
                written = os.write(handle, view)
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[written:]
        finally:
            os.close(handle)
        if not hasattr(os, "fchmod"):
            os.chmod(temporary, 0o644)
        os.replace(temporary, target)
        temporary = None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return target


def write_results(directory: Path, results: dict[str, Any]) -> Path:
    """Write DIR/results.json whole or not at all (`write_file_atomically`). A directory in
    its place, a full disk or a refused permission raise RunDirectoryError (one message,
    exit 7); the log is not touched here, so re-running the same command writes the results
    again."""
    import errno

    from turnbench.errors import RunDirectoryError  # (local: this function's own needs)

    target = directory / RESULTS_NAME
    text = json.dumps(_finite(results), indent=2, ensure_ascii=False, allow_nan=False)
    try:
        return write_file_atomically(directory, RESULTS_NAME, (text + "\n").encode("utf-8"))
    except OSError as error:
        if error.errno == errno.EISDIR:
            reason = f"{target} is a directory; turnbench writes the run's results there as a file"
        else:
            reason = f"cannot write {target}: {error.strerror or error}"
            if error.errno == errno.ENOSPC:
                reason += " (the disk is full)"
        raise RunDirectoryError(
            f"{reason}. The log is kept; fix the cause and re-run the same command to write the "
            "results."
        ) from None
