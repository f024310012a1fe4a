"""One evaluation from validated options to results: what the API and the CLI both run.

`prepare` validates every input and builds the invocation, writing nothing ("bad input
writes nothing"); `roles` builds each role from its flags; `Session` (`lifecycle`) runs it:
backends, endpoint checks, the run directory, the plan's jobs, the results; `result` is
what comes back.
"""

from __future__ import annotations

from turnbench.session.lifecycle import MIN_ACTIVE_JOBS, Mode, Session, Warn
from turnbench.session.prepare import Prepared
from turnbench.session.result import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    RunResult,
    judge_warning,
)

__all__ = [
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "MIN_ACTIVE_JOBS",
    "Mode",
    "Prepared",
    "RunResult",
    "Session",
    "Warn",
    "judge_warning",
]
