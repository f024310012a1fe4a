"""Live progress bars with ETA and counts of retries, failures and tokens."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from turnbench.backends.base import Backend
from turnbench.runner import Progress as ProgressSink


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


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
            TextColumn("{task.fields[info]}"),
            console=console,
            refresh_per_second=4,
            transient=False,
        )
        self._tasks: dict[str, int] = {}

    def start(self, totals: dict[str, int], done: dict[str, int]) -> None:
        for stage, total in totals.items():
            if total:
                self._outcomes[stage] = {"failed": 0, "unparseable": 0}
                self._tasks[stage] = self._progress.add_task(
                    stage, total=total, completed=done.get(stage, 0), info=self._info(stage)
                )
        self._progress.start()

    def _info(self, stage: str) -> str:
        backend = self._backends.get(stage)
        if backend is None:
            return ""
        stats = backend.stats
        tokens = stats.usage.prompt_tokens + stats.usage.completion_tokens
        outcomes = self._outcomes.get(stage, {})
        parts = [f"retries {stats.retries}", f"failed {outcomes.get('failed', 0)}"]
        if stage == "judgments":
            parts.append(f"unparseable {outcomes.get('unparseable', 0)}")
        parts.append(f"tokens {_tokens(tokens)}")
        return " · ".join(parts)

    def advance(self, stage: str, outcome: str = "ok") -> None:
        task = self._tasks.get(stage)
        if task is None:
            return
        counts = self._outcomes.setdefault(stage, {})
        if outcome != "ok":
            counts[outcome] = counts.get(outcome, 0) + 1
        self._progress.update(task, advance=1, info=self._info(stage))

    def stop(self) -> None:
        self._progress.stop()
