"""One invocation's life on a run directory, the same for every command that writes a run
(`run`, `judge`, `import`): the directory opened and locked, the run's identity checked
against what it was made with, this invocation's config recorded (its time the invocation's
start); at the end its end record, and results.json rebuilt from the log and written.

Why one module: the rules of a run directory (refuse a resume that would mix incompatible
records, record every invocation, rebuild results from the log, never update them in place)
hold for an imported run as for a run, and were written twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from turnbench.journal.config import LOG_SCHEMA_VERSION, RunConfig, check_resume, load_config
from turnbench.journal.runlog import RunLog, config_record
from turnbench.results.shapes import ResultsModel, results_json
from turnbench.results.usage import Timing, timing
from turnbench.store.resultsfile import write_results

Warn = Callable[[str], None]


def record_config(
    log: RunLog,
    config: RunConfig,
    started: float,
    *,
    allow_new_judge: bool = False,
    check: Callable[[RunLog], None] | None = None,
) -> None:
    """Check the run's identity (and `check`, the caller's own refusal of what the log
    holds), then record this invocation's configuration (its `ts` is the invocation's
    start): nothing is written to a run that is refused."""
    previous = log.configs()
    if previous:
        last = previous[-1]
        old = load_config(last.config, last.schema_version, str(log.path))
        check_resume(old, config, allow_new_judge=allow_new_judge)
    if check is not None:
        check(log)
    log.append(config_record(started, config.model_dump(mode="json"), LOG_SCHEMA_VERSION))


@contextmanager
def invocation(
    out: Path,
    config: RunConfig,
    warn: Warn,
    *,
    started: float | None = None,
    allow_new_judge: bool = False,
    check: Callable[[RunLog], None] | None = None,
) -> Iterator[RunLog]:
    """The run directory `out` opened for this invocation, its config recorded (`check`: as
    for `record_config`)."""
    started = time.time() if started is None else started
    with RunLog(out, warn=warn) as log:
        record_config(log, config, started, allow_new_judge=allow_new_judge, check=check)
        yield log


def finish(
    log: RunLog, status: str, build: Callable[[Timing], ResultsModel]
) -> tuple[ResultsModel, dict[str, Any]]:
    """End the invocation (`status`), then rebuild its results from the log (`build`, given
    the run's timing) and write results.json; the typed results and what was written."""
    finished = log.end_invocation(status)
    log.sync()
    typed = build(timing(log.index, finished))
    results = results_json(typed)
    write_results(log.directory, results)
    return typed, results
