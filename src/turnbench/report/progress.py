"""Live progress bars with ETA and counts of retries, failures and tokens.

The info column is rendered from the backends' live counters at every refresh (4 times a
second), not only when an item finishes: while every request is being retried nothing
finishes, and that is exactly when the user needs to see "retrying 8, last: HTTP 503".
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from turnbench.backends.base import Backend
from turnbench.engine.progress import Progress as ProgressSink


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(_CONTROL.sub(" ", text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _InfoColumn(ProgressColumn):
    """Reads the counters when rich refreshes (a plain Text: server text is never markup)."""

    def __init__(self, owner: LiveProgress) -> None:
        super().__init__()
        self._owner = owner

    def render(self, task: Task) -> Text:
        return Text(self._owner._info(str(task.fields.get("stage", task.description))))


class LiveProgress(ProgressSink):
    def __init__(self, console: Console, backends: dict[str, Backend]) -> None:
        self._backends = backends  # stage -> backend doing that stage's requests
        self._outcomes: dict[str, dict[str, int]] = {}
        self._progress = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            _InfoColumn(self),
            console=console,
            refresh_per_second=4,
            transient=False,
        )
        self._tasks: dict[str, int] = {}
        self._batches: dict[str, dict[str, str]] = {}  # stage -> role -> batch state

    def batch_state(self, stage: str, role: str, state: str | None) -> None:
        states = self._batches.setdefault(stage, {})
        if state is None:
            states.pop(role, None)
        else:
            states[role] = state

    def start(self, totals: dict[str, int], done: dict[str, int]) -> None:
        for stage, total in totals.items():
            if total:
                self._outcomes[stage] = {"failed": 0, "unparseable": 0}
                self._tasks[stage] = self._progress.add_task(
                    stage, total=total, completed=done.get(stage, 0), stage=stage
                )
        self._progress.start()

    def _info(self, stage: str) -> str:
        backend = self._backends.get(stage)
        if backend is None:
            return ""
        stats = backend.stats
        tokens = stats.usage.prompt_tokens + stats.usage.completion_tokens
        outcomes = self._outcomes.get(stage, {})
        parts = [f"retries {stats.retries}"]
        retrying = getattr(stats, "retrying", 0)
        if retrying:
            last = getattr(stats, "last_error", None)
            parts.append(f"retrying {retrying}" + (f" (last: {_short(last)})" if last else ""))
        parts.append(f"failed {outcomes.get('failed', 0)}")
        if stage == "judgments":
            parts.append(f"unparseable {outcomes.get('unparseable', 0)}")
        parts.append(f"tokens {_tokens(tokens)}")
        batches = self._batches.get(stage)
        if batches:
            parts.append(_short("; ".join(batches.values()), 90))
        return " · ".join(parts)

    def advance(self, stage: str, outcome: str = "ok") -> None:
        task = self._tasks.get(stage)
        if task is None:
            return
        counts = self._outcomes.setdefault(stage, {})
        if outcome != "ok":
            counts[outcome] = counts.get(outcome, 0) + 1
        self._progress.update(task, advance=1)

    def stop(self) -> None:
        self._progress.stop()


class BatchLines(ProgressSink):
    """Without live bars (output not a terminal): one line whenever a provider batch changes
    state, so a log file shows what the batches did."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._shown: dict[tuple[str, str], str | None] = {}

    def batch_state(self, stage: str, role: str, state: str | None) -> None:
        if self._shown.get((stage, role)) == state:
            return
        self._shown[(stage, role)] = state
        if state is not None:
            self._console.print(Text(f"{stage} ({_short(role)}): {_short(state, 200)}"))
