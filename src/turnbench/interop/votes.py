"""Votes from a turnbench pairwise run, for `turnbench agreement --run`."""

from __future__ import annotations

from pathlib import Path

from turnbench.errors import UserError
from turnbench.journal.config import load_config
from turnbench.journal.runlog import LOG_NAME, read_records
from turnbench.judging.pairwise import logged_pairs
from turnbench.stats.vote_agreement import Vote, make_vote
from turnbench.types import ConfigRecord


def run_votes(run_dir: Path) -> list[Vote]:
    """The combined verdicts of a turnbench pairwise run, as votes of its judge spec."""
    if not (run_dir / LOG_NAME).is_file():
        raise UserError(f"--run {run_dir}: not a turnbench run directory (no {LOG_NAME})")
    records, _ = read_records(run_dir / LOG_NAME)
    configs = [r for r in records if isinstance(r, ConfigRecord)]
    if not configs:
        raise UserError(f"--run {run_dir}: the run log has no configuration record")
    config = load_config(configs[-1].config, configs[-1].schema_version)
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
