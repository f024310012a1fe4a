"""Reading finished run directories for reports, comparisons and exports.

A run directory holds `results.json` (the summary rebuilt from the log) and `log.jsonl` (the
truth). Readers here never lock or modify the directory, so a report can be made while a run
is still going: `read_records` ignores a torn last line. Sample ids are compared as strings
everywhere in this module, because the log keeps them as JSON numbers or strings depending
on the benchmark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from turnbench.errors import UserError
from turnbench.results import RESULTS_NAME
from turnbench.runlog import LOG_NAME, open_failures, read_records
from turnbench.textio import describe_validation_error, read_json
from turnbench.types import AnswerRecord, FailureRecord, JudgmentRecord, LogRecord

PAIRWISE_MODES = frozenset({"pairwise", "pairwise-all"})
GROUP_META_KEYS = ("category", "task")

Warn = Callable[[str], None]
TurnKey = tuple[str, int]  # (sample id as text, turn)


class ResultsHeader(BaseModel):
    """The keys of results.json every reader relies on; everything else is optional."""

    model_config = ConfigDict(extra="allow")

    benchmark: str
    judge: str
    complete: bool | None = None
    model: str | None = None
    models: dict[str, dict[str, Any]] | None = None
    provenance: dict[str, Any] = {}


def sample_sort_key(sample_id: str) -> tuple[int, int | str]:
    """Numeric ids in numeric order, then other ids alphabetically."""
    return (0, int(sample_id)) if sample_id.lstrip("-").isdigit() else (1, sample_id)


def parse_key(key: str) -> tuple[str, str, str, int] | None:
    """(stage, model, sample id, turn) of an answer or single-judgment log key, else None.

    Keys are `answer|MODEL|SAMPLE|TURN` and `judgment|JUDGE|MODEL|SAMPLE|TURN`.
    """
    parts = key.split("|")
    if len(parts) < 4 or not parts[-1].isdigit():
        return None
    if parts[0] == "answer":
        return "answer", "|".join(parts[1:-2]), parts[-2], int(parts[-1])
    if parts[0] == "judgment" and len(parts) >= 5:
        return "judgment", "|".join(parts[2:-2]), parts[-2], int(parts[-1])
    return None


def record_group(meta: dict[str, Any]) -> str | None:
    for name in GROUP_META_KEYS:
        value = meta.get(name)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass
class Entry:
    """One model of one run: what a summary row, a chart series or a browser column shows."""

    run: Run
    model: str
    results: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.run.label}: {self.model}"

    @cached_property
    def answers(self) -> dict[TurnKey, AnswerRecord]:
        latest: dict[TurnKey, AnswerRecord] = {}
        for record in self.run.records:
            if isinstance(record, AnswerRecord) and record.model == self.model:
                latest[(str(record.sample_id), record.turn)] = record
        return latest

    @cached_property
    def judgments(self) -> dict[TurnKey, JudgmentRecord]:
        """Latest single-grading judgment per turn by the run's judge."""
        latest: dict[TurnKey, JudgmentRecord] = {}
        for record in self.run.records:
            if (
                isinstance(record, JudgmentRecord)
                and record.judge == self.run.judge
                and record.model == self.model
                and record.verdict is None
            ):
                latest[(str(record.sample_id), record.turn)] = record
        return latest

    @cached_property
    def open_failures(self) -> dict[TurnKey, FailureRecord]:
        """Requests of this model that still failed after their retries (not final)."""
        found: dict[TurnKey, FailureRecord] = {}
        for key, failure in self.run.open_failures.items():
            parsed = parse_key(key)
            if parsed is None or parsed[1] != self.model:
                continue
            if parsed[0] == "judgment" and not key.startswith(f"judgment|{self.run.judge}|"):
                continue
            found[(parsed[2], parsed[3])] = failure
        return found

    def groups(self) -> dict[str, str]:
        """sample id -> category or task, from the records' meta."""
        found: dict[str, str] = {}
        for (sample, _), record in [*self.answers.items(), *self.judgments.items()]:
            group = record_group(record.meta)
            if group is not None:
                found.setdefault(sample, group)
        for (sample, _), failure in self.open_failures.items():
            group = record_group(failure.meta)
            if group is not None:
                found.setdefault(sample, group)
        return found


