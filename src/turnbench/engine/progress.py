"""Where the engine reports progress: a no-op sink that the terminal display subclasses."""

from __future__ import annotations


class Progress:
    """No-op progress sink; the terminal display subclasses it."""

    def start(self, totals: dict[str, int], done: dict[str, int]) -> None: ...

    def advance(self, stage: str, outcome: str = "ok") -> None:
        """`outcome`: "ok", "failed" (request failed after retries) or "unparseable"."""

    def stop(self) -> None: ...

    def batch_state(self, stage: str, role: str, state: str | None) -> None:
        """What the provider batches of one role ("model" or a judge) doing a stage's work
        are doing ("batch batch_0001 in_progress 120/500"), or None when none is open."""
