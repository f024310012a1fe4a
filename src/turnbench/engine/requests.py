"""The one path of every request of every role: admitted, sent, failed or kept.

Roles are named (`"model"`, `"user"`, each judge's id, any name a driver uses) and every
request of every role takes `RequestPath.exchange`: admission against the budget
(`budget.Ledger`: --max-requests, --max-tokens-total, --max-cost), the role's provider batch
or its live backend (whose own retry layer retries), the role's re-ask policy on the one
asking loop (`backends.asking`), and a failure record when the request fails after its
retries (the work stays pending and is asked again on resume). The records each role keeps
of what it received are written by the modules of the context (`answers`, `user_turns`,
`judgments`, `replies`), each the moment its request finishes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnbench.backends.asking import Asked, ReaskPolicy, Sender, ask
from turnbench.backends.base import Backend
from turnbench.engine.budget import Budget, Ledger, Stage
from turnbench.engine.costs import CostMeter
from turnbench.engine.progress import Progress
from turnbench.errors import AttemptRefusedError, RequestFailedError
from turnbench.journal.runlog import RunLog
from turnbench.types import Completion, FailureRecord, Message, RequestParams, Usage

if TYPE_CHECKING:
    from turnbench.engine.batching import BatchQueue
    from turnbench.samples import Sample


@dataclass(frozen=True)
class Role:
    """One named role of a run as the engine asks it: the backend that answers it, its
    provider batch when its requests go through one, and what identifies its requests (a
    simulated user's `UserSettings`, a judge's `JudgeSettings`)."""

    name: str
    backend: Backend | None
    batch: BatchQueue | None = None
    settings: Any = None


@dataclass(frozen=True)
class About:
    """The work a request is for, as its failure record names it."""

    model: str
    sample: Sample
    turn: int
    judge: str | None = None
    pair: tuple[str, str] | None = None
    arm: str | None = None
    trial: int | None = None


@dataclass
class RunCounters:
    answers_requested: int = 0
    judgments_requested: int = 0
    request_failures: int = 0
    reasks: int = 0
    parse_failures: int = 0


class RequestPath:
    """The roles of a run and the one path their requests take (see the module docstring)."""

    def __init__(
        self,
        log: RunLog,
        *,
        roles: Mapping[str, Role] | None = None,
        budget: Budget | None = None,
        progress: Progress | None = None,
        warn: Callable[[str], None] | None = None,
        costs: CostMeter | None = None,
    ) -> None:
        self.log = log
        self.warn = warn or (lambda _message: None)
        self.budget = budget or Budget()
        self.progress = progress or Progress()
        self.done = log.index.done  # key -> compact finished work; appends update it
        self.counters = RunCounters()
        self.costs = costs
        self.ledger = Ledger(log, self.budget, costs, self.warn)
        #: every role by name
        self.roles: dict[str, Role] = dict(roles or {})

    @property
    def dollars(self) -> float:
        """What the records this invocation logged cost (with --max-cost or prices known)."""
        return self.ledger.dollars

    def role(self, name: str) -> Role:
        found = self.roles.get(name)
        if found is None:
            raise RuntimeError(f"this run has no {name} role")
        return found

    def _fail(
        self, key: str, stage: Stage, role: str, error: RequestFailedError, about: About
    ) -> None:
        self.counters.request_failures += 1
        batch_id = getattr(error, "batch_id", None)  # the provider reported the item failed
        self.log.append(
            FailureRecord(
                key=key,
                stage=stage,
                error=error.message,
                attempts=error.attempts,
                role=role,
                model=about.model,
                sample_id=about.sample.id,
                turn=about.turn,
                group=about.sample.group,
                judge=about.judge,
                pair=about.pair,
                meta={"batch": batch_id} if batch_id else {},
                arm=about.arm,
            )
        )
        self.progress.advance(f"{stage}s", "failed")

    async def exchange(
        self,
        role: str,
        messages: list[Message],
        params: RequestParams,
        *,
        key: str,
        stage: Stage,
        about: About,
        worst: float = 0.0,
        policy: ReaskPolicy | None = None,
        through: Sender | None = None,
    ) -> Asked | None:
        """One admitted asking of `role` (its re-asks and retries included): what it
        received, or None when its first request failed after its retries (a failure
        record is logged; the work stays pending). An attempt the budget refused stops the
        run once the requests in flight are logged. `through`: another way to send (a
        judge's first request in its provider batch); else the role's batch or backend."""
        found = self.role(role)
        queue, backend = found.batch, found.backend
        sender: Sender
        if through is not None:
            sender = through
        elif queue is not None:
            sender = ViaBatch(queue, key)
        elif backend is not None:
            sender = backend
        else:
            raise RuntimeError(f"this run has no {role} backend")
        asked: Asked | None = None
        refused: str | None = None
        async with self.ledger.admitted_request(
            None if queue is not None else backend, worst, key=key, stage=stage, role=role
        ):
            try:
                asked = await ask(sender, messages, params, policy)
            except RequestFailedError as error:
                self._fail(key, stage, role, error, about)
                if isinstance(error, AttemptRefusedError):
                    refused = error.reason
        if refused is not None:
            await self.ledger.stop(refused)
        if asked is not None and isinstance(sender, ViaBatch | FirstViaBatch):
            asked.batch_id = sender.batch_id
        return asked


def summed(completions: list[Completion]) -> tuple[Usage, int, float, list[str]]:
    """The usage, attempts, latency and endpoints of several replies of one asking."""
    usage = Usage()
    for completion in completions:
        usage = usage + completion.usage
    return (
        usage,
        sum(c.attempts for c in completions),
        round(sum(c.latency_s for c in completions), 4),
        [c.endpoint for c in completions if c.endpoint],
    )


class ViaBatch:
    """A role's requests through its provider batch (`--model-batch`): each completion is
    one item of the role's `BatchQueue`, and the batch that produced it is kept."""

    def __init__(self, queue: BatchQueue, key: str) -> None:
        self.spec = queue.spec
        self.stats = queue.stats
        self._queue = queue
        self._key = key
        self.batch_id: str | None = None

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        completion, self.batch_id = await self._queue.request(self._key, messages, params)
        return completion

    async def aclose(self) -> None:
        return None


class FirstViaBatch:
    """A judge's backend for one judgment with --judge-batch: its first request goes into the
    judge's provider batch, its re-asks (few, and each waiting on the reply before it) go
    live, so an unreadable reply does not cost another batch round trip."""

    def __init__(self, queue: BatchQueue, key: str, live: Backend) -> None:
        self.spec = live.spec
        self.stats = live.stats
        self._queue = queue
        self._key = key
        self._live = live
        self.batch_id: str | None = None
        self.usage: Usage | None = None

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        if self.batch_id is None:
            completion, self.batch_id = await self._queue.request(self._key, messages, params)
            self.usage = completion.usage
            return completion
        return await self._live.complete(messages, params)

    async def aclose(self) -> None:  # the judge's own backend is closed by its owner
        return None
