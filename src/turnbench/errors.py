"""Exceptions that carry a message meant for the user.

Anything a user can cause (a bad flag, a malformed file, a refused key) is raised as a
`UserError`; the CLI prints its message and exits non-zero, with no traceback. Messages must
never contain secrets: they are built from names and paths, not from request headers.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix; shown as one clear message, exit status 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DataMissingError(UserError):
    """Benchmark data could not be found locally nor downloaded."""


class RunDirectoryError(UserError):
    """The run directory cannot be used safely: a link or a non-regular file where the log or
    the lock belongs, a log whose settings cannot be read, a write the disk refused.

    Exit status 7: the environment (not a flag) is at fault, and a script that retries on
    other errors should not retry this one.
    """

    exit_code = 7


class RunLockedError(RunDirectoryError):
    """Another process holds the run directory."""


class ConfigDriftError(UserError):
    """The run directory was started with settings that would make its records invalid."""


class RequestFieldConflictError(UserError):
    """`--model-extra` / `--judge-extra` tried to set a field the benchmark controls.

    Exit status 8, its own: the request would not be the benchmark's, so nothing is sent.
    """

    exit_code = 8


class FatalBackendError(UserError):
    """The endpoint refused us in a way retries cannot fix (bad key, no permission).

    Raised to stop the whole run at once instead of burning requests.
    """

    exit_code = 3


class PreflightError(UserError):
    """An endpoint failed the check before work starts (unreachable, TLS, 401/403).

    Its own exit status, so scripts can tell "the server is not there" from a bad flag.
    """

    exit_code = 4


class EngineCrashedError(FatalBackendError):
    """The embedded model's engine (llama.cpp, in its worker process) died.

    A segmentation fault, an illegal instruction or the out-of-memory killer: retrying would
    crash again, so the run stops with the cause and the command that rebuilds llama.cpp.
    Exit status 6: distinct from a refused key (3), an unreachable endpoint (4) and a failed
    audit threshold (5), so a script can tell a broken local build from a broken server.
    """

    exit_code = 6


class RequestFailedError(Exception):
    """One request failed after its retry budget; the work item is recorded as failed."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = attempts


class AttemptRefusedError(RequestFailedError):
    """A request's next attempt was not sent because the budget (--max-cost) could not
    cover its worst case; `reason` says which budget and by how much."""

    def __init__(self, message: str, attempts: int, reason: str) -> None:
        super().__init__(message, attempts)
        self.reason = reason


class BudgetExhaustedError(Exception):
    """The run reached --max-requests or --max-tokens-total; stop launching work."""
