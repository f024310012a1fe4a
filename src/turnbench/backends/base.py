"""The backend protocol shared by every provider."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from turnbench.types import Completion, Message, RequestParams, Usage


@dataclass
class BackendStats:
    """Live counters, read by the progress display and summed into results.json."""

    requests: int = 0  # HTTP attempts (or local generations) started
    retries: int = 0
    failures: int = 0  # requests that failed after their whole retry budget
    usage: Usage = field(default_factory=Usage)
    retrying: int = 0  # requests now between a failed attempt and their outcome
    last_error: str | None = None  # the latest failed attempt's reason (redacted, short)

    def add_usage(self, usage: Usage) -> None:
        self.usage = self.usage + usage


class Backend(Protocol):
    """A model reachable by chat messages. The model under test and the judge are both one."""

    spec: str
    stats: BackendStats

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        """Return one completion, or raise RequestFailedError / FatalBackendError."""
        ...

    async def aclose(self) -> None: ...