@dataclass
class Run:
    path: Path
    label: str
    results: dict[str, Any]
    records: list[LogRecord]
    has_log: bool = True
    warnings: list[str] = field(default_factory=list)

    @property
    def benchmark(self) -> str:
        return str(self.results["benchmark"])

    @property
    def judge(self) -> str:
        return str(self.results["judge"])

    @property
    def provenance(self) -> dict[str, Any]:
        value = self.results.get("provenance")
        return value if isinstance(value, dict) else {}

    @property
    def judge_only(self) -> bool:
        return isinstance(self.results.get("models"), dict)

    @property
    def judging(self) -> str:
        mode = self.provenance.get("judging")
        if isinstance(mode, str):
            return mode
        models = self.results.get("models") or {}
        if any("win_rate" in m for m in models.values() if isinstance(m, dict)):
            return "pairwise"
        return "single"

    @property
    def pairwise(self) -> bool:
        return self.judging in PAIRWISE_MODES

    @property
    def model_names(self) -> list[str]:
        """Models with results; a pairwise run's baseline (which has no row) comes last."""
        if self.judge_only:
            names = list(self.results["models"])
            baseline = self.results.get("baseline")
            if self.pairwise and isinstance(baseline, str) and baseline not in names:
                names.append(baseline)
            return names
        model = self.results.get("model")
        return [str(model)] if model else []

    def model_results(self, name: str) -> dict[str, Any]:
        if self.judge_only:
            value = self.results["models"].get(name)
            return value if isinstance(value, dict) else {"model": name}
        return self.results

    def entries(self) -> list[Entry]:
        return [Entry(self, name, self.model_results(name)) for name in self.model_names]

    @cached_property
    def open_failures(self) -> dict[str, FailureRecord]:
        return open_failures(self.records)


def read_results(directory: Path) -> dict[str, Any]:
    path = directory / RESULTS_NAME
    if not path.is_file():
        raise UserError(
            f"{directory}: no {RESULTS_NAME} here; is this a turnbench run directory? "
            "(results.json is written at the end of every `turnbench run` or `turnbench judge`; "
            "re-run the same command to rebuild it)"
        )
    value = read_json(path)
    if not isinstance(value, dict):
        raise UserError(f"{path}: expected a JSON object")
    try:
        ResultsHeader.model_validate(value)
    except ValidationError as error:
        raise UserError(
            f"{path}: not a turnbench results file ({describe_validation_error(error)})"
        ) from None
    return value


def load_run(
    directory: Path, *, label: str | None = None, require_log: bool = True, warn: Warn | None = None
) -> Run:
    """A run directory, validated; a missing log is an error unless `require_log` is off."""
    if not directory.exists():
        raise UserError(f"{directory}: no such run directory")
    if not directory.is_dir():
        raise UserError(f"{directory}: not a directory (expected a run directory)")
    results = read_results(directory)
    log_path = directory / LOG_NAME
    run = Run(directory, label or directory.name or str(directory), results, [], has_log=False)
    if log_path.is_file():
        run.records, _ = read_records(log_path, warn)
        run.has_log = True
    elif require_log:
        raise UserError(f"{directory}: no {LOG_NAME} here (the run log is needed for this)")
    else:
        run.warnings.append(f"{directory}: no {LOG_NAME}; answers and judgments cannot be shown")
    return run


def unique_labels(paths: Iterable[Path]) -> list[str]:
    """Short labels for runs: the folder name, disambiguated by position when repeated."""
    items = list(paths)
    names = [p.resolve().name or str(p) for p in items]
    labels = []
    for index, name in enumerate(names):
        labels.append(name if names.count(name) == 1 else f"{name} #{index + 1}")
    return labels


def load_runs(
    directories: list[Path], *, require_log: bool = True, warn: Warn | None = None
) -> list[Run]:
    return [
        load_run(directory, label=label, require_log=require_log, warn=warn)
        for directory, label in zip(directories, unique_labels(directories), strict=True)
    ]


def select_entry(run: Run, model: str | None, flag: str) -> Entry:
    """The model of `run` to use: the one named, or the only one."""
    names = run.model_names
    if not names:
        raise UserError(f"{run.path}: results.json names no model")
    if model is None:
        if len(names) > 1:
            raise UserError(
                f"{run.path} holds {len(names)} models ({', '.join(names)}); "
                f"choose one with {flag} NAME"
            )
        model = names[0]
    if model not in names:
        raise UserError(f"{flag} {model!r}: {run.path} holds only {', '.join(names)}")
    return Entry(run, model, run.model_results(model))
