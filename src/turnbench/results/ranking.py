"""Ranking the models of several finished runs with Bradley-Terry ratings.

Single-grading runs are compared turn by turn (the higher score wins the turn, equal scores
tie); pairwise runs contribute their combined verdicts. All runs must share the benchmark
and the judge: ratings from different judges are not comparable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from turnbench.errors import UserError
from turnbench.journal.config import RunConfig, load_config
from turnbench.journal.runlog import LOG_NAME, read_records, record_problem
from turnbench.judging.pairwise import logged_pairs
from turnbench.record_keys import record_key
from turnbench.stats.ratings import LEVEL, RESAMPLES, SEED, Battle, bradley_terry, score_battles
from turnbench.types import ConfigRecord, JudgmentRecord, LogRecord


def _load(path: Path) -> tuple[RunConfig, list[LogRecord]]:
    if not (path / LOG_NAME).is_file():
        raise UserError(f"{path}: not a turnbench run directory (no {LOG_NAME})")
    records, _ = read_records(path / LOG_NAME)
    configs = [r for r in records if isinstance(r, ConfigRecord)]
    if not configs:
        raise UserError(f"{path}: the run log has no configuration record")
    return load_config(configs[-1].config, configs[-1].schema_version), records


def rank_runs(
    paths: list[Path], *, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> dict[str, Any]:
    loaded = [(path, *_load(path)) for path in paths]
    first_path, first, _ = loaded[0]
    for path, config, _ in loaded[1:]:
        for field in ("benchmark", "judge"):
            if getattr(config, field) != getattr(first, field):
                raise UserError(
                    f"{path}: {field} {getattr(config, field)} differs from {first_path} "
                    f"({getattr(first, field)}); only runs with the same {field} can be ranked "
                    "together"
                )
    kinds = {config.judging == "single" for _, config, _ in loaded}
    if len(kinds) > 1:
        raise UserError("mix of single-grading and pairwise runs; rank one kind at a time")
    single = kinds == {True}
    owner: dict[str, Path] = {}
    scores: dict[tuple[str, Any, int], float] = {}
    battles: list[Battle] = []
    seen: set[tuple[Any, ...]] = set()
    duplicates = 0
    for path, config, records in loaded:
        models = [m for m in ([config.model] if config.mode == "run" else config.models) if m]
        for model in models:
            if model in owner and single:
                raise UserError(f"model {model} is in both {owner[model]} and {path}")
            owner[model] = path
        if single:
            latest: dict[str, JudgmentRecord] = {}
            for record in records:
                if (
                    isinstance(record, JudgmentRecord)
                    and record.judge == config.judge
                    and record.model in models
                    and not record.is_game
                    and record.criterion is None
                    and record.repeat == 0
                    and record.arm is None
                    and record_problem(record) is None
                ):
                    latest[record_key(record)] = record
            for record in latest.values():
                if record.status == "scored" and record.score is not None:
                    scores[(record.model, record.sample_id, record.turn)] = record.score
        else:
            for pair in logged_pairs(records, config.judge):
                comparison = (pair.sample_id, pair.turn, *sorted((pair.model_1, pair.model_2)))
                if comparison in seen:  # judged again in another run: count it once
                    duplicates += 1
                    continue
                seen.add(comparison)
                battles.append(
                    Battle(
                        pair.sample_id, pair.model_1, pair.model_2, pair.outcome.points_of_model_1
                    )
                )
    names = list(owner)
    if single:
        battles = score_battles(scores, names)
    if len(names) < 2:
        raise UserError(f"ranking needs at least 2 models; found {', '.join(names) or 'none'}")
    return {
        "benchmark": first.benchmark,
        "judge": first.judge,
        "source": "single-grading score comparisons per turn" if single else "pairwise verdicts",
        "runs": [str(path) for path in paths],
        "duplicates_skipped": duplicates,
        "ratings": bradley_terry(
            battles, models=names, resamples=resamples, seed=seed, level=level
        ),
    }
