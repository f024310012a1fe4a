"""Votes from a turnbench pairwise run (and a single-grading run's scores), for
`turnbench agreement --run`."""

from __future__ import annotations

from pathlib import Path

from turnbench.errors import UserError
from turnbench.journal.config import RunConfig, load_config
from turnbench.journal.runlog import LOG_NAME, read_records
from turnbench.judging.pairwise import logged_pairs
from turnbench.stats.vote_agreement import Score, Vote, make_vote
from turnbench.store.rundir import load_run
from turnbench.types import ConfigRecord, LogRecord


def run_judging(run_dir: Path) -> str:
    """How the run judged: `single`, `pairwise` or `pairwise-all` (from its last config)."""
    return _config(run_dir)[1].judging


def run_scores(run_dir: Path) -> list[Score]:
    """The single-grading scores of a run's (first) judge, one per model and judged turn,
    for agreement with human 1-10 scores."""
    _, config = _config(run_dir)
    if config.judging != "single":
        raise UserError(f"--run {run_dir}: a pairwise run; human scores need a single-grading run")
    run = load_run(run_dir)
    return [
        Score(config.judge, sample_id, entry.model, turn, done.score)
        for entry in run.entries()
        for (sample_id, turn), done in entry.judgments.items()
        if done.status == "scored" and done.score is not None
    ]


def _config(run_dir: Path) -> tuple[list[LogRecord], RunConfig]:
    if not (run_dir / LOG_NAME).is_file():
        raise UserError(f"--run {run_dir}: not a turnbench run directory (no {LOG_NAME})")
    records, _ = read_records(run_dir / LOG_NAME)
    configs = [r for r in records if isinstance(r, ConfigRecord)]
    if not configs:
        raise UserError(f"--run {run_dir}: the run log has no configuration record")
    config = load_config(configs[-1].config, configs[-1].schema_version)
    return records, config


def run_votes(run_dir: Path) -> list[Vote]:
    """The combined verdicts of a turnbench pairwise run, as votes of its judge spec."""
    records, config = _config(run_dir)
    if config.judging == "single":
        raise UserError(
            f"--run {run_dir}: a single-grading run; agreement needs a pairwise run "
            "(turnbench judge --mode pairwise-all ...)"
        )
    winners = {"model_1": "model_a", "model_2": "model_b", "tie": "tie"}
    return [
        make_vote(
            config.judge,
            pair.sample_id,
            pair.model_1,
            pair.model_2,
            pair.turn,
            winners[pair.outcome.winner],
        )
        for pair in logged_pairs(records, config.judge)
    ]
