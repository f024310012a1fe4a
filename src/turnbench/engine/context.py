"""What a driver's jobs may do: ask a role, idempotently, and have it logged.

`RunContext` is the one object a driver is given. It is made of one module per job, all on
the one request path (`requests.RequestPath`: roles by name, budget admission, retries,
failure records, re-asks as a role's policy):

- `answers`: the model under test's answers (`answer`, `import_answer`);
- `user_turns`: a simulated conversation's user turns (`ask_user`, `record_user_turn`);
- `replies`: the replies of any role a driver names (`reply`);
- `judgments`: the judges' judgments (`judgment`);
- `steps`: the tools a driver ran and its finished samples (`record_step`, `record_sample`).

Each asks for a key the log holds already by returning the logged record (a resume repays
nothing), and logs what it receives the moment it finishes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from turnbench.backends.base import Backend
from turnbench.backends.roles import MODEL
from turnbench.engine.answers import Answers
from turnbench.engine.budget import Budget
from turnbench.engine.costs import CostMeter
from turnbench.engine.judgments import Judgments
from turnbench.engine.progress import Progress
from turnbench.engine.replies import Replies
from turnbench.engine.requests import About, Role, RunCounters
from turnbench.engine.steps import Steps
from turnbench.engine.user_turns import UserTurns
from turnbench.journal.runlog import RunLog
from turnbench.judging.judge import Judge

__all__ = ["About", "Role", "RunContext", "RunCounters"]


class RunContext(Answers, UserTurns, Replies, Judgments, Steps):
    """What the engine's jobs may do (see the module docstring)."""

    def __init__(
        self,
        log: RunLog,
        *,
        roles: Mapping[str, Role] | None = None,
        budget: Budget | None = None,
        progress: Progress | None = None,
        warn: Callable[[str], None] | None = None,
        strip_think: bool = True,
        costs: CostMeter | None = None,
        judges: Sequence[Judge] = (),
    ) -> None:
        super().__init__(log, roles=roles, budget=budget, progress=progress, warn=warn, costs=costs)
        self.roles.setdefault(MODEL, Role(MODEL, None))
        #: the run's judges, each also a role by its id (the drivers judge with them)
        self.judges: list[Judge] = list(judges)
        for judge in self.judges:
            self.roles.setdefault(judge.id, Role(judge.id, judge.backend))
        self.strip_think = strip_think  # remove <think> blocks before answers are judged
        self.not_judged = set()
        self._answering = {}

    @classmethod
    def of_model(cls, log: RunLog, backend: Backend | None, **kwargs: object) -> RunContext:
        """A context whose only role is the model under test, answered by `backend` (tests,
        imports and audits that need no other)."""
        return cls(log, roles={MODEL: Role(MODEL, backend)}, **kwargs)  # type: ignore[arg-type]
