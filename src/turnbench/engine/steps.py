"""What a driver logs that is no role's request: the tools it ran, and its finished samples.

A step (a tool call the driver ran itself) is logged the moment it ran, before the
conversation goes on, so a resumed conversation reads its output back (`logged_step`) and
never runs it again; a finished sample is logged once its driver scored it, and results
read those (a driver whose plan lists `scored` samples).
"""

from __future__ import annotations

from turnbench.engine.requests import RequestPath
from turnbench.journal.logindex import SampleDone, StepDone
from turnbench.types import SampleRecord, StepRecord


class Steps(RequestPath):
    """Local steps and finished samples (`RunContext` is one)."""

    def logged_step(self, key: str) -> StepDone | None:
        """The local step (a tool call a driver ran) the log holds under `key`, or None."""
        cached = self.done.get(key)
        return cached if isinstance(cached, StepDone) else None

    def record_step(self, record: StepRecord) -> StepRecord:
        """Log a local step the moment it ran, before the conversation goes on."""
        self.log.append(record)
        return record

    def logged_sample(self, key: str) -> SampleDone | None:
        """The finished sample the log holds under `key`, or None."""
        cached = self.done.get(key)
        return cached if isinstance(cached, SampleDone) else None

    def record_sample(self, record: SampleRecord) -> SampleRecord:
        """Log a finished sample as its driver scored it."""
        self.log.append(record)
        self.progress.advance("samples")
        return record
