"""How the report reads a run's results: their typed models (`Run.typed`, `Entry.typed`).

A pairwise run is told apart by its type (PairwiseResults); a model's benchmark tables
(`by_category`, `by_task_turn`, ...) are the extra fields of its ModelResults, named by
what the benchmark's ReportSpec declares.
"""

from __future__ import annotations

from typing import Any

from turnbench.results.shapes import ModelResults, PairwiseResults
from turnbench.store.rundir import Entry, Run


def pairwise_of(run: Run) -> PairwiseResults | None:
    """The run's results if it is a pairwise run, else None."""
    results = run.typed
    return results if isinstance(results, PairwiseResults) else None


def is_pairwise(run: Run) -> bool:
    return isinstance(run.typed, PairwiseResults)


def single(entries: list[Entry]) -> list[Entry]:
    """The entries of single-grading runs (a score per turn), in order."""
    return [entry for entry in entries if not is_pairwise(entry.run)]


def model_results(entry: Entry) -> ModelResults:
    """The typed results of a model of a single-grading run."""
    typed = entry.typed
    if typed is None:
        raise ValueError(f"{entry.label}: a model of a pairwise run has no results of its own")
    return typed


def table(entry: Entry, name: str) -> Any:
    """A model's field or benchmark table `name` (None when it has none)."""
    return getattr(model_results(entry), name, None)


def number(entry: Entry, name: str, *keys: str) -> float | None:
    """A number of a model's results: the field `name`, then `keys` into its table."""
    value = table(entry, name)
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None
